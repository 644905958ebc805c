"""Cost mode: per-query instructions, simulated cache misses and branch mispredictions.

Each server runs under valgrind's callgrind with cache and branch simulation, with a fixed cache
geometry so that figures compare across hosts (callgrind.py). Only statement execution is counted:
collection is toggled on inside the server's command function (MariaDB/MySQL `dispatch_command`,
else `do_command`; PostgreSQL's `PostgresMain`), so background threads and connection start-up add
nothing. Every target of a run counts the same function: the first candidate that every binary has
and that a probe query shows being entered (clang's LTO+PGO build of MariaDB inlines
`dispatch_command` into `do_command`, leaving an exported copy nothing calls). With none, the run
counts everything between zeroing and dumping the counters around the measured run (method
"window"); the method is recorded with every sample. How a run's counts are found, in one process
or in the backends it forked, is counting.py's.

The numbers are deterministic for a binary and its inputs (measured here: repeats agree within
0.1 % on instructions and I1 misses), so one instance and one block per microbenchmark suffice, and
servers stay up across microbenchmarks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import stats
from ..errors import PgolabError
from .. import clients
from ..measurement import BenchOptions, FIGURES, Sample, Step
from ..paths import chown_tree
from ..document import Column, Table
from ..runner import format_command, home_runner
from ..schedule import Plan
from ..suite import Micro
from ..toolchains import toolchain
from .base import Measure
from .callgrind import (CACHE_GEOMETRY, CYCLE_FORMULA, CYCLE_PRICES, MISPREDICT_CYCLES, Counts, function_names, guest_cpu, valgrind_version,
                        valgrind_wrapper)
from .counting import Counted, counting_for

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..store import StoredSample
    from ..targets.base import CostEntry

# A cost figure measured once carries its server recipe's repeatability bound, stored with the run
# (bench options); a run stored without one gets MariaDB's.
DEFAULT_TOLERANCE = 0.005


def method_name(entry_points: tuple[str, ...] | None, window_method: str) -> str:
    return "toggle-collect on " + ", ".join(entry_points) if entry_points else window_method


def require_counts(counts: Counts, label: str, micro: str, method: str, files: list[Path]) -> None:
    if counts.get("Ir") <= 0:
        raise PgolabError(
            f"cost of {micro} on {label}: callgrind counted no instructions ({method})",
            detail="files: " + (", ".join(str(f) for f in files) or "none appeared"),
            hint="the server never entered the counted function: check the binary has its symbols "
                 "(nm -C -D), or that sysbench ran; stored samples are kept, run the same command to resume")


def sample_from_counts(step: Step, counted: Counted, method: str, argv: list[str]) -> Sample:
    return Sample(step, counted.counts.per_query(counted.queries), counted.seconds,
                  detail={"method": method, "queries": counted.queries, "events": counted.counts.events},
                  command=format_command(argv, None, {}), output=counted.output)


def micro_events(micro: Micro, scale: float) -> tuple[int, int]:
    """Measured and warm-up events of a microbenchmark in cost mode."""
    events = max(int(round(micro.cost_events * scale)), 2)
    return events, max(events // 4, 2)


def entry_candidates(entry_points: dict[str, tuple["CostEntry", ...]],
                     names: dict[str, set[str]]) -> list[dict[str, "CostEntry"]]:
    """One method for every target, or their counts would not compare: rank by rank of each
    recipe's entry points, a candidate only if every binary has exactly one function it names."""
    candidates = []
    for rank in range(max(len(points) for points in entry_points.values())):
        chosen = {label: points[min(rank, len(points) - 1)] for label, points in entry_points.items()}
        if all(len(entry.matches(names[label])) == 1 for label, entry in chosen.items()):
            candidates.append(chosen)
    return candidates


def measured(a: "Analysis") -> bool:
    """Whether the run holds cost samples (its tables and notes are there only then)."""
    return any(k[0] == "instructions" for k in a.absolute)


