"""A report as data: its tables, charts, facts and notes. Every table is defined once (report/tables.py,
or a measure's own); render.py and charts.py only format what they are given."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import stats


@dataclass(frozen=True)
class Column:
    key: str
    title: str


@dataclass
class Table:
    key: str
    title: str
    columns: list[Column]
    rows: list[dict]          # column key -> str | int | float | stats.Estimate | None
    note: str = ""


@dataclass
class Chart:
    """One group's estimates of one figure, per microbenchmark and build."""
    key: str
    title: str
    figure: str
    micros: list[str]
    series: dict[str, list[stats.Estimate | None]]


@dataclass
class LineChart:
    """Levels against a numeric x per target (a thread sweep: queries per second against threads)."""
    key: str
    title: str
    x_label: str
    y_label: str
    xs: list[float]
    series: dict[str, list[float | None]]


@dataclass
class Report:
    title: str
    facts: list[str]
    tables: list[Table]
    notes: list[tuple[str, str]]
    charts: list[Chart | LineChart] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def table(self, key: str) -> Table:
        return next(t for t in self.tables if t.key == key)


def words(items: list) -> str:
    """How prose lists things: [2, 4, 8] -> '2, 4 and 8'."""
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
