"""Which step runs when: balanced orders, instances, adaptive stopping, outlier re-measurement.

For each microbenchmark the servers are started fresh `instances` times (an instance
pair that is a few per cent off for its whole life then shows up as variance, not as
an effect). Within an instance, `blocks` paired blocks run every target back to back;
the order alternates forward / reversed from block to block and from instance to
instance, so every target has the same mean position (A B | B A | A B ...).

After an instance, blocks whose paired ratio is an outlier (stats.outliers) are
excluded and re-measured on the same running servers; an instance with too few blocks
of its own to judge is judged against the spread of the run's other microbenchmarks. With a target interval
half-width, further instances are added until every variant's per-microbenchmark
interval is that narrow, the time budget is spent or max_instances is reached.
Everything is decided from the store, so a resumed run makes the same decisions
and never measures a stored step twice.

An executor whose figures do not depend on what else runs (cost mode: simulated counts)
says so with `concurrency` > 1: the steps are then measured in rounds of distinct targets,
that many at once, and stored in their planned order.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from . import stats
from .measurement import FIGURES_BY_KEY, Executor, Step, figures
from .store import Store
from .suite import Micro, key as micro_key


@dataclass(frozen=True)
class Plan:
    instances: int = 2                 # server starts per microbenchmark, at least
    blocks: int = 4                    # paired blocks per instance (even keeps orders balanced)
    max_instances: int = 2             # ceiling when a target interval is set
    target_ci: float | None = None     # e.g. 0.03: stop once every variant's half-width is ≤ 3 %
    pair_budget_s: float | None = None  # measured seconds per microbenchmark and target pair
    outlier_rounds: int = 2            # how many times an instance re-measures its outliers
    detect_outliers: bool = True
    write_blocks: int | None = None    # blocks for microbenchmarks whose cost depends on data state

    def blocks_for(self, micro: Micro) -> int:
        return self.write_blocks if micro.state_dependent and self.write_blocks else self.blocks

    def as_dict(self) -> dict:
        from dataclasses import asdict
        return asdict(self)


def start_order(labels: list[str], instance: int) -> list[str]:
    """Which server starts and warms up first: forward on odd instances, reversed on even. A first
    QPS run started and warmed them in one order every time, and the A/A copy (listed last) came
    out 1.116 [1.045, 1.192] over 4 tests: whatever the order does is now spread over instances."""
    return list(labels) if instance % 2 == 1 else list(reversed(labels))


def rounds(steps: list[Step]) -> list[list[Step]]:
    """Consecutive groups in which no target appears twice: one server measures one step at a time,
    and a target's steps keep their order."""
    out: list[list[Step]] = []
    for step in steps:
        if not out or any(s.label == step.label for s in out[-1]):
            out.append([])
        out[-1].append(step)
    return out


def block_order(labels: list[str], instance: int, block: int) -> list[str]:
    """Forward on even (instance + block), reversed on odd: balanced positions."""
    return list(labels) if (instance + block) % 2 == 0 else list(reversed(labels))


@dataclass
class Progress:
    total: int            # planned steps (adaptive instances and re-measures add to it)
    done: int = 0
    text: str = ""