def branch_term_table(a: "Analysis") -> Table | None:
    """How much the formula's price of a simulated misprediction moves each build's rCost: callgrind's
    predictor is a simple table, not a modern CPU's, and PGO can move mispredictions one way while
    instructions and misses go the other. Geometric means over the tests of the per-test ratio of
    the estimate with and without that term, beside the clock's server CPU where the run has it."""
    def ratio(label: str, micro: str, penalty: float) -> float | None:
        def estimate(of: str) -> float | None:
            cycles, mispredicts = a.absolute.get(("cycles", micro, of)), a.absolute.get(("mispredicts", micro, of))
            return None if cycles is None or mispredicts is None else cycles - penalty * mispredicts
        base, build = estimate(a.base), estimate(label)
        return base / build if base and build else None

    rows = []
    for label in a.labels:
        pairs = [(ratio(label, m, 0), ratio(label, m, MISPREDICT_CYCLES)) for m in a.micros]
        pairs = [(w, wo) for w, wo in pairs if w and wo]
        if not pairs:
            continue
        with_term = float(np.exp(np.mean([np.log(w) for w, _ in pairs])))
        without = float(np.exp(np.mean([np.log(wo) for _, wo in pairs])))
        clock = a.suites.get(("cpu_us", label))
        rows.append({"build": label, "tests": len(pairs), "with": with_term, "without": without,
                     "clock": clock.summary().value if clock else None})
    if not rows:
        return None
    return Table("cost_branch_term", "Estimated cycles with and without the misprediction term",
                 [Column("build", "build"), Column("tests", "tests"),
                  Column("with", f"rCost (model, {MISPREDICT_CYCLES}·mispredictions)"),
                  Column("without", "rCost without mispredictions"), Column("clock", "rCPU (clock)")], rows,
                 note="Geometric means over the tests of base/build per-query estimates; no interval (a "
                      "description of the model, not an estimate). rCPU is the wall clock's server CPU per query "
                      "from the same run, where it measured QPS.")


PART_NAMES = {"instructions": "instructions", "i1_misses": "I1 misses", "d1_misses": "D1 misses",
              "ll_misses": "LL misses", "mispredicts": "mispredictions"}


# A part that spent more than this many points of the base's cycles is named as what held a build back.
ADDED_POINTS = 0.5


@dataclass(frozen=True)
class CycleParts:
    """Over some tests, what a build saved of the base's estimated cycles per query, in all and per
    part of the cycle formula (a part's price times its events saved), and what each part was of the
    base's cycles; fractions of the base's cycles, the mean over the tests, each test weighted alike."""
    tests: int
    saved: float
    saved_by_part: dict[str, float]     # sums to saved
    base_share: dict[str, float]        # sums to 1

    def held_back_by(self) -> str:
        """The part that spent more than the base, if one did by ADDED_POINTS or more; else the
        largest part of the build's own cycles, which bounds what is left to save."""
        added = min(self.saved_by_part, key=self.saved_by_part.get)
        if -100 * self.saved_by_part[added] >= ADDED_POINTS:
            return f"{PART_NAMES[added]}: {-100 * self.saved_by_part[added]:.1f} points more"
        left = {k: self.base_share[k] - self.saved_by_part[k] for k in self.base_share}
        largest = max(left, key=left.get)
        return f"{PART_NAMES[largest]}: {100 * left[largest]:.0f} % of the base's cycles left"


def cycle_parts(a: "Analysis", label: str, micros: list[str]) -> CycleParts | None:
    """`label` against the base over `micros` (None: no test has every figure of both)."""
    per_test = []
    for m in micros:
        base = {k: a.absolute.get((k, m, a.base)) for k in ("cycles", *CYCLE_PRICES)}
        build = {k: a.absolute.get((k, m, label)) for k in ("cycles", *CYCLE_PRICES)}
        if None in (*base.values(), *build.values()) or not base["cycles"]:
            continue
        per_test.append((1 - build["cycles"] / base["cycles"],
                         {k: p * (base[k] - build[k]) / base["cycles"] for k, p in CYCLE_PRICES.items()},
                         {k: p * base[k] / base["cycles"] for k, p in CYCLE_PRICES.items()}))
    if not per_test:
        return None
    def mean(parts: list[dict[str, float]]) -> dict[str, float]:
        return {k: float(np.mean([p[k] for p in parts])) for k in CYCLE_PRICES}
    return CycleParts(len(per_test), float(np.mean([t[0] for t in per_test])), mean([t[1] for t in per_test]),
                      mean([t[2] for t in per_test]))


