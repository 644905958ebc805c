"""Figures of README.md's correction of 2026-11-26 that the report does not print: server CPU per query
split into user and system time (sysbench's slices record both), rel_lto against rel_o2nofp, with the
report's estimator and the run's excluded blocks left out; and system time's share of server CPU.
Callgrind's cost model counts the server's own instructions, not the kernel's, so rCost is read
against the user-time ratio.
Run from the checkout (the store is copied to a temporary file first: opening a store may write to it):
    .venv/bin/python docs/results/mysql-9.7-lto/checks.py > docs/results/mysql-9.7-lto/checks.txt
"""

import shutil
import tempfile
from pathlib import Path

import numpy as np

from pgolab import stats
from pgolab.store import Store

HERE = Path(__file__).parent
RUN, BASE, LABEL = "mysql-lto-6e3c51bc", "rel_o2nofp", "rel_lto"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "results.sqlite"
        shutil.copyfile(HERE / "results.sqlite", copy)
        store = Store(copy)
        run = store.run(RUN)
        skip = {(k, i, b) for (m, k, i, b) in store.excluded(run.id) if m == "qps"}
        parts = {"total": {}, "user": {}, "system": {}}
        for s in store.samples(run.id, "qps"):
            d = s.detail
            if not d.get("queries") or d.get("cpu_user_s") is None:
                continue
            key = (s.step.micro, s.step.instance, s.step.block, s.step.label)
            parts["user"][key] = d["cpu_user_s"] / d["queries"]
            parts["system"][key] = d["cpu_sys_s"] / d["queries"]
            parts["total"][key] = (d["cpu_user_s"] + d["cpu_sys_s"]) / d["queries"]
        print(f"run {RUN}, host {run.host.cpu} ({run.host.cpu_id}); {len(skip)} QPS blocks excluded")
        for label in (BASE, LABEL):
            shares = {}
            for (micro, inst, block, who), v in parts["system"].items():
                if who == label and (micro, inst, block) not in skip:
                    acc = shares.setdefault(micro, [0.0, 0.0])
                    acc[0] += v
                    acc[1] += parts["total"][(micro, inst, block, who)]
            print(f"  {label}: system time is {np.median([a / t for a, t in shares.values()]):.2f} of server CPU "
                  "per query (median over tests)")
        for part in ("total", "user", "system"):
            e = stats.SuiteEstimates.of(stats.paired_observations(parts[part], BASE, LABEL, -1, skip)).summary()
            print(f"  {LABEL} against {BASE}, {part} CPU per query: {e.fmt()} {e.verdict()}")


if __name__ == "__main__":
    main()
