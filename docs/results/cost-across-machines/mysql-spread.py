"""MySQL 9.7.2 rel_o2nofp (one binary) in three runs: AMD EPYC (run 1) and two Intel Xeon runs (2, 3).
Per test, estimated cycles: the two Intel runs' spread (one machine kind, two runs) beside the AMD run
against the Intel mean (two machine kinds), summarised over the read-only tests and the write tests.
Reads mysql-rel_o2nofp/machines.csv (written by run.sh):
    python3 docs/results/cost-across-machines/mysql-spread.py > docs/results/cost-across-machines/mysql-spread.txt
"""

import csv
import math
import statistics
from pathlib import Path

rows = [r for r in csv.DictReader(open(Path(__file__).parent / "mysql-rel_o2nofp" / "machines.csv"))
        if r["figure"] == "cycles"]
kinds = {"read-only": [r for r in rows if not r["test"].startswith("writes/")],
         "writes": [r for r in rows if r["test"].startswith("writes/")]}
for kind, found in kinds.items():
    intel = [abs(math.log(float(r["run 2"]) / float(r["run 3"]))) * 100 for r in found]
    across = [abs(math.log(float(r["run 1"]) / math.sqrt(float(r["run 2"]) * float(r["run 3"])))) * 100 for r in found]
    print(f"{kind} ({len(found)} tests), |log ratio| in %: Intel run 2 against run 3 median {statistics.median(intel):.2f}, "
          f"max {max(intel):.2f}; AMD against the Intel mean median {statistics.median(across):.2f}, max {max(across):.2f}")
    for r, i, a in zip(found, intel, across):
        if max(i, a) > 1.5:
            print(f"  {r['test']}: Intel runs {i:.2f}, AMD against Intel {a:.2f}")
