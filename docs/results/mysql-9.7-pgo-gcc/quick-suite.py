"""The quick suite's tests within a full-suite run: geometric means of the per-test ratios in
report/micro.csv (no interval). Run: .venv/bin/python docs/results/mysql-9.7-pgo-gcc/quick-suite.py"""
import csv
import math
import sys
from pathlib import Path

from pgolab.suite import QUICK

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
quick = {(m.group, m.name) for m in QUICK}
rows = [r for r in csv.DictReader(open(folder / "report" / "micro.csv")) if (r["group"], r["micro"]) in quick]
for build in sorted({r["build"] for r in rows}):
    mine = [r for r in rows if r["build"] == build]
    mean = {k: math.exp(sum(math.log(float(r[k])) for r in mine) / len(mine)) for k in ("qps", "cpu_us", "cycles")}
    print(f"{build}: {len(mine)} tests, rQPS {mean['qps']:.3f}, rCPU {mean['cpu_us']:.3f}, rCost {mean['cycles']:.3f}")
