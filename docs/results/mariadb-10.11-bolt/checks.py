"""Figures of README.md's correction of 2026-11-26 that the report does not print, from the committed
stores (each copied to a temporary file first: opening a store may write to it).
  cpu-split: server CPU per query split into user and system time (sysbench's slices record both),
             each build against Debian's mariadbd and BOLT against its twin, with the report's estimator;
  bolt:      BOLT against its twin in QPS: as reported, with the 11 excluded blocks put back, without
             update-inlist, the per-test median, and update-inlist's block ratios;
  machines:  this run against the measurement proof's run full-both-2-4ece7f0b: the clang build's
             digests, rI1 against Debian's binary, the correlation of per-test ratios between the runs,
             and Debian's binary's own CPU per query in both.
Run from the checkout:
    .venv/bin/python docs/results/mariadb-10.11-bolt/checks.py > docs/results/mariadb-10.11-bolt/checks.txt
"""

import math
import shutil
import tempfile
from pathlib import Path

import numpy as np

from pgolab import stats
from pgolab.store import Store

HERE = Path(__file__).parent
RUN, BASE = "mariadb-bolt-870196ce", "distro"
CLANG, BOLT = "rel_lto_pgo_use_clang", "rel_lto_pgo_use_clang_bolt"
MEASUREMENT = HERE.parent / "mariadb-10.11-measurement" / "results.sqlite"
MEASUREMENT_RUN = "full-both-2-4ece7f0b"
COST_BOUND = 0.005          # MariaDB's cost repeatability bound, as the report uses it


def opened(path: Path, tmp: str) -> Store:
    copy = Path(tmp) / path.parent.name
    shutil.copyfile(path, copy)
    return Store(copy)


def skipped(store: Store, run_id: int, mode: str) -> set:
    return {(k, i, b) for (m, k, i, b) in store.excluded(run_id) if m == mode}


def fmt(e: stats.Estimate) -> str:
    return f"{e.fmt()} {e.verdict()}"


def cpu_values(store: Store, run_id: int) -> dict[str, dict]:
    """Per-query user, system and total server CPU (µs) of every QPS sample."""
    out = {"user": {}, "system": {}, "total": {}}
    for s in store.samples(run_id, "qps"):
        d = s.detail
        if not d.get("queries") or d.get("cpu_user_s") is None or d.get("cpu_sys_s") is None:
            continue
        key = (s.step.micro, s.step.instance, s.step.block, s.step.label)
        out["user"][key] = d["cpu_user_s"] / d["queries"] * 1e6
        out["system"][key] = d["cpu_sys_s"] / d["queries"] * 1e6
        out["total"][key] = (d["cpu_user_s"] + d["cpu_sys_s"]) / d["queries"] * 1e6
    return out


def system_share(values: dict, label: str, skip: set) -> float:
    """Median over tests of the system time's share of the label's server CPU."""
    per: dict[str, list[float]] = {}
    for (micro, inst, block, who), v in values["system"].items():
        if who == label and (micro, inst, block) not in skip:
            acc = per.setdefault(micro, [0.0, 0.0])
            acc[0] += v
            acc[1] += values["total"][(micro, inst, block, who)]
    return float(np.median([s / t for s, t in per.values()]))


def cpu_split(store: Store, run_id: int, base: str, pairs: list[tuple[str, str]]) -> None:
    values, skip = cpu_values(store, run_id), skipped(store, run_id, "qps")
    for label in dict.fromkeys([base] + [l for pair in pairs for l in pair]):
        print(f"  {label}: system time is {system_share(values, label, skip):.2f} of server CPU per query "
              "(median over tests)")
    for reference, label in pairs:
        parts = []
        for part in ("total", "user", "system"):
            obs = stats.paired_observations(values[part], reference, label, -1, skip)
            parts.append(f"{part} {fmt(stats.SuiteEstimates.of(obs).summary())}")
        print(f"  {label} against {reference}, CPU per query: " + "; ".join(parts))


