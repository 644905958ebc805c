#!/bin/bash
# Issue 33's drop-in package on MariaDB 10.11: rel_lto_pgo_use_clang (clang PGO with ThinLTO, pgolab's
# best published build on MariaDB) configured like Debian's mariadb-server (options read from the
# tree's debian/rules), packaged as a .deb over mariadb-server-core, installed in a throwaway Debian
# 12 root (mmdebstrap), started by Debian's init script, its plugins and engines compared with
# Debian's binary's, removed; then measured against Debian's installed mariadbd (quick suite, cost
# and QPS), and packaged again with that gain in its README. Resumable: run it again after an
# interrupt; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb)
LABEL=rel_lto_pgo_use_clang+debian
$P build "$S" --variant rel_lto_pgo_use_clang --distribution-options </dev/null
$P builds --markdown --server mariadb-10.11.18 > "$OUT/builds.md"
PGOLAB_TEST_HOME=${PGOLAB_HOME:-/var/cache/pgolab} PGOLAB_LONG_TESTS=1 PGOLAB_DEB_BUILD=$LABEL \
  "$(dirname "$P")/python" -m pytest -v -s -p no:cacheprovider tests/test_package_mariadb.py > "$OUT/root-test.txt" 2>&1 || true
$P bench --base distro --binary distro=/usr/sbin/mariadbd --variant "$LABEL" --source "$S" --measure cost,qps \
  --suite quick --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 --cost-scale 0.25 \
  --run 'mariadb-deb-{binaries}' --store "$OUT/results.sqlite" --out "$OUT/report" </dev/null > "$OUT/report.txt"
# The store holds this proof's runs only: its newest is the one just measured.
$P package "$LABEL" --format deb -o "${PGOLAB_HOME:-/var/cache/pgolab}/dist" --store "$OUT/results.sqlite" \
  > "$OUT/package.txt" 2>&1
