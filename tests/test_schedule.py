"""The scheduler with a fake executor (pure logic, a real SQLite store, no servers): order,
resume after an interrupt, outlier re-measurement, adaptive stopping."""

import math

import numpy as np
import pytest

from pgolab.measurement import Sample
from pgolab.schedule import Plan, Scheduler, block_order, start_order
from pgolab.store import Store
from pgolab.suite import QUICK
from pgolab.host import Host
from pgolab.measurement import BenchOptions


class FakeExecutor:
    """QPS that each label would have, with reproducible noise; can spike or fail on cue."""
    mode = "qps"

    def __init__(self, speed, noise=0.01, spike_at=None, fail_after=None, seed=0):
        self.speed, self.noise, self.spike_at, self.fail_after = speed, noise, spike_at, fail_after
        self.rng = np.random.default_rng(seed)
        self.measured, self.starts, self.running = [], [], False

    def start_instance(self, micro, instance):
        assert not self.running
        self.running = True
        self.starts.append((micro.name, instance))

    def measure(self, micro, step):
        assert self.running, "measured without a started instance"
        if self.fail_after is not None and len(self.measured) >= self.fail_after:
            raise KeyboardInterrupt
        self.measured.append(step)
        qps = 1000 * self.speed[step.label] * math.exp(self.rng.normal(0, self.noise))
        if self.spike_at and (step.micro, step.instance, step.block, step.label) == self.spike_at:
            qps *= 3.5
        return Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, seconds=2.0)

    def stop_instance(self):
        self.running = False

    def close(self):
        pass


def new_run(tmp_path, name="r"):
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run(name, server="x", base="a", suite="quick", options=BenchOptions(), host=Host.this(),
                                           identity={"k": 1}, command="test")
    return store, run_id


def test_orders_are_balanced():
    labels = ["a", "b", "c"]
    positions = {l: [] for l in labels}
    for instance in (1, 2):
        for block in (1, 2, 3, 4):
            for p, l in enumerate(block_order(labels, instance, block)):
                positions[l].append(p)
    means = {l: np.mean(p) for l, p in positions.items()}
    assert len(set(means.values())) == 1
    assert block_order(["a", "b"], 1, 1) == ["a", "b"] and block_order(["a", "b"], 1, 2) == ["b", "a"]
    assert block_order(["a", "b"], 2, 1) == ["b", "a"]


def test_start_and_warm_up_orders_are_balanced_over_instance_pairs():
    labels = ["base", "x", "aa"]
    starts = {l: [] for l in labels}
    for instance in (1, 2, 3, 4):
        for p, l in enumerate(start_order(labels, instance)):
            starts[l].append(p)
    assert len({np.mean(p) for p in starts.values()}) == 1
    assert start_order(labels, 1)[0] == "base" and start_order(labels, 2)[0] == "aa"


def test_every_step_once_with_instances_restarted(tmp_path):
    store, run_id = new_run(tmp_path)
    ex = FakeExecutor({"a": 1.0, "b": 1.0})
    Scheduler(store, run_id, "a", ["a", "b"], Plan(instances=2, blocks=4)).run(list(QUICK[:2]), ex)
    assert len(store.samples(run_id)) == 2 * 2 * 4 * 2
    assert ex.starts == [(QUICK[0].name, 1), (QUICK[0].name, 2), (QUICK[1].name, 1), (QUICK[1].name, 2)]


def test_an_interrupted_run_resumes_without_repeating_a_step(tmp_path):
    store, run_id = new_run(tmp_path)
    plan = Plan(instances=2, blocks=4)
    with pytest.raises(KeyboardInterrupt):
        Scheduler(store, run_id, "a", ["a", "b"], plan).run(list(QUICK[:2]), FakeExecutor({"a": 1, "b": 1},
                                                                                          fail_after=13))
    assert len(store.samples(run_id)) == 13
    again = FakeExecutor({"a": 1, "b": 1})
    Scheduler(store, run_id, "a", ["a", "b"], plan).run(list(QUICK[:2]), again)
    keys = [(s.step.micro, s.step.instance, s.step.block, s.step.label) for s in store.samples(run_id)]
    assert len(keys) == len(set(keys)) == 32 and len(again.measured) == 32 - 13
    # A finished instance is not started again.
    assert (QUICK[0].name, 1) not in again.starts


