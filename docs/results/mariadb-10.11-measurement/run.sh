#!/bin/bash
# The measurement proof run (issue 8), in the order it runs. Every step resumes if run again:
# builds skip finished phases, a bench run with the same --run skips stored samples (and refuses
# to continue a run whose options, host or binaries differ).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=docs/results/mariadb-10.11-measurement
P=.venv/bin/pgolab
bash scripts/setup.sh

# 1. A/A attempts: Debian's mariadbd against itself, quick suite, one idea at a time.
#    Stored in aa.sqlite; each report in aa-<name>/.
aa() {
  local name=$1; shift
  $P bench --base a --binary a=/usr/sbin/mariadbd --binary b=/usr/sbin/mariadbd --suite quick --measure qps \
    --run "aa-$name" --store $OUT/aa.sqlite --out "$OUT/aa-$name" "$@" > "$OUT/aa-$name.txt"
}
aa unpinned-1-instance --no-pin --instances 1 --blocks 8 --seconds 2
aa pinned-1-instance            --instances 1 --blocks 8 --seconds 2
aa pinned-2-instances           --instances 2 --blocks 4 --seconds 2
aa target-ci-3pct               --instances 2 --blocks 4 --seconds 2 --target-ci 3% --max-instances 6 --pair-budget 120

# 2. The builds (each ends with a smoke test).
S=$($P source mariadb --version 10.11.18)
for v in rel_o2nofp rel_lto rel_pgo_use rel_lto_pgo_use_clang; do
  $P build "$S" --variant "$v"
done
BASE=$(ls -d /var/cache/pgolab/builds/mariadb-10.11.18-*/rel_o2nofp/final/install/bin/mariadbd | head -1)

# 2b. Cost-mode repeatability check (README section 1): the -O2 build, an A/A copy of it, Debian's.
$P bench --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --binary aa="$BASE" --measure cost \
  --suite quick --cost-scale 0.25 --table-size 10000 --run clicheck --store $OUT/cost-check.sqlite
$P report clicheck --store $OUT/cost-check.sqlite --out $OUT/cost-check

# 3. Cost mode, quick suite, 4 targets: the time it takes, and repeats of the same binary
#    (as run: the -O2 build, an A/A copy of it, Debian's mariadbd twice; 659 s).
$P bench --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --binary aa="$BASE" \
  --binary distro2=/usr/sbin/mariadbd --suite quick --measure cost --run cost-quick-4 \
  --store $OUT/results.sqlite --out $OUT/cost-quick-4 > $OUT/cost-quick-4.txt

# 4. The proof: four builds, Debian's mariadbd and an A/A copy of the base, both measures, full suite.
$P bench --base rel_o2nofp --variant rel_lto --variant rel_pgo_use --variant rel_lto_pgo_use_clang \
  --source "$S" --binary distro=/usr/sbin/mariadbd --binary aa="$BASE" --suite full --measure cost,qps \
  --instances 2 --blocks 4 --seconds 3 --target-ci 3% --max-instances 4 --pair-budget 120 \
  --run full-both --store $OUT/results.sqlite --out $OUT/full-both > $OUT/full-both.txt