class Scheduler:
    def __init__(self, store: Store, run_id: int, base: str, labels: list[str], plan: Plan,
                 on_step: Callable[[Progress], None] | None = None, progress: Progress | None = None):
        self.store, self.run_id, self.base, self.labels, self.plan = store, run_id, base, labels, plan
        self.on_step = on_step or (lambda p: None)
        self.progress = progress or Progress(0)   # shared when one run measures several modes

    # -- planning -----------------------------------------------------------
    def planned_steps(self, micro: Micro) -> int:
        return self.plan.instances * self.plan.blocks_for(micro) * len(self.labels)

    def instance_steps(self, mode: str, micro: Micro, instance: int) -> list[Step]:
        """The planned blocks of an instance, plus one replacement block per excluded one."""
        key = micro_key(micro)
        excluded = sum(1 for (m, k, i, _) in self.store.excluded(self.run_id) if (m, k, i) == (mode, key, instance))
        steps = []
        for block in range(1, self.plan.blocks_for(micro) + excluded + 1):
            for position, label in enumerate(block_order(self.labels, instance, block)):
                steps.append(Step(mode, key, instance, block, position, label))
        return steps

    # -- running ------------------------------------------------------------
    def run(self, micros: list[Micro], executor: Executor) -> None:
        self.progress.total += sum(self.planned_steps(m) for m in micros)
        for micro in micros:
            instance = 1
            while True:
                self.run_instance(micro, instance, executor)
                if self.enough(micro, instance, executor.mode):
                    break
                instance += 1
                self.progress.total += self.plan.blocks_for(micro) * len(self.labels)

    def run_instance(self, micro: Micro, instance: int, executor: Executor) -> None:
        missing = self._missing(executor.mode, micro, instance)
        self.progress.done += len(self.instance_steps(executor.mode, micro, instance)) - len(missing)
        if not missing:
            return
        executor.start_instance(micro, instance)
        try:
            self._measure(micro, missing, executor)
            for _ in range(self.plan.outlier_rounds if self.plan.detect_outliers else 0):
                if not self.flag_outliers(executor.mode, micro, instance):
                    break
                again = self._missing(executor.mode, micro, instance)
                self.progress.total += len(again)
                self._measure(micro, again, executor)
        finally:
            executor.stop_instance()

    def _missing(self, mode: str, micro: Micro, instance: int) -> list[Step]:
        return [s for s in self.instance_steps(mode, micro, instance) if not self.store.has(self.run_id, s)]

    def _measure(self, micro: Micro, steps: list[Step], executor: Executor) -> None:
        width = max(1, getattr(executor, "concurrency", 1))
        if width == 1:
            for step in steps:
                self._show([step])
                self._store(micro, executor.measure(micro, step))
        else:
            pool = ThreadPoolExecutor(width, thread_name_prefix=f"measure-{executor.mode}")
            try:
                for group in rounds(steps):
                    self._show(group)
                    self._measure_together(micro, group, executor, pool)
            except BaseException:
                # Do not wait for steps still running: the caller stops their servers, which ends them.
                pool.shutdown(wait=False, cancel_futures=True)
                raise
            pool.shutdown()
        self.on_step(self.progress)

    def _measure_together(self, micro: Micro, group: list[Step], executor: Executor,
                          pool: ThreadPoolExecutor) -> None:
        """Every finished sample of the round is stored before the first error is raised."""
        futures = [pool.submit(executor.measure, micro, step) for step in group]
        error: BaseException | None = None
        for future in futures:
            try:
                sample = future.result()
            except Exception as exc:
                error = error or exc
                continue
            self._store(micro, sample)
        if error is not None:
            raise error

    def _show(self, steps: list[Step]) -> None:
        first = steps[0]
        self.progress.text = (f"{first.mode} · {first.micro} · {' + '.join(s.label for s in steps)} · "
                              f"instance {first.instance} block {first.block}")
        self.on_step(self.progress)

    def _store(self, micro: Micro, sample) -> None:
        self.store.add(self.run_id, sample, micro.group)
        self.progress.done += 1

    # -- decisions from the store ---------------------------------------------
    def _excluded(self, mode: str) -> set[tuple[str, int, int]]:
        return {(k, i, b) for (m, k, i, b) in self.store.excluded(self.run_id) if m == mode}

    def flag_outliers(self, mode: str, micro: Micro, instance: int) -> int:
        """Exclude this instance's outlier blocks (any headline figure, any variant); their count."""
        key = micro_key(micro)
        judged = outlier_blocks(self.store, self.run_id, mode, self.base, self.labels, self._excluded(mode), [key])
        flagged = {b: reason for (_, i, b), reason in judged.items() if i == instance}
        for block, reason in flagged.items():
            self.store.exclude(self.run_id, mode, key, instance, block, reason)
        return len(flagged)

    def enough(self, micro: Micro, instance: int, mode: str) -> bool:
        plan = self.plan
        if instance < plan.instances:
            return False
        if plan.target_ci is None or instance >= plan.max_instances:
            return True
        key = micro_key(micro)
        if plan.pair_budget_s is not None:
            spent = sum(s.seconds for s in self.store.samples(self.run_id, mode, key))
            if spent >= plan.pair_budget_s * (len(self.labels) - 1):
                return True
        return self.widest_half_width(mode, key) <= plan.target_ci

    def widest_half_width(self, mode: str, key: str) -> float:
        """The widest per-microbenchmark 95 % half-width over the variants, on the mode's first
        figure, with the instance component pooled over everything measured so far."""
        figure = FIGURES_BY_KEY[figures(mode)[0].key]
        values = self.store.values(self.run_id, mode, figure.key)
        widest = 0.0
        for label in self.labels:
            if label == self.base:
                continue
            suite = stats.SuiteEstimates.of(stats.paired_observations(values, self.base, label,
                                                                      figure.ratio_sign(), self._excluded(mode)))
            if key not in suite.micros:
                return float("inf")
            half = suite.micro(key).half_width
            widest = max(widest, float("inf") if half is None else half)
        return widest


def outlier_blocks(store: Store, run_id: int, mode: str, base: str, labels: list[str],
                   excluded: set[tuple[str, int, int]], keys: list[str] | None = None) -> dict[tuple[str, int, int], str]:
    """Stored blocks (microbenchmark, instance, block) of `keys` (default: all) whose paired ratio
    stands out on any headline figure of any variant, with the first reason found. Each test is
    judged against the spread of the run's other microbenchmarks too (a short instance has little
    of its own)."""
    flagged: dict[tuple[str, int, int], str] = {}
    for figure in (f for f in figures(mode) if f.headline):
        values = store.values(run_id, mode, figure.key)
        for label in (l for l in labels if l != base):
            by_micro = stats.paired_observations(values, base, label, figure.ratio_sign(), excluded)
            residuals = {k: stats.instance_residuals(obs) for k, obs in by_micro.items()}
            for key in (keys if keys is not None else list(by_micro)):
                reference = [r for other, rs in residuals.items() if other != key for r in rs]
                for o, z in stats.outliers(by_micro.get(key, []), reference):
                    flagged.setdefault((key, o.instance, o.block), f"{figure.ratio_name} of {label}: robust z = {z:+.1f}")
    return flagged
