#!/bin/bash
# Issue 35, `pgolab best` on MariaDB 10.11.18 (Debian 12's tree): from the published best build
# (rel_lto_pgo_use_clang, LLVM 16), one axis at a time among LLVM 19, machine function splitting,
# hot/cold sections, -fno-plt and BOLT, cost mode on the quick suite at 1 thread (a quarter of the
# events, two servers at once); the winner and the runner-up confirmed in QPS (2 instances of 3 paired
# 2-second blocks per test) against the start and Debian's mariadbd, the issue's targets: >= 1.45x
# QPS and >= 1.6x server CPU per query against Debian's binary, >= 1.08x estimated cycles against the
# start. -march=native is left out (valgrind 3.19 cannot run it on a CPU with AVX-512, most machines
# here) and so are the axes that each need a training of their own beyond LLVM 19 (_cs, _order) or
# that the PostgreSQL search found inconclusive (the allocators).
# Estimated, not run: round 1 is two PGO cycles (the start, LLVM 19), three optimized builds reading
# the start's profile and one BOLT pass, about three hours with the machine to itself; a round is a
# stored matrix run named after its binaries, so running this again on the same machine goes on where
# it stopped, and a new machine given the committed store reads every finished round from it and
# builds only from the last one on. Its PGO builds compile from the profiles kept in profiles/ (commit
# them with the store), and its BOLT build from BOLT's profile kept there, so an unfinished round's
# builds are the same binaries there (where the builds are reproducible) and its run goes on.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11.18)
BEST=($P best "$S" --axes clang19,split,hotcold,noplt,bolt --suite quick --cost-jobs 2 --cost-scale 0.25
      --seconds 2 --instances 2 --blocks 3 --binary distro=/usr/sbin/mariadbd
      --run mariadb-best --store $OUT/results.sqlite --out $OUT/report --profiles $OUT/profiles)
# Done once the confirmation's run file is committed: on a new machine the same command would build the
# winner, the runner-up and the start again and measure them in a run of that machine's own.
if f=$(piece_file confirm.run.gz); then echo "best: done ($f), skipped"; exit 0; fi
# The rounds (builds and cost), then the same command: the rounds are read back from the store and the
# QPS confirmation runs (QPS wants the machine to itself: run it from the queue, or pause the queue).
"${BEST[@]}" --no-confirm </dev/null > $OUT/rounds.txt
"${BEST[@]}" </dev/null > $OUT/report.txt
export_newest_run mariadb-best-confirm "$OUT/confirm.run.gz"
$P builds --markdown --server mariadb-10.11.18 > $OUT/builds.md
