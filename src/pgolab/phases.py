"""The phase engine: run a chain of named phases, each recorded with the digest of its inputs.

A phase's digest chains from the previous phase's, so a changed input re-runs that phase and
every phase after it; a re-run skips every phase whose recorded digest still matches. An
interrupted phase keeps the wall and CPU seconds it had spent, and its resumed run adds to them:
they are written to the state while the phase runs, so a killed process (the end of a session, a
restart) loses at most one checkpoint interval. The engine knows nothing of compilers or servers:
build modules hand it `Phase` objects.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
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


class ShownOnceReporter(PrefixedReporter):
    """Passes a build's progress on, but not a second "up to date" line for a phase it has shown:
    a build run in two calls (its training first, then the rest) walks the first call's phases again."""

    def __init__(self, inner: Reporter):
        super().__init__("", inner)
        self.shown: set[str] = set()

    def phase_started(self, name, description):
        self.shown.add(name)
        super().phase_started(name, description)

    def phase_skipped(self, name, description):
        if name not in self.shown:
            self.shown.add(name)
            super().phase_skipped(name, description)


def digest(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def children_cpu_seconds() -> float:
    """CPU seconds of this process's children: those it has reaped, and the live ones with theirs.

    The live part lets a checkpoint taken during a long ninja run count the compilers so far; once
    every child has been waited for, it is exactly getrusage's figure.
    """
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = live_descendant_ticks(read_proc_stats(), os.getpid())
    return usage.ru_utime + usage.ru_stime + ticks / os.sysconf("SC_CLK_TCK")


def read_proc_stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks of the process and of the children it has reaped)."""
    stats = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            text = Path(entry.path, "stat").read_text()
        except OSError:                       # ended while we looked
            continue
        fields = text[text.rindex(")") + 2:].split()   # the command name may hold spaces
        # fields[0] is stat's 3rd field (state): ppid is the 4th, utime..cstime the 14th-17th.
        stats[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    return stats


def live_descendant_ticks(stats: dict[int, tuple[int, int]], root: int) -> int:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        total += stats[pid][1]
        todo.extend(children.get(pid, []))
    return total


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
        self._lock = threading.Lock()      # the checkpoint thread saves too

    @property
    def phases(self) -> dict[str, dict]:
        return self.data["phases"]

    def matches(self, name: str, digest_: str) -> bool:
        return self.phases.get(name, {}).get("digest") == digest_

    def record(self, name: str, digest_: str, seconds: float, extra: dict | None = None) -> None:
        self.phases[name] = {"digest": digest_, "seconds": round(seconds, 1),
                             "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **(extra or {})}
        self._save()

    def spent_before(self, name: str, digest_: str) -> Spent:
        """What earlier, interrupted attempts at this phase with these inputs spent."""
        entry = self.data.get("partial", {}).get(name, {})
        if entry.get("digest") != digest_:
            return Spent()
        return Spent(entry.get("seconds", 0.0), entry.get("cpu_seconds", 0.0), entry.get("attempts", 0))

    def save_partial(self, name: str, digest_: str, spent: Spent) -> None:
        self.data.setdefault("partial", {})[name] = {
            "digest": digest_, "seconds": round(spent.seconds, 1),
            "cpu_seconds": round(spent.cpu_seconds, 1), "attempts": spent.attempts}
        self._save()

    def drop_partial(self, name: str) -> None:
        self.data.get("partial", {}).pop(name, None)
        self._save()

    def keep_only(self, names: list[str]) -> None:
        """Phases a build no longer has (its plan changed: e.g. it now reads a twin's profile instead
        of training) are forgotten, so its record does not report work that did not make it."""
        gone = [n for n in self.phases if n not in names]
        for name in gone:
            self.phases.pop(name)
        if gone:
            self._save()

    def forget_from(self, name: str, order: list[str]) -> None:
        """A phase that runs again invalidates every phase after it."""
        for later in order[order.index(name):]:
            self.phases.pop(later, None)
        self._save()

    def _save(self) -> None:
        with self._lock:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, indent=2))
            tmp.replace(self.path)


@dataclass(frozen=True)
class Spent:
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    attempts: int = 0

    def plus(self, seconds: float, cpu_seconds: float) -> Spent:
        """This attempt added to the earlier ones."""
        return Spent(self.seconds + seconds, self.cpu_seconds + cpu_seconds, self.attempts + 1)


class Checkpoint:
    """Calls `save` every `interval` seconds on a thread, until the `with` block ends."""

    def __init__(self, save: Callable[[], None], interval: float):
        self.save, self.interval = save, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.save()

    def __enter__(self) -> Checkpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class ChainResult:
    digest: str                                    # of the last phase: what a dependent chain starts from
    ran: list[str] = field(default_factory=list)   # phases that ran (the others were up to date)


class PhaseEngine:
    def __init__(self, state: PhaseState, reporter: Reporter | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 cpu_clock: Callable[[], float] = children_cpu_seconds,
                 checkpoint_every: float = 30.0):
        self.state = state
        self.reporter = reporter or QuietReporter()
        self.clock, self.cpu_clock = clock, cpu_clock
        self.checkpoint_every = checkpoint_every

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
        before = self.state.spent_before(phase.name, current)
        started, cpu_started = self.clock(), self.cpu_clock()

        def spent() -> Spent:
            # CPU time of the commands (compilers, linkers): unlike wall time, it does not grow
            # when something else shares the machine.
            return before.plus(self.clock() - started, self.cpu_clock() - cpu_started)

        def save() -> None:
            self.state.save_partial(phase.name, current, spent())

        try:
            with Checkpoint(save, self.checkpoint_every):
                extra = dict(phase.action() or {})
        except BaseException:
            save()        # an interrupt (Ctrl-C, an error): the resumed run adds to this
            raise
        total = spent()
        self.state.drop_partial(phase.name)
        extra.update(cpu_seconds=round(total.cpu_seconds, 1), attempts=total.attempts)
        self.state.record(phase.name, current, total.seconds, extra)
        self.reporter.phase_finished(phase.name, total.seconds)
