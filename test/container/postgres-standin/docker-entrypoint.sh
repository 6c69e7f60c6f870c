#!/bin/sh
# The entrypoint of the container test's stand-in for the official `postgres:15` image (made by
# test/container/run.sh from Debian's postgresql-15): what compose.yaml relies on, no more.
#
#   POSTGRES_PASSWORD  the superuser's password (required, as in the official image)
#   POSTGRES_USER      the superuser's name (default postgres)
#   POSTGRES_DB        a database created on the first start (default: POSTGRES_USER)
#   PGDATA             the cluster (default /var/lib/postgresql/data, the volume)
#
# On an empty data directory: initdb with that superuser, connections from any address with a
# password (scram-sha-256), the database created. An existing cluster is started as it is.
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
export PGDATA

if [ "$(id -u)" = 0 ]; then
  # The volume is created owned by root: hand it, and the socket directory, to postgres.
  mkdir -p "$PGDATA" /var/run/postgresql
  chown postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "postgres stand-in: POSTGRES_PASSWORD must be set for a new cluster" >&2
    exit 1
  fi
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [ "$db" != postgres ]; then
    # The temporary server listens on no address and on a private socket, so that neither the
    # network nor pg_isready (the health check) sees it: healthy means the real server is up.
    sock=$(mktemp -d)
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=$sock" -w start >/dev/null
    echo 'CREATE DATABASE :"db";' | psql -X -q -v ON_ERROR_STOP=1 -h "$sock" -U "$user" -d postgres -v db="$db"
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
    rmdir "$sock"
  fi
  echo "postgres stand-in: new cluster in $PGDATA, superuser $user, database $db" >&2
fi

exec "$@"
