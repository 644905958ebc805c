#!/bin/bash
# Issue 32, build-to-build variation on MariaDB 10.11.18 (Debian 12's tree), in two pieces of one
# session each: rel_o2nofp (gcc -O2) and one PGO variant, two replicates each (`--replicates 2`:
# replicate 2 trains with seed 2 and links with layout seed 2; replicate 1 is the usual build), and
# Debian's mariadbd. PROOF_STEPS picks the piece: `clang` (the default: rel_lto_pgo_use_clang, clang
# PGO+ThinLTO) or `gcc` (rel_pgo_use). A replicate is a build of its own (PostgreSQL's -O2 replicates
# took the same CPU minutes as replicate 1: ../postgresql-15-replicates/builds.md); per piece: two -O2
# builds, one instrumented build, two trainings and two optimized compiles, then the measurement:
# about two hours with the machine to itself (estimated from ../mariadb-10.11-workloads/builds.md, not
# run). Two replicates, not three, so a piece fits one session on a new machine; PostgreSQL's proof has
# three. One stored run per piece, quick suite, 1 thread: cost (a quarter of the events, two servers
# at once) and QPS (2 instances of 3 paired 2-second blocks), every replicate a target of its own, so
# the report's build replicates table gives each variant's figure over its builds beside replicate 1.
# Resumable; a rebuild (new machine) starts a run of its own.
. "$(dirname "$0")/../proof-env.sh"
case "${PROOF_STEPS:-clang}" in
  clang) V=rel_lto_pgo_use_clang;;
  gcc) V=rel_pgo_use;;
  *) echo "PROOF_STEPS is clang or gcc" >&2; exit 2;;
esac
S=$($P source mariadb --version 10.11)
$P build "$S" --variant rel_o2nofp --variant $V --replicates 2 </dev/null
$P builds --markdown --server mariadb-10.11 > "$OUT/builds.md"
$P bench --base rel_o2nofp --variant $V --replicates 2 --source "$S" \
  --binary distro=/usr/sbin/mariadbd --measure cost,qps --suite quick --instances 2 --blocks 3 --seconds 2 \
  --cost-jobs 2 --cost-scale 0.25 \
  --run "mariadb-replicates-$V-{binaries}" --store "$OUT/results.sqlite" --out "$OUT/report-$V" </dev/null \
  > "$OUT/report-$V.txt"
