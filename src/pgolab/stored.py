"""Reading a stored dataclass back (build.json, a run's options, host and targets, a profile file):
an older pgolab's record lacks fields, which take their defaults; a newer one's has fields this one
does not know, which are left out. The version check that refuses a newer format is each format's."""

from __future__ import annotations

from dataclasses import fields


def known_fields(cls, data: dict) -> dict:
    """The items of `data` that the dataclass `cls` has fields for."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}
