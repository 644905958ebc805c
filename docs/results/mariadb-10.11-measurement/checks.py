"""Figures of README.md's correction of 2026-11-26 that the report does not print.
  calibration: how well the per-test QPS intervals of the A/A pair (aa, the base's own file) fit its
               per-test results: Cochran's Q, the sum over tests of ((log ratio - weighted mean) / standard
               error)², which is about its degrees of freedom (tests - 1) when the intervals are honest;
               and every build's median per-test half-width. From the committed exports of sections 4, 5
               and 6 (each interval and its df read back into a standard error) and from the current
               estimator on the committed store;
  aa:          the A/A suite figure with the current estimator: as reported, with the excluded blocks put
               back, and each test whose absence flips its verdict;
  cpu-split:   server CPU per query split into user and system time, each build against rel_o2nofp.
Run from the checkout (the store is copied to a temporary file first: opening a store may write to it):
    .venv/bin/python docs/results/mariadb-10.11-measurement/checks.py > docs/results/mariadb-10.11-measurement/checks.txt
"""

import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats as st

from pgolab import stats
from pgolab.store import Store

HERE = Path(__file__).parent
RUN, BASE = "full-both-2-4ece7f0b", "rel_o2nofp"
BUILDS = ["rel_lto", "rel_pgo_use", "rel_lto_pgo_use_clang", "distro", "aa"]


def q_of(values: list[float], errors: list[float]) -> tuple[float, int]:
    y, w = np.array(values), 1 / np.array(errors) ** 2
    mean = (w * y).sum() / w.sum()
    return float((w * (y - mean) ** 2).sum()), len(y) - 1


def from_export(path: Path, label: str) -> tuple[float, int, float, int]:
    rows = [r for r in json.loads(path.read_text())["tables"]["micro"]["rows"] if r["build"] == label]
    y, se, half = [], [], []
    for r in rows:
        e = r["qps"]
        y.append(math.log(e["value"]))
        se.append(math.log(e["high"] / e["low"]) / (2 * st.t.ppf(0.975, e["df"])))
        half.append((e["high"] - e["low"]) / 2 / e["value"])
    q, df = q_of(y, se)
    return q, df, float(np.median(half)) * 100, sum(r["qps_verdict"] in ("faster", "slower") for r in rows)


def from_store(store: Store, run_id: int, label: str) -> tuple[float, int, float, int]:
    skip = {(k, i, b) for (m, k, i, b) in store.excluded(run_id) if m == "qps"}
    suite = stats.SuiteEstimates.of(stats.paired_observations(store.values(run_id, "qps", "qps"), BASE, label, 1, skip))
    estimates = [suite.micro(k) for k in suite.micros]
    q, df = q_of([math.log(e.value) for e in estimates], [e.log_se for e in estimates])
    return (q, df, float(np.median([e.half_width for e in estimates])) * 100,
            sum(e.verdict() in ("faster", "slower") for e in estimates))


def calibration(store: Store, run_id: int) -> None:
    sources = [("section 4 export (full-both-2-4ece7f0b/)", lambda l: from_export(HERE / RUN / "report.json", l)),
               ("section 5 export (reexcluded/)", lambda l: from_export(HERE / "reexcluded" / "report.json", l)),
               ("section 6 export (repooled/)", lambda l: from_export(HERE / "repooled" / "report.json", l)),
               ("current estimator, committed store", lambda l: from_store(store, run_id, l))]
    for name, of in sources:
        print(f"  {name}:")
        halves = []
        for label in BUILDS:
            q, df, half, verdicts = of(label)
            halves.append(f"{label} {half:.1f} %")
            if label == "aa":
                print(f"    aa: Q = {q:.1f} on {df} df; {verdicts} of {df + 1} per-test verdicts faster/slower")
        print("    per-test median 95 % half-width of rQPS: " + ", ".join(halves))


def aa(store: Store, run_id: int) -> None:
    skip = {(k, i, b) for (m, k, i, b) in store.excluded(run_id) if m == "qps"}
    values = store.values(run_id, "qps", "qps")
    suite = stats.SuiteEstimates.of(stats.paired_observations(values, BASE, "aa", 1, skip))
    full = suite.summary()
    back = stats.SuiteEstimates.of(stats.paired_observations(values, BASE, "aa", 1)).summary()
    print(f"  aa rQPS: as reported {full.fmt()} {full.verdict()} ({len(skip)} blocks excluded); "
          f"excluded blocks back {back.fmt()} {back.verdict()}")
    for key in suite.micros:
        without = suite.without(key).summary()
        if without.verdict() != full.verdict():
            print(f"    without {key}: {without.fmt()} {without.verdict()} (upper end {without.high:.4f})")


def cpu_split(store: Store, run_id: int) -> None:
    skip = {(k, i, b) for (m, k, i, b) in store.excluded(run_id) if m == "qps"}
    parts = {"total": {}, "user": {}, "system": {}}
    for s in store.samples(run_id, "qps"):
        d = s.detail
        if not d.get("queries") or d.get("cpu_user_s") is None:
            continue
        key = (s.step.micro, s.step.instance, s.step.block, s.step.label)
        parts["user"][key] = d["cpu_user_s"] / d["queries"]
        parts["system"][key] = d["cpu_sys_s"] / d["queries"]
        parts["total"][key] = (d["cpu_user_s"] + d["cpu_sys_s"]) / d["queries"]
    for label in [BASE] + BUILDS:
        shares = {}
        for (micro, inst, block, who), v in parts["system"].items():
            if who == label and (micro, inst, block) not in skip:
                acc = shares.setdefault(micro, [0.0, 0.0])
                acc[0] += v
                acc[1] += parts["total"][(micro, inst, block, who)]
        line = f"  {label}: system time {np.median([s / t for s, t in shares.values()]):.2f} of server CPU (median over tests)"
        if label != BASE:
            ratios = []
            for part in ("total", "user", "system"):
                e = stats.SuiteEstimates.of(stats.paired_observations(parts[part], BASE, label, -1, skip)).summary()
                ratios.append(f"{part} {e.fmt()}")
            line += "; against rel_o2nofp: " + "; ".join(ratios)
        print(line)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "results.sqlite"
        shutil.copyfile(HERE / "results.sqlite", copy)
        store = Store(copy)
        run_id = store.run(RUN).id
        print(f"== calibration of the per-test rQPS intervals, run {RUN}, against {BASE}")
        calibration(store, run_id)
        print("== aa, current estimator")
        aa(store, run_id)
        print("== cpu-split: server CPU per query, user and system")
        cpu_split(store, run_id)


if __name__ == "__main__":
    main()
