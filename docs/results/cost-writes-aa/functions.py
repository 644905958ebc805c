"""Where two callgrind dumps of one binary differ, function by function (exclusive instructions).

Usage: functions.py A_DUMP B_DUMP [N]. Reads callgrind_annotate's per-function Ir (inclusive off),
prints the totals and the N functions whose counts differ most (b - a).
"""
import re
import subprocess
import sys

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([\d. %]+\)\s+)?(.*?)(?:\s+\[[^\]]*\])?$")


def per_function(dump: str) -> dict[str, int]:
    out = subprocess.run(["callgrind_annotate", "--show=Ir", "--threshold=100", "--inclusive=no", dump],
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m and (":" in m.group(2) or m.group(2) == "PROGRAM TOTALS"):
            counts[m.group(2)] = counts.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
    total = counts.pop("PROGRAM TOTALS")
    # the thread's entry chain (clone, start_thread, handle_one_connection) is listed with the total
    return {"PROGRAM TOTALS": total} | {k: v for k, v in counts.items() if v != total}


a, b = per_function(sys.argv[1]), per_function(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 15
total_a, total_b = a.pop("PROGRAM TOTALS"), b.pop("PROGRAM TOTALS")
print(f"instructions: a {total_a:,}  b {total_b:,}  b/a {total_b / total_a:.3f}")
print(f"{'b - a':>11} {'a':>11} {'b':>11}  function")
for name in sorted(set(a) | set(b), key=lambda k: -abs(b.get(k, 0) - a.get(k, 0)))[:n]:
    print(f"{b.get(name, 0) - a.get(name, 0):>11,} {a.get(name, 0):>11,} {b.get(name, 0):>11,}  {name[:120]}")
