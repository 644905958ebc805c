"""Sealing a merged profile: the raw files as merged are digested, and a build that reads the
profile refuses it if counters were written since (a server of an earlier, killed run kept
writing), forgetting the training so that the next run repeats it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PgolabError
from .base import ProfileTool

if TYPE_CHECKING:
    from ..phases import PhaseState

SEAL = ".merged-digest"


def raw_digest(profile_dir: Path, tool: ProfileTool) -> str:
    files = sorted(p for p in profile_dir.rglob(tool.raw_pattern) if p.is_file())
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(profile_dir)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def seal(profile_dir: Path, tool: ProfileTool) -> str:
    """Called by a merge: the raw files as merged. Counters written later are detected."""
    digest = raw_digest(profile_dir, tool)
    (profile_dir / SEAL).write_text(digest + "\n")
    return digest


def holds_sealed(profile_dir: Path, tool: ProfileTool, sealed: str | None) -> bool:
    """Whether the folder holds what a merge recorded as `sealed` (its record's digest, which the
    merge also wrote into the folder): nothing written since. No recorded seal holds nothing."""
    return sealed is not None and raw_digest(profile_dir, tool) == sealed


def require_sealed(profile_dir: Path, tool: ProfileTool) -> None:
    """Refuse a profile that received counters after its merge (a server of an earlier, killed run
    kept writing). A folder merged before seals existed is sealed as it is now."""
    path = profile_dir / SEAL
    if not path.exists():
        seal(profile_dir, tool)
        return
    if not holds_sealed(profile_dir, tool, path.read_text().strip()):
        raise PgolabError(f"counters were written to {profile_dir} after its profile was merged",
                          hint="a server of an earlier run kept writing; the training is repeated when you "
                               "run the same command again")


def sealed_digest(profile_dir: Path, tool: ProfileTool, state: "PhaseState", retrain_from: str) -> str:
    """The digest a build reads its profile by, after checking nothing wrote to it since its
    merge; if something did, the phases of `state` from `retrain_from` on (the training) are
    forgotten so that the next run repeats them."""
    try:
        require_sealed(profile_dir, tool)
    except PgolabError:
        state.forget_from(retrain_from, list(state.phases))
        raise
    return tool.digest(profile_dir)
