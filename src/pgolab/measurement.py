"""What a measurement is, independent of how it is taken: steps, samples, figures, executors.

A step is one target running one microbenchmark once, in block b of instance i
(an instance is one start of every target's server). An executor turns a step into
a sample: per-query figures such as QPS or instructions. The scheduler decides which
steps run in which order; executors only measure.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict, dataclass, field
from typing import Protocol

from .errors import PgolabError
from .stored import known_fields
from . import suite as suite_mod
from .suite import Micro


@dataclass(frozen=True)
class Figure:
    """A per-query figure and how a ratio of it reads (> 1 always means the variant is better)."""
    key: str
    mode: str
    ratio_name: str          # the column title of its ratio
    unit: str
    higher_is_better: bool
    headline: bool = False   # shown in the per-build summary
    median: bool = False     # the per-build table adds the median of its per-test ratios
    chart: bool = False      # drawn per group (the rest are in the tables)

    def ratio_sign(self) -> int:
        """+1: ratio = variant / base; -1: base / variant."""
        return 1 if self.higher_is_better else -1


# One table of every figure: the report, the statistics and the store all read it from here.
FIGURES: tuple[Figure, ...] = (
    Figure("qps", "qps", "rQPS", "queries/s", True, headline=True, median=True, chart=True),
    Figure("cpu_us", "qps", "rCPU", "server CPU µs/query", False, headline=True, chart=True),
    Figure("cycles", "cost", "rCost", "estimated cycles/query", False, headline=True, median=True, chart=True),
    Figure("instructions", "cost", "rInstr", "instructions/query", False, headline=True),
    Figure("i1_misses", "cost", "rI1", "I1 misses/query", False, headline=True),
    Figure("d1_misses", "cost", "rD1", "D1 misses/query", False),
    Figure("ll_misses", "cost", "rLL", "LL misses/query", False),
    Figure("mispredicts", "cost", "rBr", "branch mispredictions/query", False),
)
FIGURES_BY_KEY = {f.key: f for f in FIGURES}
MODES = tuple(dict.fromkeys(f.mode for f in FIGURES))   # each measure's key (measures/ holds the measures)
# What the report holds against each other to show how far the cost model carries: the model's
# estimate of time per query, and the clock's queries per second.
MODEL_FIGURE, CLOCK_FIGURE = FIGURES_BY_KEY["cycles"], FIGURES_BY_KEY["qps"]


def figures(mode: str) -> list[Figure]:
    return [f for f in FIGURES if f.mode == mode]


def parse_modes(text: str) -> tuple[str, ...]:
    modes = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise PgolabError(f"unknown measure {', '.join(bad) or text!r}", hint="use qps, cost or qps,cost")
    return modes


@dataclass(frozen=True)
class Step:
    mode: str
    micro: str               # suite key, group/name
    instance: int            # 1-based: the n-th start of the servers for this microbenchmark
    block: int               # 1-based within the instance
    position: int            # order within the block
    label: str


@dataclass
class Sample:
    step: Step
    values: dict[str, float]          # per-query figures, by Figure.key
    seconds: float                    # wall time the measurement took
    detail: dict = field(default_factory=dict)   # latency, raw counters, method
    command: str = ""
    output: str = ""


class Executor(Protocol):
    """Measures steps of one mode. start_instance (re)starts every target's server fresh.
    concurrency: how many steps of distinct targets it may measure at once (1 unless its
    figures cannot be disturbed by what runs beside them)."""
    mode: str
    concurrency: int

    def start_instance(self, micro: Micro, instance: int) -> None: ...
    def measure(self, micro: Micro, step: Step) -> Sample: ...
    def stop_instance(self) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class DataShape:
    """A published benchmark configuration, one option (`--profile-of NAME`)."""
    tables: int
    table_size: int
    threads: tuple[int, ...]
    source: str


DATA_SHAPES = {
    "small-server": DataShape(1, 30_000_000, (1,), "the LTO study's small servers: 1 table of 30M rows, 1 thread"),
    "medium-server": DataShape(8, 10_000_000, (12,), "the LTO study's 16-core server: 8 tables of 10M rows, 12 threads"),
}

# Bytes on disk per sysbench row, for the disk check before a load: PostgreSQL 15's sbtest1 of
# 100,000 rows took 22.1 MB of heap and 2.3 MB of primary key here (2026-11-26; the k index and
# the WAL come on top). An estimate for every server, rounded up.
BYTES_PER_ROW = 300


def data_shape(name: str) -> DataShape:
    try:
        return DATA_SHAPES[name]
    except KeyError:
        raise PgolabError(f"unknown --profile-of {name!r}", hint=f"use {' or '.join(DATA_SHAPES)}")


@dataclass
class BenchOptions:
    suite: str = "quick"
    modes: tuple[str, ...] = ("qps",)
    slice_seconds: float = 3.0     # one paired QPS slice
    instances: int = 2             # server starts per microbenchmark (QPS mode)
    blocks: int = 4                # paired blocks per instance (QPS mode)
    max_instances: int = 6         # ceiling when target_ci adds instances
    target_ci: float | None = None
    pair_budget_s: float | None = 120.0
    tables: int = 1
    table_size: int = 100_000
    threads: tuple[int, ...] = (1,)   # sysbench threads; several make a thread sweep
    prepared: bool = True
    warmup_seconds: float = 2.0    # the microbenchmark itself, after every start, unmeasured
    pin: bool = True               # server and sysbench on disjoint CPUs
    cost_scale: float = 1.0        # multiplies each microbenchmark's cost-mode event count
    cost_write_repeats: int = 3    # cost-mode blocks of a test that writes or reads what writes left
    cost_tolerance: float | None = None   # repeatability of one cost measurement (from the server recipe)
    # cost-mode servers measured at once (simulated counts do not disturb each other): one per CPU
    cost_jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    server_options: list[str] = field(default_factory=list)
    own_micros: tuple[str, ...] = ()   # the user's microbenchmark files (--micro), absolute paths
    engine: str = ""                   # the tables' storage engine ("": the server's default)

    # How the run is executed, not what it measures: a resume may change these.
    EXECUTION_ONLY = ("cost_jobs",)

    def as_dict(self) -> dict:
        return asdict(self)

    def identity(self) -> dict:
        identity = {k: v for k, v in self.as_dict().items() if k not in self.EXECUTION_ONLY}
        if len(self.threads) == 1:   # one count reads as runs stored before sweeps did, so they resume
            identity["threads"] = self.threads[0]
        if not self.engine:
            identity.pop("engine")     # the server's default: the key of runs before --engine
        # The user's files by name and content, not by path: the same statements continue a cost run
        # on another machine; an edited file is another experiment. None: the key of runs before it.
        identity.pop("own_micros")
        if self.own_micros:
            identity["own_micros"] = {m.name: hashlib.sha256(suite_mod.user_micro_path(m).read_bytes()).hexdigest()
                                      for m in suite_mod.user_micros(self.own_micros)}
        return identity

    def data_bytes(self) -> int:
        """About how much disk one copy of the loaded sysbench tables takes (BYTES_PER_ROW)."""
        return self.tables * self.table_size * BYTES_PER_ROW

    def micros(self) -> tuple[Micro, ...]:
        """The run's microbenchmarks in run order (each test at each thread count)."""
        return suite_mod.planned(self.suite, self.threads, self.own_micros)

    @classmethod
    def from_dict(cls, data: dict) -> "BenchOptions":
        """As stored with a run: keys an older pgolab did not have take their defaults; keys this one
        does not know are left out; JSON's lists become the tuples the fields hold."""
        values = known_fields(cls, data)
        if "modes" in values:
            values["modes"] = tuple(values["modes"])
        if "threads" in values:   # one int before thread sweeps
            threads = values["threads"]
            values["threads"] = tuple(threads) if isinstance(threads, (list, tuple)) else (int(threads),)
        if "own_micros" in values:
            values["own_micros"] = tuple(values["own_micros"])
        return cls(**values)
