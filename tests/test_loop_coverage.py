"""Interval coverage through the measurement loop as a run drives it (issue 32): the scheduler with
its outlier exclusion, re-measured blocks and adaptive instances up to a target interval, against
an executor whose slices are heavy-tailed (Student's t, 3 df) and now and then wild (a 3.5x slice,
as a noisy machine gives), with a real SQLite store; the final intervals are computed from the
store as the report computes them (excluded blocks left out). The pass rule and the broken
estimators (intervals halved and doubled) are those of tests/test_stats.py."""

import math

import numpy as np
import pytest

from pgolab import stats
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample
from pgolab.schedule import Plan, Scheduler, micro_key
from pgolab.store import Store
from pgolab.suite import QUICK

from test_stats import check_both_directions, heavy, seed  # noqa: F401 (seed: the fixture, used by name)

TESTS = QUICK[:4]
WILD = 0.02          # the chance that a slice is wild (3.5x)


class HeavyTailedExecutor:
    """QPS of targets a and b: a server's offset for its whole life (t3, 2 %), each slice's noise
    (t3, 3 %), b's true effect per test, and now and then a wild slice."""
    mode = "qps"

    def __init__(self, rng, effects):
        self.rng, self.effects, self.offset = rng, effects, {}

    def start_instance(self, micro, instance):
        self.offset = {label: heavy(self.rng, 0.02) for label in ("a", "b")}

    def measure(self, micro, step):
        log = self.offset[step.label] + heavy(self.rng, 0.03)
        if step.label == "b":
            log += math.log(self.effects[step.micro])
        if self.rng.random() < WILD:
            log += math.log(3.5)
        qps = 1000 * math.exp(log)
        return Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, seconds=1.0)

    def stop_instance(self):
        pass

    def close(self):
        pass


def one_run(rng, folder):
    """One simulated run through the loop: the suite's estimates as the report makes them, the truths."""
    effects = {micro_key(m): float(np.exp(rng.uniform(math.log(0.9), math.log(1.1)))) for m in TESTS}
    store = Store(folder / "run.sqlite")
    run_id, _ = store.create_or_resume_run("loop", server="x", base="a", suite="quick", options=BenchOptions(),
                                           host=Host.this(), identity={"simulated": 1}, command="test")
    plan = Plan(instances=2, blocks=4, max_instances=4, target_ci=0.03)
    Scheduler(store, run_id, "a", ["a", "b"], plan).run(list(TESTS), HeavyTailedExecutor(rng, effects))
    excluded = {(k, i, b) for (mode, k, i, b) in store.excluded(run_id) if mode == "qps"}
    observations = stats.paired_observations(store.values(run_id, "qps", "qps"), "a", "b", +1, excluded)
    store.close()
    first = micro_key(TESTS[0])
    return stats.SuiteEstimates.of(observations), {"first": first, "m0": effects[first],
                                                  "suite": stats.geometric_mean(list(effects.values()))}


@pytest.mark.slow   # Monte Carlo over 300 simulated runs through the scheduler and a store: about 30 s
def test_intervals_hold_through_the_exclude_re_measure_and_target_interval_loop(monkeypatch, seed, tmp_path):
    """4 tests, 2 instances of 4 blocks at least and up to 4 until every test's 95 % half-width is
    3 % or less, outliers excluded and re-measured; true effects from 0.9 to 1.1. Bands from 500
    such runs measured on 2026-11-27 (seed 10, a /tmp prototype of this test): coverage 0.940 and
    0.946 at 95 % (one test, the suite), 0.454 and 0.456 at 50 %. So through the loop the 50 %
    intervals are a little narrow, about 2 standard errors below 0.5. Why is not found: in 150 runs
    of 6 tests each, one test's 50 % coverage was 0.42 without the outlier exclusion and the wild
    slices, and 0.43 without the adaptive instances, so neither alone accounts for it. The 95 %
    intervals hold. A correct method fails in at most 4 × CHECK_FAIL_RATE of runs; the same runs'
    intervals halved and doubled must each be rejected (check_both_directions)."""
    rng = np.random.default_rng(seed)
    runs = []
    for r in range(300):
        folder = tmp_path / str(r)
        folder.mkdir()
        runs.append(one_run(rng, folder))
    bands = {"m0@95": (0.92, 0.965), "m0@50": (0.41, 0.50), "suite@95": (0.92, 0.965), "suite@50": (0.41, 0.50)}
    check_both_directions(monkeypatch, runs, lambda s, t: [("m0", s.micro(t["first"]), t["m0"]),
                                                           ("suite", s.summary(), t["suite"])], bands, seed)
