"""Parsing sysbench's final report (1.0.x 'General statistics' and 1.1 'Throughput:')."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field


@dataclass
class SysbenchResult:
    qps: float
    tps: float
    seconds: float
    queries: int
    transactions: int
    errors: int = 0
    reconnects: int = 0
    latency_ms: dict[str, float] = field(default_factory=dict)   # min avg max p95 (and p50/p99 from a histogram)
    fatal: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


class SysbenchParseError(ValueError):
    pass


_NUM = r"([0-9]+(?:\.[0-9]+)?)"


def _find(pattern: str, text: str, cast=float, default=None):
    m = re.search(pattern, text, flags=re.M)
    if not m:
        return default
    return cast(m.group(1))


def _histogram_percentiles(text: str) -> dict[str, float]:
    """p50/p99 from `--histogram=on` output: 'value  |**** count' rows."""
    rows = re.findall(r"^\s*" + _NUM + r"\s+\|\**\s+(\d+)\s*$", text, flags=re.M)
    if not rows:
        return {}
    values = [(float(v), int(c)) for v, c in rows]
    total = sum(c for _, c in values)
    out = {}
    for name, q in (("p50", 0.50), ("p99", 0.99)):
        need, seen = q * total, 0
        for value, count in values:
            seen += count
            if seen >= need:
                out[name] = value
                break
    return out


def parse(text: str) -> SysbenchResult:
    """The measurements of one sysbench run; raises SysbenchParseError when there are none."""
    fatal = [line.strip() for line in text.splitlines() if line.lstrip().startswith("FATAL")]
    queries = _find(r"^\s*queries:\s+(\d+)", text, int)
    qps = _find(r"^\s*queries:\s+\d+\s+\(" + _NUM + r" per sec\.\)", text)
    transactions = _find(r"^\s*transactions:\s+(\d+)", text, int)
    tps = _find(r"^\s*transactions:\s+\d+\s+\(" + _NUM + r" per sec\.\)", text)
    seconds = _find(r"^\s*total time:\s+" + _NUM + r"s", text)
    if seconds is None:   # sysbench 1.1: Throughput: / time elapsed:
        seconds = _find(r"^\s*time elapsed:\s+" + _NUM + r"s", text)
    if tps is None:
        tps = _find(r"^\s*events/s \(eps\):\s+" + _NUM, text)
        events = _find(r"^\s*total number of events:\s+(\d+)", text, int)
        transactions = transactions if transactions is not None else events
    if qps is None or seconds is None:
        raise SysbenchParseError("no final report in sysbench output" + (f": {fatal[0]}" if fatal else ""))
    latency = {}
    for key, label in (("min", "min"), ("avg", "avg"), ("max", "max"), ("p95", r"95th percentile")):
        value = _find(r"^\s*" + label + r":\s+" + _NUM, text)
        if value is not None:
            latency[key] = value
    latency.update(_histogram_percentiles(text))
    return SysbenchResult(
        qps=qps, tps=tps or 0.0, seconds=seconds, queries=queries or 0, transactions=transactions or 0,
        errors=_find(r"^\s*ignored errors:\s+(\d+)", text, int, 0),
        reconnects=_find(r"^\s*reconnects:\s+(\d+)", text, int, 0),
        latency_ms=latency, fatal=fatal)
