"""The partial table in README.md: rCost per complete group of the first cost run (pg15-matrix-cost,
23 of 41 tests, on builds lost with their machine), read from the stored run's JSON report.
    .venv/bin/pgolab report pg15-matrix-cost --store docs/results/postgresql-15-matrix/results.sqlite \
        --format json | python3 docs/results/postgresql-15-matrix/partial-groups.py
"""
import json
import sys

COMPLETE = ("point-1", "range-1", "range-2")   # every test of these groups is stored

report = json.load(sys.stdin)
rows = [r for r in report["tables"]["groups"]["rows"] if r["figure"] == "rCost" and r["group"] in COMPLETE]
builds = list(dict.fromkeys(r["build"] for r in rows))
cell = {(r["build"], r["group"]): r["geomean"] for r in rows}
tests = {g: len({r["micro"] for r in report["tables"]["micro"]["rows"] if r["group"] == g}) for g in COMPLETE}
print("| build | " + " | ".join(f"{g} ({tests[g]} tests)" for g in COMPLETE) + " |")
print("|---|" + "---|" * len(COMPLETE))
for b in builds:
    print(f"| {b} | " + " | ".join("{value:.3f} [{low:.3f}, {high:.3f}]".format(**cell[(b, g)]) for g in COMPLETE) + " |")