def bolt(store: Store, run_id: int) -> None:
    skip = skipped(store, run_id, "qps")
    print(f"  excluded QPS blocks: {len(skip)}")
    for figure, sign in (("qps", 1), ("cpu_us", -1)):
        values = store.values(run_id, "qps", figure)
        kept = stats.SuiteEstimates.of(stats.paired_observations(values, CLANG, BOLT, sign, skip))
        back = stats.SuiteEstimates.of(stats.paired_observations(values, CLANG, BOLT, sign))
        per_test = [kept.micro(k).value for k in kept.micros]
        print(f"  {figure}: as reported {fmt(kept.summary())}; excluded blocks back {fmt(back.summary())}; "
              f"without update-inlist {fmt(kept.without('writes/update-inlist').summary())}; "
              f"per-test median {np.median(per_test):.3f}, {sum(v > 1 for v in per_test)} of {len(per_test)} above 1")
    blocks = stats.paired_observations(store.values(run_id, "qps", "qps"), CLANG, BOLT, 1)["writes/update-inlist"]
    ratios = sorted(math.exp(o.log_ratio) for o in blocks)
    print(f"  update-inlist, rQPS of its {len(ratios)} stored blocks (excluded ones included): "
          + ", ".join(f"{r:.2f}" for r in ratios))


def per_test(store: Store, run_id: int, mode: str, figure: str, sign: int) -> dict[str, float]:
    values = store.values(run_id, mode, figure)
    obs = stats.paired_observations(values, BASE, CLANG, sign, skipped(store, run_id, mode))
    suite = stats.SuiteEstimates.of(obs, tolerance=COST_BOUND if mode == "cost" else None)
    return {k: suite.micro(k).value for k in suite.micros}


def machines(here: Store, here_id: int, there: Store, there_id: int) -> None:
    for name, store, run_id in (("this run", here, here_id), (MEASUREMENT_RUN, there, there_id)):
        target = next(t for t in store.targets(run_id) if t.label == CLANG)
        distro = next(t for t in store.targets(run_id) if t.label == BASE)
        print(f"  {name}: {CLANG} sha256 {target.binary_digest[:12]}, {target.server_binary}; "
              f"Debian's binary sha256 {distro.binary_digest[:12]}; host {store.run(run_id).host}")
    for mode, figure, sign, what in (("qps", "qps", 1, "rQPS"), ("qps", "cpu_us", -1, "rCPU"),
                                     ("cost", "cycles", -1, "rCost"), ("cost", "i1_misses", -1, "rI1")):
        a, b = per_test(here, here_id, mode, figure, sign), per_test(there, there_id, mode, figure, sign)
        keys = sorted(set(a) & set(b))
        x, y = np.log([a[k] for k in keys]), np.log([b[k] for k in keys])
        print(f"  {what} of {CLANG} against Debian's binary: geometric mean {math.exp(x.mean()):.3f} here, "
              f"{math.exp(y.mean()):.3f} in {MEASUREMENT_RUN}; correlation of the {len(keys)} per-test log ratios "
              f"between the runs {np.corrcoef(x, y)[0, 1]:.2f}")
    for name, store, run_id in (("this run", here, here_id), (MEASUREMENT_RUN, there, there_id)):
        values, skip = cpu_values(store, run_id), skipped(store, run_id, "qps")
        means = {}
        for part in ("user", "system"):
            per: dict[str, list[float]] = {}
            for (micro, inst, block, who), v in values[part].items():
                if who == BASE and (micro, inst, block) not in skip:
                    per.setdefault(micro, []).append(v)
            means[part] = math.exp(np.mean([math.log(np.mean(v)) for v in per.values() if np.mean(v) > 0]))
        print(f"  {name}: Debian's binary used {means['user']:.1f} µs user and {means['system']:.1f} µs system CPU "
              "per query (geometric mean over the tests)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        here = opened(HERE / "results.sqlite", tmp)
        there = opened(MEASUREMENT, tmp)
        here_id, there_id = here.run(RUN).id, there.run(MEASUREMENT_RUN).id
        print(f"== cpu-split ({RUN})")
        cpu_split(here, here_id, BASE, [(BASE, CLANG), (BASE, BOLT), (CLANG, BOLT)])
        print(f"== bolt: {BOLT} against {CLANG}")
        bolt(here, here_id)
        print(f"== machines: {RUN} against {MEASUREMENT_RUN}")
        machines(here, here_id, there, there_id)


if __name__ == "__main__":
    main()
