"""The `ProfileTool` interface, and what every profile kind shares: raw-file statistics, the
checks that a training wrote a profile and that a build used it.

A tool knows where raw files land and how they are named, the flags that make and use them,
how to send an instrumented program's files elsewhere, how to merge them, what digest an
optimized build depends on, how to prove the build used them, and per-function weights for
`pgolab profile-check`. Build code asks the variant's tool; it never switches on a compiler.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

from ..errors import PgolabError
from ..runner import Runner
from .relocation import Relocation


@dataclass
class RawProfileStats:
    files: int
    bytes: int

    def describe(self) -> str:
        return f"{self.files} raw profile files, {self.bytes / 1024:.0f} KiB"


@dataclass
class ConsumptionCheck:
    method: str
    objects: int
    with_profile: int
    mismatched: int

    def describe(self) -> str:
        return (f"{self.with_profile} of {self.objects} objects compiled with profile data "
                f"({self.mismatched} functions changed since the profile was written); checked by {self.method}")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ProfileMatch:
    """How much of a profile a compile could apply: the functions the profile holds, those the
    compiler reported as changed since (their counts are dropped), and those no longer in the tree
    (clang's functions of internal linkage whose file, or C name, is gone: never compared, so never
    reported).
    A function of external linkage that is gone is not counted: no compile sees it."""
    functions: int
    mismatched: int
    absent: int = 0

    @property
    def share(self) -> float:
        return max(0.0, 1 - (self.mismatched + self.absent) / self.functions) if self.functions else 0.0

    def describe(self) -> str:
        return (f"{self.share * 100:.1f}% of the profile's {self.functions} functions apply "
                f"({self.mismatched} changed since it was trained"
                + (f", {self.absent} no longer in this tree" if self.absent else "") + ")")

    def as_dict(self) -> dict:
        return {**asdict(self), "share": round(self.share, 4)}


class ProfileTool(Protocol):
    name: str
    names_by_file: bool   # does the profile name functions by their source file (a tree's path)?
    raw_pattern: str
    weights_method: str   # how function_weights counts, for reports
    runtime_error: str | None   # what the profile runtime writes to the server's log when a write fails

    def generate_flags(self, profile_dir: Path, build_dir: Path) -> list[str]: ...
    def use_flags(self, profile_dir: Path, build_dir: Path) -> list[str]: ...
    def redirect_env(self, compiled_dir: Path, target_dir: Path) -> dict[str, str]: ...
    def merge(self, profile_dir: Path, runner: Runner, first: Path | None = None) -> dict:
        """The raw files in profile_dir into the profile a build reads; `first`: the profile folder
        a context-sensitive training's counters complete."""
    def read_files(self, profile_dir: Path) -> list[Path]:
        """The merged profile's files, those an optimized compile reads (what `profile export` ships)."""
    def digest(self, profile_dir: Path) -> str: ...
    def check_used(self, build_dir: Path, profile_dir: Path, build_log: Path) -> ConsumptionCheck: ...
    def profile_functions(self, profile_dir: Path, runner: Runner) -> int:
        """How many functions the profile holds counts for (a stale profile's match share's base)."""
    def relocate(self, profile_dir: Path, tree: Path, recorded_root: str, runner: Runner,
                 build_dir: Path, write: bool = True) -> Relocation:
        """The profile's names by file moved onto `tree` built in `build_dir`, in place (write=False:
        only planned); what moved (profiles/relocation.py)."""
    def function_weights(self, profile_dir: Path, build_dir: Path, runner: Runner,
                         scratch: Path) -> dict[str, int]: ...
    def write_function_order(self, profile_dir: Path, out: Path, runner: Runner) -> "FunctionOrder":
        """The order the training first ran the functions in (temporal profile) written to `out` for
        the linker (the `_order` axis; only a tool whose profile records it)."""
    def overlap_figure(self, training: Path, benchmark: Path, runner: Runner) -> str | None: ...


@dataclass
class FunctionOrder:
    """A function order written from a temporal profile (the `_order` axis): its file, how many
    functions it places, and the traces it came from (kept of seen: the profile keeps a sample)."""

    file: Path
    functions: int
    traces_kept: int
    traces_seen: int

    def describe(self) -> str:
        return (f"{self.functions} functions from {self.traces_kept} temporal traces "
                f"(of {self.traces_seen} processes)")

    def as_dict(self) -> dict:
        return {"file": str(self.file), "functions": self.functions, "traces_kept": self.traces_kept,
                "traces_seen": self.traces_seen}


def files_digest(files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def raw_stats(profile_dir: Path, tool: ProfileTool) -> RawProfileStats:
    files = [p for p in profile_dir.rglob(tool.raw_pattern) if p.is_file()]
    return RawProfileStats(len(files), sum(p.stat().st_size for p in files))


def require_raw_profiles(profile_dir: Path, tool: ProfileTool, error_log: Path | None = None) -> RawProfileStats:
    # A process whose counters could not be written leaves the others' files: the profile would look
    # whole and miss that process's share.
    failed = [line for line in log_text(error_log).splitlines() if tool.runtime_error in line] \
        if error_log is not None and tool.runtime_error else []
    if failed:
        raise PgolabError(f"the training server's profile runtime reported errors ({len(failed)} lines), the first: "
                          f"{failed[0].strip()}",
                          log=error_log, hint="the profile would miss those processes' counts; the error log "
                                              "says which files; fix the cause and build again")
    stats = raw_stats(profile_dir, tool)
    if stats.files == 0 or stats.bytes == 0:
        raise PgolabError(
            f"the training run wrote no profile ({stats.describe()} in {profile_dir})",
            log=error_log,
            hint="the server must exit through its own shutdown; check that it was not killed, "
                 "that the profile directory is writable by the server's user, and the error log")
    return stats


def require_used(check: ConsumptionCheck, build_log: Path) -> ConsumptionCheck:
    if check.objects == 0 or check.with_profile == 0:
        raise PgolabError(f"the optimized build did not use the profile: {check.describe()}",
                          log=build_log,
                          hint="the instrumented and optimized builds must come from the same source and flags; "
                               "delete the variant's folder and build again")
    return check


def object_files(build_dir: Path) -> list[Path]:
    return [p.relative_to(build_dir) for p in build_dir.rglob("*.o") if p.is_file()]


def log_text(path: Path, limit: int | None = None) -> str:
    """A log's text ("" without one); with a limit, its last `limit` bytes (a long build's log)."""
    if not path.exists():
        return ""
    if limit is None:
        return path.read_text(errors="replace")
    return path.read_bytes()[-limit:].decode(errors="replace")


def int_after(pattern: str, text: str, default: int | None = 0) -> int | None:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else default
