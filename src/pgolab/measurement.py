"""What a measurement is, independent of how it is taken: steps, samples, figures, executors.

A step is one target running one microbenchmark once, in block b of instance i
(an instance is one start of every target's server). An executor turns a step into
a sample: per-query figures such as QPS or instructions. The scheduler decides which
steps run in which order; executors only measure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .suite import Micro

MODES = ("qps", "cost")


@dataclass(frozen=True)
class Figure:
    """A per-query figure and how a ratio of it reads (> 1 always means the variant is better)."""
    key: str
    mode: str
    ratio_name: str          # the column title of its ratio
    unit: str
    higher_is_better: bool
    headline: bool = False   # shown in the per-build summary

    def ratio_sign(self) -> int:
        """+1: ratio = variant / base; -1: base / variant."""
        return 1 if self.higher_is_better else -1


# One table of every figure: the report, the statistics and the store all read it from here.
FIGURES: tuple[Figure, ...] = (
    Figure("qps", "qps", "rQPS", "queries/s", True, headline=True),
    Figure("cpu_us", "qps", "rCPU", "server CPU µs/query", False, headline=True),
    Figure("cycles", "cost", "rCost", "estimated cycles/query", False, headline=True),
    Figure("instructions", "cost", "rInstr", "instructions/query", False, headline=True),
    Figure("i1_misses", "cost", "rI1", "I1 misses/query", False, headline=True),
    Figure("d1_misses", "cost", "rD1", "D1 misses/query", False),
    Figure("ll_misses", "cost", "rLL", "LL misses/query", False),
    Figure("mispredicts", "cost", "rBr", "branch mispredictions/query", False),
)
FIGURES_BY_KEY = {f.key: f for f in FIGURES}


def figures(mode: str) -> list[Figure]:
    return [f for f in FIGURES if f.mode == mode]


def parse_modes(text: str) -> tuple[str, ...]:
    from .errors import PgolabError
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