def cycle_parts_table(a: "Analysis") -> Table | None:
    """Where each build's saving in estimated cycles comes from, per group and over the suite, part by
    part of the cycle formula, and what held it back in the model."""
    rows = []
    for label in a.labels:
        for group in [*a.groups(), "all"]:
            parts = cycle_parts(a, label, a.micros if group == "all" else a.micros_of(group))
            if parts is None:
                continue
            rows.append({"build": label, "group": group, "tests": parts.tests, "saved": 100 * parts.saved,
                         **{k: 100 * v for k, v in parts.saved_by_part.items()},
                         **{f"{k}_share": 100 * v for k, v in parts.base_share.items()},
                         "held_back": parts.held_back_by()})
    if not rows:
        return None
    return Table("cost_parts", "Where the estimated cycles were saved, part by part of the formula",
                 [Column("build", "build"), Column("group", "group"), Column("tests", "tests"),
                  Column("saved", "saved, points of the base's cycles"),
                  *[Column(k, f"{PART_NAMES[k]} ({price}·) saved") for k, price in CYCLE_PRICES.items()],
                  *[Column(f"{k}_share", f"{PART_NAMES[k]}, % of the base's") for k in CYCLE_PRICES],
                  Column("held_back", "held back by")], rows,
                 note="Per test, each part's price times the events per query the build saved against the base, "
                      "in points (percent) of the base's estimated cycles per query (negative: the build spent "
                      "more there), and what each part is of the base's cycles; the mean over the group's tests, "
                      "so the parts add up to the saving, 1 - build/base (rCost 1.25 is 20 points saved). Held "
                      f"back by: a part that spent {ADDED_POINTS} points or more than the base, else the largest "
                      "part of what the build still spends, which bounds what is left to save. A description of "
                      "the model, no interval; in a merged run a build is set against the base's figures averaged "
                      "over the shards, not its own shard's base (one binary, or within the anchor's bound).")


