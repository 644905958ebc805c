"""The measures a bench run can take, one object each (base.Measure); a new measure is one module
here and one line below."""

from __future__ import annotations

from ..errors import PgolabError
from .base import Measure
from .cost import COST
from .qps import QPS

MEASURES: dict[str, Measure] = {m.key: m for m in (QPS, COST)}


def measure(key: str) -> Measure:
    try:
        return MEASURES[key]
    except KeyError:
        raise PgolabError(f"unknown measure {key!r}", hint=f"use {', '.join(MEASURES)}")


def of_modes(modes) -> list[Measure]:
    return [measure(m) for m in modes]


def host_records(measures=None) -> set[str]:
    """The identity keys (dotted) that record the machine, not the method, of these measures (all by
    default): a finished run is compared across machines without them."""
    return {key for m in (MEASURES.values() if measures is None else measures) for key in m.host_record}


__all__ = ["MEASURES", "Measure", "host_records", "measure", "of_modes"]
