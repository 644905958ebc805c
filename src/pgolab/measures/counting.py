"""The two ways cost mode finds what a measured run cost: one server process, or its backends.

MariaDB/MySQL are one process: the counters are zeroed before the measured run and dumped after
it (callgrind_control), the warm-up before it having warmed the simulated caches.

PostgreSQL forks a backend per connection; each writes its own file when it exits, starting with
its own start-up and cold simulated caches. There the cost of the N measured events is the
difference between a run of N and the warm-up run of N/4 events (each a new backend): start-up
and cold misses cancel, per query is (C_N - C_W) / (Q_N - Q_W). A discarded run of N/4 before both
takes the one-off work a previous test's writes left behind.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..processes import child_pids
from ..runner import CommandResult, Runner
from ..server import ServerProcess
from ..sysbench_output import SysbenchResult, parse as parse_sysbench
from .callgrind import Counts, callgrind_control, new_files, output_files

# sysbench 1.0 gives its worker threads a fixed 30 s to connect and prepare their statements, with no
# option to lengthen it; a server under callgrind, on a machine busy with other work, can miss it
# (seen: writes/delete on PostgreSQL beside a CI run). The run measured nothing then.
SLOW_START = "failed to initialize within"
START_ATTEMPTS = 3


def missed_start(result: CommandResult, attempt: int, runner: Runner, what: str) -> bool:
    """True if sysbench stopped before its threads started and may run again; raises for any
    other failure, or when the last attempt missed too."""
    if result.returncode == 0:
        return False
    if SLOW_START not in result.output or attempt >= START_ATTEMPTS:
        raise runner.failure(result, what)
    runner.note(f"{what}: sysbench's threads missed its 30 s start (attempt {attempt} of {START_ATTEMPTS}); "
                "nothing ran, so it runs again")
    return True


def run_sysbench(runner: Runner, argv: list[str], what: str) -> CommandResult:
    """A sysbench run whose counters nobody reads (a warm-up): run again after a missed start."""
    for attempt in range(1, START_ATTEMPTS + 1):
        result = runner.run(argv, what=what, check=False)
        if not missed_start(result, attempt, runner, what):
            break
    return result


def wait_for_backends(pid: int, baseline: set[int], timeout: float = 120.0) -> None:
    """Wait until only the long-lived children are left: a backend writes its counters as it exits."""
    deadline = time.monotonic() + timeout
    while child_pids(pid) - baseline and time.monotonic() < deadline:
        time.sleep(0.2)


@dataclass
class Counted:
    """What one measured run cost, and where it was read."""
    counts: Counts
    queries: int
    files: list[Path]
    seconds: float
    output: str


class OneProcess:
    """A server that runs every connection in its own process: zero, run, dump."""
    can_probe = True    # a probe query's counts can be dumped while it runs

    def started(self, server: ServerProcess) -> None:
        pass

    def window_method(self) -> str:
        return "window: all threads between zeroing and dumping the counters"

    def count(self, server: ServerProcess, out: Path, warm_argv: list[str], argv: list[str], what: str,
              parse: Callable[[str], SysbenchResult] = parse_sysbench) -> Counted:
        # Warms the simulated caches and the server's own with the same statements.
        run_sysbench(server.runner, warm_argv, "cost warm-up")
        pid = server.proc.pid
        for attempt in range(1, START_ATTEMPTS + 1):
            before = output_files(out)
            callgrind_control(server.runner, "zero", pid)   # again after a missed start
            started = time.monotonic()
            result = server.runner.run(argv, what=what, check=False)
            seconds = time.monotonic() - started
            if not missed_start(result, attempt, server.runner, what):
                break
        callgrind_control(server.runner, "dump", pid)
        files = new_files(out, before)
        return Counted(Counts.of_files(files), parse(result.output).queries, files, seconds, result.output)

    def entered(self, server: ServerProcess, out: Path) -> bool:
        """Did a probe query count anything (is the toggle function entered)?"""
        before = output_files(out)
        server.query("SELECT 1", what="cost probe")
        callgrind_control(server.runner, "dump", server.proc.pid)
        return Counts.of_files(new_files(out, before)).get("Ir") > 0


class ForkedBackends:
    """A server that forks a backend per connection: the counts of the backends that ended during a
    run, a long run's minus a short run's."""
    can_probe = False   # a backend's counts appear only when it exits

    def __init__(self) -> None:
        self.long_lived: set[int] = set()   # the postmaster's own children (checkpointer, ...)

    def started(self, server: ServerProcess) -> None:
        time.sleep(3)   # the readiness check's backend exits
        self.long_lived = child_pids(server.proc.pid)

    def window_method(self) -> str:
        return "window: every process that ended during the run (the backend's whole life, autovacuum workers too)"

    def count(self, server: ServerProcess, out: Path, warm_argv: list[str], argv: list[str], what: str,
              parse: Callable[[str], SysbenchResult] = parse_sysbench) -> Counted:
        wait_for_backends(server.proc.pid, self.long_lived)
        # A first run absorbs one-off work (after writes: pruning, hint bits, index cleanup) that
        # would otherwise fall on the subtracted short run alone; seen here: long - short < 0.
        self._run(server, out, warm_argv, "cost warm-up (discarded)")
        short, short_files, short_out = self._run(server, out, warm_argv, "cost warm-up (short run)")
        started = time.monotonic()
        long, files, output = self._run(server, out, argv, what)
        seconds = time.monotonic() - started
        queries = parse(output).queries - parse(short_out).queries
        return Counted(long - short, queries, short_files + files, seconds, output)

    def entered(self, server: ServerProcess, out: Path) -> bool:
        return True

    def _run(self, server: ServerProcess, out: Path, argv: list[str], what: str) -> tuple[Counts, list[Path], str]:
        for attempt in range(1, START_ATTEMPTS + 1):
            before = output_files(out)    # after a missed start: its backend's file is not counted
            result = server.runner.run(argv, what=what, check=False)
            wait_for_backends(server.proc.pid, self.long_lived)
            if not missed_start(result, attempt, server.runner, what):
                break
        files = new_files(out, before)
        return Counts.of_files(files), files, result.output


def counting_for(forks_backends: bool) -> OneProcess | ForkedBackends:
    return ForkedBackends() if forks_backends else OneProcess()
