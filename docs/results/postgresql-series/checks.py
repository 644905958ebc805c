"""Figures of README.md's correction of 2026-11-26 that the report does not print: 18.6 against 15.18
in estimated cycles per query (rCost) at each variant, over all 41 tests and without the two
hot-points tests (point-1 and point-2), with the report's estimator (±1.5 % bound plus repeats); the
tests where 18.6 costs more; and each tree's PGO+LTO build against its own -O2 build.
Run from the checkout (the store is copied to a temporary file first: opening a store may write to it):
    .venv/bin/python docs/results/postgresql-series/checks.py > docs/results/postgresql-series/checks.txt
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np

from pgolab import stats
from pgolab.store import Store

HERE = Path(__file__).parent
RUN, BOUND = "pg-series-faaf08e5", 0.015
OLD, NEW = "postgresql-15.18", "postgresql-18.6"


def estimates(store: Store, run_id: int, figure: str, reference: str, label: str) -> stats.SuiteEstimates:
    values = store.values(run_id, "cost", figure)
    return stats.SuiteEstimates.of(stats.paired_observations(values, reference, label, -1), tolerance=BOUND)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "results.sqlite"
        shutil.copyfile(HERE / "results.sqlite", copy)
        store = Store(copy)
        run_id = store.run(RUN).id
        for variant in ("rel_o2nofp", "rel_lto_pgo_use_clang"):
            print(f"== {NEW} against {OLD}, {variant}")
            for figure, name in (("cycles", "rCost"), ("instructions", "rInstr"), ("i1_misses", "rI1")):
                suite = estimates(store, run_id, figure, f"{OLD}:{variant}", f"{NEW}:{variant}")
                per = {k: suite.micro(k) for k in suite.micros}
                hot = [k for k in per if k.endswith("/hot-points")]
                rest = [k for k in per if k not in hot]
                full, without = suite.summary(), suite.summary(rest)
                print(f"  {name}: {len(per)} tests {full.fmt()} {full.verdict()}; median {np.median([e.value for e in per.values()]):.3f}; "
                      + ", ".join(f"{k} {per[k].value:.3f}" for k in hot)
                      + f"; without them {without.fmt()} {without.verdict()}")
                if figure == "cycles":
                    more = sorted((k for k in per if per[k].value < 1), key=lambda k: per[k].value)
                    print(f"  rCost below 1 (18.6 costs more) on {len(more)} of {len(per)} tests, "
                          f"{sum(per[k].verdict() == 'costlier' for k in more)} of them 'costlier' by their own interval:")
                    for k in more:
                        print(f"    {k} {per[k].fmt()} {per[k].verdict()}")
        print("== each tree's rel_lto_pgo_use_clang against its own rel_o2nofp, rCost")
        for tree in (OLD, NEW):
            suite = estimates(store, run_id, "cycles", f"{tree}:rel_o2nofp", f"{tree}:rel_lto_pgo_use_clang")
            rest = [k for k in suite.micros if not k.endswith("/hot-points")]
            print(f"  {tree}: {suite.summary().fmt()}; without hot-points {suite.summary(rest).fmt()}")


if __name__ == "__main__":
    main()
