#!/usr/bin/env bash
# Installs every system package pgolab needs on Debian 12 (bookworm).
# Idempotent: safe to run again. Needs root (or sudo).
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

# Two setups at once (a CI run started while the proof queue sets up) failed on apt's locks
# ("Could not get lock /var/lib/dpkg/lock-frontend"): the second now waits for the first. apt
# itself waits for any other dpkg user (DPkg::Lock::Timeout; it does not cover `apt-get update`'s
# list lock, which only our own setups take here).
LOCK=/tmp/pgolab-setup-system.lock
touch "$LOCK" 2>/dev/null || true
exec 9<"$LOCK"
if ! flock -w 1800 9; then
  echo "pgolab: another pgolab setup has held $LOCK for 30 minutes; see which with: fuser -v $LOCK" >&2
  exit 1
fi
APT=($SUDO apt-get -o DPkg::Lock::Timeout=600)

# apt-get source / build-dep need deb-src entries; add them for the suites the
# machine already uses (main suite and updates; the security suite's sources
# are not served here, so it is left out on purpose).
SRC_LIST=/etc/apt/sources.list.d/pgolab-src.sources
if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/ ; then
  echo "pgolab: adding deb-src entry $SRC_LIST"
  $SUDO tee "$SRC_LIST" >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
"${APT[@]}" update -qq

PACKAGES=(
  build-essential cmake ninja-build bison flex pkg-config ccache dpkg-dev
  gcc g++ binutils
  clang-16 llvm-16 lld-16 bolt-16 libclang-rt-16-dev
  clang-19 llvm-19 lld-19 bolt-19 libclang-rt-19-dev   # the _clang19 axis
  libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev   # the allocator axis
  sysbench mariadb-server mariadb-client
  mariadb-plugin-rocksdb   # MyRocks for Debian's mariadbd (bench --engine rocksdb)
  postgresql-15 postgresql-client-15
  valgrind procps xz-utils
  sqlite3   # the proofs' run.sh files read their stores with it (docs/results/*/run.sh)
  # pgolab package: a tarball's rpath; the .deb's throwaway Debian root in the tests (and iproute2's
  # ip, which brings its network namespace's loopback up)
  patchelf mmdebstrap iproute2
  # MySQL builds use these system libraries instead of their bundled copies (targets/mysql.py).
  libssl-dev zlib1g-dev libzstd-dev liblz4-dev libicu-dev libedit-dev
  libprotobuf-dev libprotoc-dev protobuf-compiler libnuma-dev libcurl4-openssl-dev libldap-dev
)
"${APT[@]}" install -y -qq --no-install-recommends "${PACKAGES[@]}"

# Build dependencies of the two source packages pgolab builds.
"${APT[@]}" build-dep -y -qq mariadb postgresql-15

# PostgreSQL refuses to run as root: pgolab runs it as this unprivileged user.
if ! id pgolab >/dev/null 2>&1; then
  $SUDO useradd --system --no-create-home --shell /usr/sbin/nologin pgolab
fi

# The packaged servers must not run as services: pgolab starts its own
# private instances; a system instance would only take CPU from benchmarks.
for svc in mariadb postgresql; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    $SUDO systemctl stop "$svc" || true
  fi
  if command -v service >/dev/null 2>&1; then $SUDO service "$svc" stop >/dev/null 2>&1 || true; fi
done
echo "pgolab: system packages installed"
