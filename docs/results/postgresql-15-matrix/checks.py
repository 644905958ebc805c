"""Two figures of README.md, from committed outputs:
  rebuilds: how far the new run's group rCost (partial-groups-247c0700.txt) lies from the first run's on
            the lost builds (partial-groups.txt), builds without and with PGO apart;
  i1-share: what share of the base's estimated cycles per test are I1 misses (10 cycles each) and
            instructions, from the new run's report.
    .venv/bin/python docs/results/postgresql-15-matrix/checks.py rebuilds
    .venv/bin/pgolab report pg15-matrix-cost-247c0700 --store docs/results/postgresql-15-matrix/results.sqlite \
        --format json | .venv/bin/python docs/results/postgresql-15-matrix/checks.py i1-share
"""
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).parent


def table(path: Path) -> dict[str, list[float]]:
    rows = {}
    for line in path.read_text().splitlines():
        if line.startswith("| rel"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = [float(c.split()[0]) for c in cells[1:]]
    return rows


def rebuilds() -> None:
    first, second = table(HERE / "partial-groups.txt"), table(HERE / "partial-groups-247c0700.txt")
    for kind, keep in (("without PGO", lambda b: "pgo" not in b), ("with PGO", lambda b: "pgo" in b)):
        diffs = [abs(n / o - 1) for b in first if keep(b) for o, n in zip(first[b], second[b])]
        print(f"{kind}: {len(diffs)} group figures, largest difference {max(diffs) * 100:.2f} %")


def i1_share() -> None:
    rows = [r for r in json.load(sys.stdin)["tables"]["cost"]["rows"] if r["target"] == "rel_o2nofp" and r["cycles"]]
    i1 = [10 * r["i1_misses"] / r["cycles"] for r in rows]
    instr = [r["instructions"] / r["cycles"] for r in rows]
    print(f"rel_o2nofp, {len(rows)} tests: I1 misses median {statistics.median(i1):.3f} (max {max(i1):.3f}) "
          f"of estimated cycles; instructions median {statistics.median(instr):.3f}")


{"rebuilds": rebuilds, "i1-share": i1_share}[sys.argv[1]]()
