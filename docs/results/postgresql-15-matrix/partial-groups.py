"""The partial tables in README.md: rCost per group of a cost run that has not finished, over the
groups whose every test is stored for every build, read from the stored run's JSON report:
    .venv/bin/pgolab report RUN --store docs/results/postgresql-15-matrix/results.sqlite \
        --format json | .venv/bin/python docs/results/postgresql-15-matrix/partial-groups.py
(RUN: pg15-matrix-cost, the first run on lost builds; pg15-matrix-cost-247c0700, the second.)
"""
import json
import sys

from pgolab.suite import FULL, GROUPS

report = json.load(sys.stdin)
micro_rows = report["tables"]["micro"]["rows"]
builds = list(dict.fromkeys(r["build"] for r in micro_rows))
stored = {(r["group"], r["micro"], r["build"]) for r in micro_rows if r.get("cycles")}
complete = [g for g in GROUPS
            if all((g, m.name, b) in stored for m in FULL if m.group == g for b in builds)]
cell = {(r["build"], r["group"]): r["geomean"] for r in report["tables"]["groups"]["rows"]
        if r["figure"] == "rCost" and r["group"] in complete}
tests = {g: sum(1 for m in FULL if m.group == g) for g in complete}
print("| build | " + " | ".join(f"{g} ({tests[g]} tests)" for g in complete) + " |")
print("|---|" + "---|" * len(complete))
for b in builds:
    print(f"| {b} | " + " | ".join("{value:.3f} [{low:.3f}, {high:.3f}]".format(**cell[(b, g)]) for g in complete) + " |")
