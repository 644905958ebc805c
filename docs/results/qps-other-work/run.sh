#!/bin/bash
# What the QPS report's "other work" line reads on this machine idle and beside two CPU-bound
# processes: Debian's mariadbd against itself, quick suite, one instance of two 1-second blocks,
# 10,000 rows. Pause the queue first (../queue.sh --pause): the idle half wants the machine alone.
. "$(dirname "$0")/../proof-env.sh"
rm -f "$OUT/results.sqlite"   # a few minutes: measured anew each time, not resumed
bench() {   # RUN
  $P bench --base a --binary a=/usr/sbin/mariadbd --binary b=/usr/sbin/mariadbd --measure qps --suite quick \
    --instances 1 --blocks 2 --seconds 1 --table-size 10000 --run "$1" --store "$OUT/results.sqlite" \
    --out "$OUT/report-$1" </dev/null > "$OUT/report-$1.txt"
  sqlite3 "$OUT/results.sqlite" "SELECT '$1', micro, label, block, json_extract(detail, '$.other_cores'),
    json_extract(detail, '$.steal_cores'), round(json_extract(vals, '$.qps'))
    FROM samples JOIN runs ON runs.id = run_id WHERE runs.name = '$1'"
}
{
  echo "# run|micro|label|block|other_cores|steal_cores|qps"
  bench idle
  python3 -c 'while True: pass' & a=$!
  python3 -c 'while True: pass' & b=$!
  bench beside-two-spinners
  kill $a $b
  grep -h "beside the QPS" "$OUT"/report-*.txt
} > "$OUT/other-work.txt"
