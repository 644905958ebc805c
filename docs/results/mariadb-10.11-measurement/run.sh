#!/bin/bash
# The measurement proof run (issue 8), in the order it runs. Every step resumes if run again:
# builds skip finished phases, a bench run with the same --run skips stored samples (and refuses
# to continue a run whose options, host or binaries differ).
#   bash run.sh                      the steps still open: builds full-both-2
#   bash run.sh aa cost-check ...    named steps; aa, aa-idle, cost-check, cost-quick-4 and full-both are the
#                                    commands of finished runs (pgolab refuses to resume them with
#                                    other binaries, e.g. after the builds were made again)
# PROOF_OUT puts the stores and reports in another folder (docs/results/queue.sh keeps them under
# pgolab's home, which outlives a work tree).
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${PROOF_OUT:-docs/results/mariadb-10.11-measurement}
P=${PGOLAB:-.venv/bin/pgolab}
STEPS=${*:-builds full-both-2}
want() { [[ " $STEPS " == *" $1 "* ]]; }
bash scripts/setup.sh >/dev/null
S=$($P source mariadb --version 10.11.18)
base_binary() { ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/mariadb-10.11.18-*/rel_o2nofp/final/install/bin/mariadbd | head -1; }

# 1. A/A attempts: Debian's mariadbd against itself, quick suite, one idea at a time.
#    Stored in aa.sqlite; each report in aa-<name>/.
aa() {
  local name=$1; shift
  $P bench --base a --binary a=/usr/sbin/mariadbd --binary b=/usr/sbin/mariadbd --suite quick --measure qps \
    --run "aa-$name" --store $OUT/aa.sqlite --out "$OUT/aa-$name" "$@" > "$OUT/aa-$name.txt"
}
if want aa; then
  aa unpinned-1-instance --no-pin --instances 1 --blocks 8 --seconds 2
  aa pinned-1-instance            --instances 1 --blocks 8 --seconds 2
  aa pinned-2-instances           --instances 2 --blocks 4 --seconds 2
  aa target-ci-3pct               --instances 2 --blocks 4 --seconds 2 --target-ci 3% --max-instances 6 --pair-budget 120
fi

# 1b. Do idle servers of other targets add noise? The same A/A pair with 1-second slices, alone and
#     beside 4 idle mariadbd (own data directories, pinned to the servers' CPU as pgolab pins its own).
IDLE=()
idle_servers() {   # start N idle servers, their folders in IDLE
  for _ in $(seq "$1"); do
    local d; d=$(mktemp -d /tmp/pgolab-idle.XXXXXX)
    mariadb-install-db --no-defaults --datadir="$d/data" --user=root --skip-test-db >/dev/null
    taskset -c 0 /usr/sbin/mariadbd --no-defaults --datadir="$d/data" --socket="$d/sock" --skip-networking \
      --pid-file="$d/pid" --log-error="$d/error.log" --innodb-buffer-pool-size=512M --user=root >/dev/null 2>&1 &
    IDLE+=("$d")
  done
}
stop_idle() { for d in "${IDLE[@]}"; do kill "$(cat "$d/pid")"; done; wait; rm -rf "${IDLE[@]}"; IDLE=(); }
if want aa-idle; then
  aa 1s-alone               --instances 2 --blocks 4 --seconds 1
  idle_servers 4; sleep 10
  aa 1s-beside-4-idle       --instances 2 --blocks 4 --seconds 1
  stop_idle
fi

# 2. The builds (each ends with a smoke test).
if want builds || want full-both-2; then
  for v in rel_o2nofp rel_lto rel_pgo_use rel_lto_pgo_use_clang; do
    $P build "$S" --variant "$v" </dev/null
  done
fi

# 2b. Cost-mode repeatability check (README section 1): the -O2 build, an A/A copy of it, Debian's.
if want cost-check; then
  $P bench --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --binary aa="$(base_binary)" --measure cost \
    --suite quick --cost-scale 0.25 --table-size 10000 --run clicheck --store $OUT/cost-check.sqlite
  $P report clicheck --store $OUT/cost-check.sqlite --out $OUT/cost-check
fi

# 3. Cost mode, quick suite, 4 targets: the time it takes, and repeats of the same binary
#    (as run: the -O2 build, an A/A copy of it, Debian's mariadbd twice; 659 s).
if want cost-quick-4; then
  $P bench --base rel_o2nofp --binary distro=/usr/sbin/mariadbd --binary aa="$(base_binary)" \
    --binary distro2=/usr/sbin/mariadbd --suite quick --measure cost --run cost-quick-4 \
    --store $OUT/results.sqlite --out $OUT/cost-quick-4 > $OUT/cost-quick-4.txt
fi

# 4. The proof: four builds, Debian's mariadbd and an A/A copy of the base, both measures, full suite.
#    Its cost part finished; its binaries were lost with their machine, so its QPS part is step 5.
if want full-both; then
  $P bench --base rel_o2nofp --variant rel_lto --variant rel_pgo_use --variant rel_lto_pgo_use_clang \
    --source "$S" --binary distro=/usr/sbin/mariadbd --binary aa="$(base_binary)" --suite full --measure cost,qps \
    --instances 2 --blocks 4 --seconds 3 --target-ci 3% --max-instances 4 --pair-budget 120 \
    --run full-both --store $OUT/results.sqlite --out $OUT/full-both > $OUT/full-both.txt
fi

# 5. The same targets rebuilt on a new machine, QPS first, then cost: 2 instances of 3 paired
#    1-second blocks per test (about 80 s per test for 6 targets here: the QPS part fits one session
#    after the builds; slice noise here does not shrink with length, so shorter slices buy pairs).
#    The run is named after its binaries: on the machine that built them it continues, after a
#    rebuild (a new machine) it starts anew instead of being refused.
if want full-both-2; then
  builds=$(ls -d "${PGOLAB_HOME:-/var/cache/pgolab}"/builds/mariadb-10.11.18-*/{rel_o2nofp,rel_lto,rel_pgo_use,rel_lto_pgo_use_clang}/final/install/bin/mariadbd)
  RUN=full-both-2-$(cat $builds | sha256sum | cut -c1-8)
  $P bench --base rel_o2nofp --variant rel_lto --variant rel_pgo_use --variant rel_lto_pgo_use_clang \
    --source "$S" --binary distro=/usr/sbin/mariadbd --binary aa="$(base_binary)" --suite full --measure qps,cost \
    --instances 2 --blocks 3 --seconds 1 --cost-jobs 2 \
    --run $RUN --store $OUT/results.sqlite --out $OUT/$RUN </dev/null > $OUT/$RUN.txt
fi