class CostExecutor:
    """Measures steps under callgrind; servers stay up across microbenchmarks. Counts are simulated,
    so several servers may be measured at once (options.cost_jobs): each uses its own core."""
    mode = "cost"

    def __init__(self, fleet, options: BenchOptions, labels: list[str]):
        self.fleet, self.options, self.labels = fleet, options, labels
        self.concurrency = max(1, options.cost_jobs)
        insts = {label: fleet.targets[label].installation for label in labels}
        symbols = fleet.runner("symbols")
        names = {label: function_names(i.server_binary, symbols) for label, i in insts.items()}
        # Kept only if every server enters it (probed at the first start); with none left the whole
        # run uses the window method.
        self.candidates = entry_candidates({label: i.cost_entry_points for label, i in insts.items()}, names)
        self.probed = False
        self.entry_points: dict[str, tuple[str, ...] | None] = {}
        self._use_candidate()
        self.counting = {label: counting_for(i.forks_backends) for label, i in insts.items()}
        self.out_dirs: dict[str, Path] = {}
        for label, inst in insts.items():
            out = fleet.workdir / "callgrind" / label
            out.mkdir(parents=True, exist_ok=True)
            if inst.run_as:
                chown_tree(out, inst.run_as)
            self.out_dirs[label] = out

    def _use_candidate(self) -> None:
        """The next candidate entry for every target, or the window method when none is left."""
        chosen = self.candidates.pop(0) if self.candidates else {}
        self.entry_points = {label: ((chosen[label].toggle,) if label in chosen else None) for label in self.labels}

    def method(self, label: str) -> str:
        return method_name(self.entry_points[label], self.counting[label].window_method())

    def start_instance(self, micro: Micro, instance: int) -> None:
        self._start_servers()
        while not self.probed:
            not_entered = self._labels_not_entering_toggle()
            if not not_entered:
                self.probed = True
                break
            self.fleet.runner("callgrind").note(
                f"cost: {', '.join(not_entered)} never entered {self.method(not_entered[0])}; next candidate")
            self.fleet.stop()
            self._use_candidate()
            self._start_servers()

    def _labels_not_entering_toggle(self) -> list[str]:
        """A probe query on each server with a toggle that can be probed: did callgrind count anything?"""
        return [label for label in self.labels
                if self.entry_points[label] is not None and self.counting[label].can_probe
                and not self.counting[label].entered(self.fleet.servers[label], self.out_dirs[label])]

    def _start_servers(self) -> None:
        for label in self.labels:
            server = self.fleet.servers.get(label)
            if server is None or server.proc is None or server.proc.poll() is not None:
                inst = self.fleet.targets[label].installation
                server = self.fleet.start(label, self.mode,
                                          valgrind_wrapper(self.out_dirs[label], self.entry_points[label]),
                                          inst.valgrind_options(), timeout=900)
                self.counting[label].started(server)

    def measure(self, micro: Micro, step: Step) -> Sample:
        server = self.fleet.servers[step.label]
        events, warmup = micro_events(micro, self.options.cost_scale)
        client = clients.of(micro)
        warm_argv = client.argv(micro, server, self.options, events=warmup, seed=step.block)
        argv = client.argv(micro, server, self.options, events=events, seed=step.block)
        counted = self.counting[step.label].count(server, self.out_dirs[step.label], warm_argv, argv,
                                                  f"{client.name} {step.micro} (cost)", client.parse)
        method = self.method(step.label)
        require_counts(counted.counts, step.label, step.micro, method, counted.files)
        server.check_alive()
        server.runner.note(f"cost of {step.micro}: {counted.counts.describe()} over {counted.queries} queries "
                           f"({', '.join(f.name for f in counted.files)})")
        return sample_from_counts(step, counted, method, argv)

    def stop_instance(self) -> None:
        pass   # deterministic figures: one server life serves every microbenchmark

    def close(self) -> None:
        self.fleet.stop()


