"""Per-run A/A means of the quick suite's two write tests on MariaDB, from the committed stores: how far
a whole quick-suite A/A cost figure moves from run to run (tests/test_bench.py's cost test cites it).
Run: .venv/bin/python docs/results/cost-mode-checks/aa-write-tests.py"""
import json
import math
import sqlite3
from collections import defaultdict

PAIRS = [("docs/results/cost-mode-checks/results.sqlite", "b", "a"),
         ("docs/results/mariadb-10.11-measurement/results.sqlite", "rel_o2nofp", "aa"),
         ("docs/results/mariadb-10.11-measurement/results.sqlite", "distro", "distro2")]
WRITES = ("writes/update-index", "writes/write-only")
means = []
for path, base, other in PAIRS:
    db = sqlite3.connect(path)
    for run_id, name, server, suite in db.execute("SELECT id, name, server, suite FROM runs"):
        if server != "mariadb" or suite != "quick":
            continue
        data = defaultdict(dict)
        for micro, inst, block, label, vals in db.execute(
                "SELECT micro, instance, block, label, vals FROM samples WHERE run_id = ? AND mode = 'cost' "
                "AND label IN (?, ?)", (run_id, base, other)):
            data[micro][(inst, block, label)] = json.loads(vals)["instructions"]
        for micro in WRITES:
            d = data.get(micro, {})
            logs = [math.log(d[(i, b, other)] / d[(i, b, base)]) for i, b, _ in d if _ == base and (i, b, other) in d]
            if logs:
                means.append(sum(logs) / len(logs))
                print(f"{name:24s} {other:8s} {micro:22s} mean log ratio {100 * means[-1]:+6.2f} %")
rms = math.sqrt(sum(m * m for m in means) / len(means))
print(f"{len(means)} means, RMS {100 * rms:.2f} %; a 7-test suite with two such tests: SD about "
      f"{100 * rms * math.sqrt(2) / 7:.2f} %")
