#!/bin/sh
# halserve container entrypoint: seed the data directory with the demo data on first start,
# then exec the server so that node is PID 1 and receives the stop signal (SIGTERM) itself, with
# the V8 flag of src/cli.ts's first line (why: the comment under it).
#
# Variables (besides the server's own HALSERVE_*):
#   HALSERVE_DATA  the data directory (the image sets /data, a volume)
#   HALSERVE_SEED  0 (or false, no, off) to start with an empty data directory instead of the demo data
set -eu

# `halserve import|export` move data between a directory and PostgreSQL: no server, no seeding.
case "${1:-}" in
  import | export) exec node --min-semi-space-size=16 /app/dist/cli.js "$@" ;;
esac

data="${HALSERVE_DATA:-/data}"
demo=/app/demo

if [ ! -d "$data" ] || [ ! -w "$data" ]; then
  echo "halserve: data directory $data is not writable by uid $(id -u); mount a named volume there (-v halserve-data:$data) or chown the mounted directory to $(id -u):$(id -g)" >&2
  exit 1
fi

has_store() {
  for f in "$1"/*.jsonl; do
    [ -e "$f" ] && return 0
  done
  return 1
}

# HALSERVE_SEED takes the words the server takes for its own switches (src/config.ts), so that
# HALSERVE_SEED=false means what HALSERVE_REPAIR=false does; anything else stops the start.
case "$(printf '%s' "${HALSERVE_SEED:-1}" | tr '[:upper:]' '[:lower:]')" in
  1 | true | yes | on) seed=1 ;;
  0 | false | no | off) seed=0 ;;
  *)
    echo "halserve: HALSERVE_SEED must be 1 or 0 (true or false), not \"$HALSERVE_SEED\"" >&2
    exit 1
    ;;
esac

# Only a data directory that holds no resource yet is seeded: an existing store is never
# touched, so a new image on the same volume keeps its data. A file already there (a schema
# the operator placed, say) is kept too.
if [ "$seed" = 1 ] && ! has_store "$data"; then
  for f in "$demo"/*; do
    [ -e "$f" ] || continue
    [ -e "$data/${f##*/}" ] || cp -R "$f" "$data/"
  done
  echo "halserve: seeded $data with the demo data" >&2
fi

exec node --min-semi-space-size=16 /app/dist/cli.js "$@"
