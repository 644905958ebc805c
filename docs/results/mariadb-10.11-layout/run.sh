#!/bin/bash
# Issue 35, the profile-driven layout axes on MariaDB 10.11.18 (Debian 12's tree), one process with a
# thread per connection, so _order (function order from the training's temporal profile, its own
# instrumented build) can be trained here, where PostgreSQL refuses it: LLVM 19's clang
# PGO+ThinLTO build rel_lto_pgo_use_clang19 as the base, against _order, _split_hotcold (cold blocks
# split off and hot/cold sections kept apart) and all three. Two stored runs, quick suite, 1 thread,
# each exported to a file as soon as it is done (cost.run.gz, qps.run.gz) and skipped once that file
# is committed: cost (a quarter of the events, two servers at once), then QPS (2 instances of 3 paired
# 2-second blocks per test), with Debian's mariadbd as a reference. A QPS run's name holds its host,
# so a cost run apart is what goes on on another machine. Six builds (two instrumented, two trainings:
# _split_hotcold reads the base's profile, _order_split_hotcold its _order twin's); estimated, not run:
# two to three hours with the machine to itself (MariaDB's clang PGO+LTO build took 35.5 CPU min in
# ../mariadb-10.11-workloads/builds.md). Resumable: run it again. Each training is kept in profiles/ as
# it is merged (commit it with the store): on a new machine the PGO builds compile from those files,
# the same binaries where the builds are reproducible, so the cost run goes on there.
. "$(dirname "$0")/../proof-env.sh"
S=$($P source mariadb --version 10.11.18)
B=rel_lto_pgo_use_clang19
VARIANTS=$B,rel_lto_pgo_use_order_clang19,rel_lto_pgo_use_split_hotcold_clang19,rel_lto_pgo_use_order_split_hotcold_clang19
RAN=
for m in cost qps; do
  if f=$(piece_file $m.run.gz); then echo "layout ($m): done ($f), skipped"; continue; fi
  RAN=1
  if [ $m = cost ]; then HOW=(--cost-jobs 2 --cost-scale 0.25); else HOW=(--seconds 2 --instances 2 --blocks 3); fi
  $P matrix "$S" --variants $VARIANTS --base $B --measure $m --suite quick "${HOW[@]}" --binary distro=/usr/sbin/mariadbd \
    --run "mariadb-layout-$m-{binaries}" --store $OUT/results.sqlite --out $OUT/report-$m --profiles $OUT/profiles \
    </dev/null > $OUT/report-$m.txt
  export_newest_run "mariadb-layout-$m" "$OUT/$m.run.gz"
done
# Only where a run was measured here: a machine that skipped both has none of the builds.
[ -n "$RAN" ] || exit 0
$P builds --markdown --server mariadb-10.11.18 > $OUT/builds.md
"$(dirname "$P")/python" "$PROOF_DIR/../layout-sections.py" "$S" ${VARIANTS//,/ } > $OUT/sections.txt
