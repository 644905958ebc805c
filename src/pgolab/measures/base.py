"""What a measure is: one object per way of measuring (QPS slices, callgrind cost).

A measure owns everything that differs between measures: its figures (from the one figure table),
how the scheduler plans it, its executor, what a resumed run must match beyond the options, the
repeatability bound its estimator adds, and what the report says of it (noise, extra tables,
notes). bench, report and the CLI ask the measure; none of them names one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..measurement import BenchOptions, Executor, Figure, figures
from ..document import Column, Table
from ..schedule import Plan

if TYPE_CHECKING:
    from ..analysis import Analysis
    from ..store import StoredSample


class Measure:
    key: str = ""          # the mode name a user types and the store keeps (--measure qps,cost)
    title: str = ""        # how the report names it
    # Its figures belong to the machine that took them (wall clock): a run that measures it names the
    # machine in its identity and continues only there; a run of simulated figures continues anywhere.
    machine_bound: bool = False
    # The dotted keys of its identity() that record the machine its method ran on, not the method: a
    # finished run is read on another machine whatever they say (a resume still compares them).
    host_record: tuple[str, ...] = ()

    @property
    def figures(self) -> list[Figure]:
        return figures(self.key)

    def plan(self, options: BenchOptions) -> Plan:
        raise NotImplementedError

    def executor(self, fleet, options: BenchOptions, labels: list[str]) -> Executor:
        raise NotImplementedError

    def unavailable(self, targets: list) -> dict[str, str]:
        """The targets this measure cannot measure, by label, each with the reason (one line): the run
        measures the rest, and the report says which and why. Decided from the targets' own records
        (BenchTarget or StoredTarget), so a resumed run and a report make the same decision."""
        return {}

    def variant_unavailable(self, variant) -> str | None:
        """Why this measure cannot measure any build of `variant` on this machine, known before it is
        built (None: it can); a matrix does not build a variant no measure of its run can measure."""
        return None

    def identity(self) -> dict:
        """What a resumed run must match beyond the options (a cost method, say)."""
        return {}

    def method_identity(self) -> dict:
        """identity() without its host_record keys, found without asking the machine anything."""
        return self.identity()

    def tolerance(self, options: BenchOptions) -> float | None:
        """A repeatability bound the estimator adds to every interval (None: the repeats say it all)."""
        return None

    def noise_lines(self, a: "Analysis", options: BenchOptions) -> list[str]:
        return []

    def facts(self, samples: list["StoredSample"]) -> list[str]:
        """Lines for the report's head: the conditions this measure's samples were taken in."""
        return []

    def concurrency_line(self, options: BenchOptions, cores: int | None) -> str:
        """How this measure ran more than one sysbench thread on the run's machine (`cores` CPUs)."""
        return ""

    def comparisons_caveat(self, options: BenchOptions) -> str:
        """What the multiple-comparisons note must add about this measure's intervals."""
        return ""

    def tables(self, a: "Analysis") -> list[Table]:
        return []

    def notes(self, a: "Analysis") -> list[tuple[str, str]]:
        return []

    # The targets table's column naming how each target was measured ("cost counted by").
    method_column: Column | None = None

    def methods(self, samples: list["StoredSample"]) -> dict[str, str]:
        return {}


