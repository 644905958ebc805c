"""The phase engine: run a chain of named phases, each recorded with the digest of its inputs.

A phase's digest chains from the previous phase's, so a changed input re-runs that phase and
every phase after it; a re-run skips every phase whose recorded digest still matches. An
interrupted phase keeps the seconds it had spent, and its resumed run adds to them. The engine
knows nothing of compilers or servers: build modules hand it `Phase` objects.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol


class Reporter(Protocol):
    def phase_started(self, name: str, description: str) -> None: ...
    def phase_skipped(self, name: str, description: str) -> None: ...
    def phase_finished(self, name: str, seconds: float) -> None: ...
    def progress(self, done: int, total: int) -> None: ...
    def message(self, text: str) -> None: ...


class QuietReporter:
    def phase_started(self, name, description): pass
    def phase_skipped(self, name, description): pass
    def phase_finished(self, name, seconds): pass
    def progress(self, done, total): pass
    def message(self, text): pass


class PrefixedReporter:
    """Shows the phases of a nested build (the shared instrumented build) under a prefix."""

    def __init__(self, prefix: str, inner: Reporter):
        self.prefix, self.inner = prefix, inner

    def phase_started(self, name, description):
        self.inner.phase_started(f"{self.prefix}{name}", description)

    def phase_skipped(self, name, description):
        self.inner.phase_skipped(f"{self.prefix}{name}", description)

    def phase_finished(self, name, seconds):
        self.inner.phase_finished(f"{self.prefix}{name}", seconds)

    def progress(self, done, total):
        self.inner.progress(done, total)

    def message(self, text):
        self.inner.message(text)


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def children_cpu_seconds() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Phase:
    name: str
    description: str
    inputs: object        # what the phase depends on beyond the phases before it; a callable is
                          # called when the phase is reached (e.g. a digest of a file an earlier phase wrote)
    action: Callable[[], dict | None]   # returns what to record (figures for build.json)


class PhaseState:
    """state.json: the finished phases, in order, with the digest they ran with."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {"phases": {}}

    @property
    def phases(self) -> dict[str, dict]:
        return self.data["phases"]

    def matches(self, name: str, digest_: str) -> bool:
        return self.phases.get(name, {}).get("digest") == digest_

    def record(self, name: str, digest_: str, seconds: float, extra: dict | None = None) -> None:
        self.phases[name] = {"digest": digest_, "seconds": round(seconds, 1),
                             "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **(extra or {})}
        self._save()

    def add_partial(self, name: str, digest_: str, seconds: float) -> None:
        partial = self.data.setdefault("partial", {})
        previous = partial.get(name, {})
        total = previous.get("seconds", 0.0) if previous.get("digest") == digest_ else 0.0
        partial[name] = {"digest": digest_, "seconds": round(total + seconds, 1)}
        self._save()

    def take_partial(self, name: str, digest_: str) -> float:
        entry = self.data.get("partial", {}).pop(name, {})
        return entry.get("seconds", 0.0) if entry.get("digest") == digest_ else 0.0

    def forget_from(self, name: str, order: list[str]) -> None:
        """A phase that runs again invalidates every phase after it."""
        for later in order[order.index(name):]:
            self.phases.pop(later, None)
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        tmp.replace(self.path)


@dataclass
class ChainResult:
    digest: str                                    # of the last phase: what a dependent chain starts from
    ran: list[str] = field(default_factory=list)   # phases that ran (the others were up to date)


class PhaseEngine:
    def __init__(self, state: PhaseState, reporter: Reporter | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 cpu_clock: Callable[[], float] = children_cpu_seconds):
        self.state = state
        self.reporter = reporter or QuietReporter()
        self.clock, self.cpu_clock = clock, cpu_clock

    def run(self, phases: list[Phase], start: str, until: str | None = None) -> ChainResult:
        """Run `phases` in order from the digest `start`, or those up to and including `until`."""
        order = [p.name for p in phases]
        if until is not None:
            phases = phases[:order.index(until) + 1]
        previous, ran = start, []
        for phase in phases:
            inputs = phase.inputs() if callable(phase.inputs) else phase.inputs
            current = digest(previous, phase.name, inputs)
            if self.state.matches(phase.name, current):
                self.reporter.phase_skipped(phase.name, phase.description)
            else:
                self._run_one(phase, current, order)
                ran.append(phase.name)
            previous = current
        return ChainResult(previous, ran)

    def _run_one(self, phase: Phase, current: str, order: list[str]) -> None:
        self.state.forget_from(phase.name, order)
        self.reporter.phase_started(phase.name, phase.description)
        started, cpu_started = self.clock(), self.cpu_clock()
        try:
            extra = dict(phase.action() or {})
        except BaseException:
            # Keep the time an interrupted phase took: its resumed run adds to it.
            self.state.add_partial(phase.name, current, self.clock() - started)
            raise
        seconds = self.clock() - started + self.state.take_partial(phase.name, current)
        # CPU time of the commands (compilers, linkers): unlike wall time, it does not grow when
        # something else shares the machine.
        extra["cpu_seconds"] = round(self.cpu_clock() - cpu_started, 1)
        self.state.record(phase.name, current, seconds, extra)
        self.reporter.phase_finished(phase.name, seconds)
