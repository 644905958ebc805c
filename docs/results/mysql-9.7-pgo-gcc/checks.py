"""Figures of README.md that the report does not print, from the report's own CSV files (no interval):
the quick suite's tests within this full-suite run (geometric means of report/micro.csv's per-test
ratios), and branch mispredictions per query, base over build, over the suite and per group
(report/cost.csv).
Run from the checkout, with a report folder (default: this folder's):
    .venv/bin/python docs/results/mysql-9.7-pgo-gcc/checks.py > docs/results/mysql-9.7-pgo-gcc/checks.txt
"""

import csv
import sys
from pathlib import Path

from pgolab.stats import geometric_mean
from pgolab.suite import QUICK

REPORT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "report"
BASE = "rel_o2nofp"


def rows(name: str) -> list[dict]:
    with open(REPORT / name) as f:
        return list(csv.DictReader(f))


def main() -> None:
    quick = {(m.group, m.name) for m in QUICK}
    micro = [r for r in rows("micro.csv") if (r["group"], r["micro"]) in quick]
    for build in sorted({r["build"] for r in micro}):
        mine = [r for r in micro if r["build"] == build]
        means = {k: geometric_mean([float(r[k]) for r in mine]) for k in ("qps", "cpu_us", "cycles")}
        print(f"{build}, quick suite's {len(mine)} tests: rQPS {means['qps']:.3f}, rCPU {means['cpu_us']:.3f}, "
              f"rCost {means['cycles']:.3f}")
    cost = rows("cost.csv")
    base = {(r["group"], r["micro"]): float(r["mispredicts"]) for r in cost if r["target"] == BASE}
    for target in dict.fromkeys(r["target"] for r in cost if r["target"] != BASE):
        ratios = {(r["group"], r["micro"]): base[(r["group"], r["micro"])] / float(r["mispredicts"])
                  for r in cost if r["target"] == target}
        print(f"{target}: branch mispredictions per query, {BASE} over {target}, geometric mean over "
              f"{len(ratios)} tests: {geometric_mean(list(ratios.values())):.3f}")
        for group in dict.fromkeys(g for g, _ in ratios):
            mine = [v for (g, _), v in ratios.items() if g == group]
            print(f"  {group} ({len(mine)} tests): {geometric_mean(mine):.3f}")


if __name__ == "__main__":
    main()