def test_an_outlier_block_is_excluded_and_re_measured(tmp_path):
    store, run_id = new_run(tmp_path)
    spike = (f"{QUICK[0].group}/{QUICK[0].name}", 1, 3, "b")
    ex = FakeExecutor({"a": 1, "b": 1}, spike_at=spike)
    Scheduler(store, run_id, "a", ["a", "b"], Plan(instances=1, blocks=6)).run([QUICK[0]], ex)
    excluded = store.excluded(run_id)
    assert list(excluded) == [("qps", spike[0], 1, 3)] and "rQPS of b" in excluded[("qps", spike[0], 1, 3)]
    blocks = {s.step.block for s in store.samples(run_id)}
    assert blocks == set(range(1, 8))      # block 7 replaces the excluded block 3


def test_a_short_instance_is_checked_for_outliers_too(tmp_path):
    """2 blocks per instance are too few to judge alone: the second test's first instance is judged
    against the spread the first test showed, and its 3.5x block re-measured on the same servers."""
    store, run_id = new_run(tmp_path)
    spike = (f"{QUICK[1].group}/{QUICK[1].name}", 1, 2, "b")
    ex = FakeExecutor({"a": 1, "b": 1}, noise=0.05, spike_at=spike)
    Scheduler(store, run_id, "a", ["a", "b"], Plan(instances=2, blocks=2)).run(list(QUICK[:2]), ex)
    excluded = store.excluded(run_id)
    assert {(m, i) for (_, m, i, _) in excluded} == {(spike[0], 1)}
    again = [s for s in ex.measured if (s.micro, s.instance) == spike[:2] and s.block > 2]
    assert len(again) == 2 * len(excluded)     # each excluded block measured anew, both targets


def test_adaptive_instances_stop_at_the_target_interval(tmp_path):
    store, run_id = new_run(tmp_path)
    quiet = FakeExecutor({"a": 1, "b": 1.05}, noise=0.004)
    sched = Scheduler(store, run_id, "a", ["a", "b"],
                      Plan(instances=2, blocks=4, max_instances=8, target_ci=0.03))
    sched.run([QUICK[0]], quiet)
    assert len(quiet.starts) == 2          # already narrow enough after the minimum

    store2, run2 = new_run(tmp_path / "n" if (tmp_path / "n").mkdir() is None else tmp_path)
    noisy = FakeExecutor({"a": 1, "b": 1.05}, noise=0.08, seed=3)
    Scheduler(store2, run2, "a", ["a", "b"],
              Plan(instances=2, blocks=4, max_instances=5, target_ci=0.01)).run([QUICK[0]], noisy)
    assert len(noisy.starts) == 5          # never narrow enough: stops at the ceiling


def test_the_time_budget_stops_adding_instances(tmp_path):
    store, run_id = new_run(tmp_path)
    noisy = FakeExecutor({"a": 1, "b": 1}, noise=0.08, seed=4)
    # 2 s per step, 8 steps per instance: 40 s of budget for the one pair is spent after 3 instances.
    Scheduler(store, run_id, "a", ["a", "b"], Plan(instances=2, blocks=4, max_instances=10, target_ci=0.001,
                                                   pair_budget_s=40)).run([QUICK[0]], noisy)
    assert len(noisy.starts) == 3


def test_a_resume_with_another_identity_is_refused_naming_the_key(tmp_path):
    from pgolab.errors import PgolabError
    store = Store(tmp_path / "s.sqlite")
    identity = {"options": {"modes": ("qps",), "blocks": 4}, "targets": {"a": "1" * 64}}
    store.create_or_resume_run("r", server="x", base="a", suite="quick", options=BenchOptions(), host=Host.this(),
                               identity=identity, command="one")
    store.create_or_resume_run("r", server="x", base="a", suite="quick", options=BenchOptions(), host=Host.this(),
                               identity=identity, command="two")       # the same: resumes
    changed = {"options": {"modes": ("qps",), "blocks": 4}, "targets": {"a": "2" * 64}}
    with pytest.raises(PgolabError, match=r"targets\.a differ") as err:
        store.create_or_resume_run("r", server="x", base="a", suite="quick", options=BenchOptions(), host=Host.this(),
                                   identity=changed, command="three")
    assert "stored '1111" in str(err.value)