class CostMeasure(Measure):
    key = "cost"
    title = "cost"
    method_column = Column("cost_method", "cost counted by")
    host_record = ("cost_method.valgrind", "cost_method.guest_cpu")

    def plan(self, options: BenchOptions) -> Plan:
        # Read-only statements cost the same every time (MariaDB: repeats within 0.1 %): one
        # measurement. Writes, and reads of what they left, depend on how background threads
        # (InnoDB purge, autovacuum) interleaved: two servers of one binary differed by up to 8 %
        # (MariaDB update-index) and 14 % (PostgreSQL point-2): repeats, and an interval from them.
        return Plan(instances=1, blocks=1, max_instances=1, detect_outliers=False,
                    write_blocks=options.cost_write_repeats)

    def executor(self, fleet, options: BenchOptions, labels: list[str]) -> CostExecutor:
        return CostExecutor(fleet, options, labels)

    def unavailable(self, targets: list) -> dict[str, str]:
        # valgrind 3.19 has no AVX-512: callgrind dies with SIGILL where a -march=native build on an
        # AVX-512 CPU runs such code (seen on this kind of machine). Left out before the run, not mid-run.
        return {t.label: f"built with -march=native on a CPU with AVX-512 ({', '.join(t.description.native_avx512)}), "
                         "which valgrind's callgrind cannot run"
                for t in targets if getattr(t.description, "native_avx512", None)}

    def variant_unavailable(self, variant) -> str | None:
        # The compiler says what -march=native turns on here, before anything is built.
        if variant.native and (avx512 := toolchain(variant.compiler).native_avx512()):
            return f"-march=native enables {', '.join(avx512)} here, which valgrind's callgrind cannot run"
        return None

    def identity(self) -> dict:
        # The simulation, not the machine: a cost run continues on any host with the same valgrind
        # presenting the same processor to glibc.
        method = self.method_identity()["cost_method"]
        return {"cost_method": {**method, "valgrind": valgrind_version(home_runner("valgrind-version")),
                                "guest_cpu": guest_cpu(home_runner("valgrind-guest-cpu"))}}

    def method_identity(self) -> dict:
        return {"cost_method": {"cache_geometry": CACHE_GEOMETRY, "cycles": CYCLE_FORMULA}}

    def tolerance(self, options: BenchOptions) -> float:
        return options.cost_tolerance or DEFAULT_TOLERANCE

    def noise_lines(self, a: "Analysis", options: BenchOptions) -> list[str]:
        # One instance per test: its repeats are the base's samples of that instance.
        cost = [stats.cv(v) for v in a.base_by_instance.get("instructions", {}).values() if len(v) > 1]
        if not cost:
            return []
        return [f"Cost: repeated measurements of the base's instructions per query vary with a CV of "
                f"{np.median(cost) * 100:.2f}% (median; max {max(cost) * 100:.2f}%)."]

    def comparisons_caveat(self, options: BenchOptions) -> str:
        return (f"Cost intervals are a bound, not an estimate: the recipe's ±{self.tolerance(options) * 100:.1f}% "
                "repeatability bound (an assumption from earlier runs, not measured by this one) plus the repeats' "
                "own variance, with no degrees of freedom to speak of; on tests that write, or read what writes "
                "left, two servers' states can differ by more than that bound.")

    def tables(self, a: "Analysis") -> list[Table]:
        figs = [f for f in FIGURES if f.mode == self.key]
        if not measured(a):
            return []
        columns = [Column("group", "group"), Column("micro", "microbenchmark"), Column("target", "target")]
        columns += [Column(f.key, f.unit) for f in figs]
        rows = []
        for micro in a.micros:
            for label in [a.base, *a.labels]:
                if ("instructions", micro, label) not in a.absolute:
                    continue
                row = {"group": a.group_of[micro], "micro": micro.split("/", 1)[1], "target": label}
                row |= {f.key: round(a.absolute.get((f.key, micro, label), float("nan")), 1) for f in figs}
                rows.append(row)
        return [Table("cost", "Cost per query (callgrind)", columns, rows, note=CYCLE_FORMULA),
                *filter(None, [cycle_parts_table(a), branch_term_table(a)])]

    def concurrency_line(self, options: BenchOptions, cores: int | None) -> str:
        # valgrind runs one thread at a time (its big lock): the counts are the work of the statements
        # of every thread, with whatever waiting the serialisation makes, not a contention of CPUs.
        return ("Cost: valgrind runs a server's threads one at a time, so a count at several threads is the "
                "work their statements did, interleaved, not contention for CPUs.")

    def notes(self, a: "Analysis") -> list[tuple[str, str]]:
        if not measured(a):
            return []
        return [("Cost mode", f"Server under valgrind callgrind with cache and branch simulation "
                              f"({' '.join(CACHE_GEOMETRY)}), a fixed number of events per microbenchmark "
                              f"after a warm-up of a quarter as many; {CYCLE_FORMULA}. rCost is base/variant "
                              f"of estimated cycles per query: a model (callgrind's simulated caches and branch "
                              f"predictor, a fixed price per event), the same on every machine, so a build it finds "
                              f"'cheaper' is not thereby faster on any one of them"
                              + ("; the table of the cost model against the wall clock says how far it carried "
                                 "in this run." if any(not a.is_model(f) for f in a.present()) else "."))]

    def methods(self, samples: list["StoredSample"]) -> dict[str, str]:
        methods: dict[str, str] = {}
        for s in samples:
            if s.step.mode == self.key:
                methods.setdefault(s.step.label, s.detail.get("method", ""))
        return methods


COST = CostMeasure()
