"""The same builds on InnoDB and on MyRocks, side by side: each build's ratio to the base in the
two engine runs (their exported reports' builds.csv and groups.csv), and the MyRocks ratio over the
InnoDB one. The two runs are independent, so that ratio's 95% interval combines their half-widths on
the log scale in quadrature (a normal approximation; each run's own interval is a t interval).
Usage: python3 engines-side-by-side.py [FOLDER]   (FOLDER holds report-innodb/ and report-rocksdb/)"""

import csv
import math
import sys
from pathlib import Path

folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
ENGINES = ("innodb", "rocksdb")


def rows(engine: str, name: str) -> list[dict]:
    with open(folder / f"report-{engine}" / name, newline="") as f:
        return list(csv.DictReader(f))


def interval(value: float, low: float, high: float) -> str:
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


def between(a: dict, b: dict, key: str) -> str:
    """b's ratio over a's, with the quadrature interval."""
    va, vb = float(a[key]), float(b[key])
    half = math.hypot(*(math.log(float(r[f"{key}_high"]) / float(r[f"{key}_low"])) / 2 for r in (a, b)))
    ratio = vb / va
    return interval(ratio, ratio * math.exp(-half), ratio * math.exp(half))


builds = {e: {r["build"]: r for r in rows(e, "builds.csv")} for e in ENGINES}
print("Per build over the quick suite, against the base of its own run (rQPS and rCPU, 95% CI):")
print(f"{'build':26} {'engine':8} {'rQPS':>24} {'rCPU':>24}")
for build in builds["innodb"]:
    for e in ENGINES:
        r = builds[e][build]
        print(f"{build:26} {e:8} {interval(float(r['qps']), float(r['qps_low']), float(r['qps_high'])):>24} "
              f"{interval(float(r['cpu_us']), float(r['cpu_us_low']), float(r['cpu_us_high'])):>24}")
    print(f"{build:26} {'MyRocks/InnoDB':14} rQPS {between(builds['innodb'][build], builds['rocksdb'][build], 'qps')}, "
          f"rCPU {between(builds['innodb'][build], builds['rocksdb'][build], 'cpu_us')}")
print()
print("Per group, rQPS geometric mean [95% CI]:")
groups = {e: {(r["group"], r["build"]): r for r in rows(e, "groups.csv") if r["figure"].startswith("rQPS")}
          for e in ENGINES}
print(f"{'group':8} {'build':26} {'InnoDB':>24} {'MyRocks':>24}")
for key in groups["innodb"]:
    cells = [interval(float(groups[e][key]["geomean"]), float(groups[e][key]["geomean_low"]),
                      float(groups[e][key]["geomean_high"])) for e in ENGINES]
    print(f"{key[0]:8} {key[1]:26} {cells[0]:>24} {cells[1]:>24}")