class ConcurrentFakeExecutor(FakeExecutor):
    """Cost-like: may measure several targets at once; checks no target is measured twice at once."""
    mode = "cost"

    def __init__(self, speed, concurrency, fail_on=None):
        super().__init__(speed, noise=0.0)
        import threading
        self.concurrency, self.fail_on = concurrency, fail_on
        self.lock, self.in_flight, self.widest = threading.Lock(), set(), 0

    def measure(self, micro, step):
        import time
        with self.lock:
            assert step.label not in self.in_flight, f"{step.label} measured twice at once"
            self.in_flight.add(step.label)
            self.widest = max(self.widest, len(self.in_flight))
        try:
            time.sleep(0.02)
            if self.fail_on and step.label == self.fail_on[0] and step.block == self.fail_on[1]:
                raise RuntimeError("server died")
            with self.lock:
                self.measured.append(step)
            return Sample(step, {"cycles": 100 / self.speed[step.label]}, seconds=0.02)
        finally:
            with self.lock:
                self.in_flight.discard(step.label)


def test_rounds_hold_each_target_once_and_keep_the_order():
    from pgolab.measurement import Step
    from pgolab.schedule import rounds
    steps = [Step("cost", "m", 1, b, p, l) for b in (1, 2) for p, l in enumerate(block_order(["a", "b", "c"], 1, b))]
    groups = rounds(steps)
    assert [[s.label for s in g] for g in groups] == [["a", "b", "c"], ["c", "b", "a"]]
    assert [s for g in groups for s in g] == steps


def test_concurrent_steps_are_all_stored_once_in_planned_order(tmp_path):
    store, run_id = new_run(tmp_path)
    labels = ["a", "b", "c", "d"]
    ex = ConcurrentFakeExecutor({l: 1.0 for l in labels}, concurrency=2)
    sched = Scheduler(store, run_id, "a", labels, Plan(instances=1, blocks=3))
    sched.run([QUICK[0]], ex)
    stored = [(s.step.block, s.step.label) for s in store.samples(run_id)]
    planned = [(s.block, s.label) for s in sched.instance_steps("cost", QUICK[0], 1)]
    assert stored == planned and len(ex.measured) == 12
    assert ex.widest == 2               # two at once, never more


def test_a_failed_concurrent_step_keeps_the_rest_of_its_round_and_resumes(tmp_path):
    store, run_id = new_run(tmp_path)
    labels = ["a", "b", "c"]
    plan = Plan(instances=1, blocks=2)
    with pytest.raises(RuntimeError, match="server died"):
        Scheduler(store, run_id, "a", labels, plan).run([QUICK[0]], ConcurrentFakeExecutor(
            {l: 1.0 for l in labels}, concurrency=3, fail_on=("b", 2)))
    # Block 1 entirely, and block 2's other targets, were stored; b's block 2 was not.
    assert sorted((s.step.block, s.step.label) for s in store.samples(run_id)) == [
        (1, "a"), (1, "b"), (1, "c"), (2, "a"), (2, "c")]
    again = ConcurrentFakeExecutor({l: 1.0 for l in labels}, concurrency=3)
    Scheduler(store, run_id, "a", labels, plan).run([QUICK[0]], again)
    assert [(s.block, s.label) for s in again.measured] == [(2, "b")]
    assert len(store.samples(run_id)) == 6


def test_cost_jobs_is_not_part_of_a_runs_identity():
    from pgolab.fleet import BenchOptions
    one, two = BenchOptions(modes=("cost",), cost_jobs=1), BenchOptions(modes=("cost",), cost_jobs=2)
    assert one.identity() == two.identity() and "cost_jobs" in two.as_dict()
    assert BenchOptions(cost_scale=0.5).identity() != BenchOptions().identity()
