"""Cost mode: per-query instructions, simulated cache misses and branch mispredictions.

Each server runs under valgrind's callgrind with cache and branch simulation, with a
fixed cache geometry so that figures compare across hosts. Only statement execution
is counted: collection is toggled on inside the server's command function (MariaDB/MySQL
`dispatch_command`, else `do_command`; PostgreSQL's `PostgresMain`), so background threads
and connection start-up add nothing. Every target of a run counts the same function: the
first candidate that every binary has and that a probe query shows being entered (clang's
LTO+PGO build of MariaDB inlines `dispatch_command` into `do_command`, leaving an exported
copy nothing calls). With none, the run counts everything between zeroing and dumping the
counters around the measured run (method "window"); the method is recorded with every sample.

MariaDB/MySQL are one process: the counters are zeroed before the measured run and
dumped after it (callgrind_control), the warm-up before it having warmed the simulated
caches. PostgreSQL forks a backend per connection; each writes its own file when it
exits, starting with its own start-up and cold simulated caches. There the cost of the
N measured events is the difference between a run of N and the warm-up run of N/4
events (each a new backend): start-up and cold misses cancel, per query is
(C_N - C_W) / (Q_N - Q_W). A discarded run of N/4 before both takes the one-off work a
previous test's writes left behind.

The numbers are deterministic for a binary and its inputs (measured here: repeats
agree within 0.1 % on instructions and I1 misses), so one instance and one block per
microbenchmark suffice, and servers stay up across microbenchmarks.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import PgolabError
from .paths import chown_tree
from .processes import child_pids
from .measurement import Sample, Step
from .runner import CommandResult, Runner, format_command
from .suite import Micro

# Fixed geometry (a common x86 L1 and an 8 MiB last level): comparable across machines.
CACHE_GEOMETRY = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
CALLGRIND_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim")

# Estimated cycles, the usual callgrind estimate extended by branch mispredictions:
CYCLE_FORMULA = "cycles ≈ Ir + 10·(I1mr + D1mr + D1mw) + 100·(ILmr + DLmr + DLmw) + 20·(Bcm + Bim)"


@dataclass(frozen=True)
class Counts:
    """Summed callgrind events of one measured run."""
    events: dict[str, int]

    @classmethod
    def parse(cls, text: str) -> "Counts":
        names = re.search(r"^events:\s*(.+)$", text, re.M)
        summary = re.search(r"^summary:\s*(.+)$", text, re.M) or re.search(r"^totals:\s*(.+)$", text, re.M)
        if not names or not summary:
            return cls({})
        return cls(dict(zip(names.group(1).split(), (int(x) for x in summary.group(1).split()))))

    def __add__(self, other: "Counts") -> "Counts":
        keys = set(self.events) | set(other.events)
        return Counts({k: self.events.get(k, 0) + other.events.get(k, 0) for k in keys})

    def __sub__(self, other: "Counts") -> "Counts":
        keys = set(self.events) | set(other.events)
        return Counts({k: self.events.get(k, 0) - other.events.get(k, 0) for k in keys})

    @classmethod
    def of_files(cls, files: list[Path]) -> "Counts":
        total = cls({})
        for f in files:
            total = total + cls.parse(f.read_text(errors="replace"))
        return total

    def get(self, name: str) -> int:
        return self.events.get(name, 0)

    def cycles(self) -> float:
        e = self.get
        return (e("Ir") + 10 * (e("I1mr") + e("D1mr") + e("D1mw")) + 100 * (e("ILmr") + e("DLmr") + e("DLmw"))
                + 20 * (e("Bcm") + e("Bim")))

    def per_query(self, queries: int) -> dict[str, float]:
        e = self.get
        return {"cycles": self.cycles() / queries, "instructions": e("Ir") / queries,
                "i1_misses": e("I1mr") / queries, "d1_misses": (e("D1mr") + e("D1mw")) / queries,
                "ll_misses": (e("ILmr") + e("DLmr") + e("DLmw")) / queries,
                "mispredicts": (e("Bcm") + e("Bim")) / queries}


def function_names(binary: Path) -> set[str]:
    """Demangled names in the binary's static and dynamic symbol tables, as callgrind names them
    (Debian's mariadbd is stripped but still exports its command functions dynamically)."""
    names: set[str] = set()
    for argv in (["nm", "-C", str(binary)], ["nm", "-C", "-D", str(binary)]):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=300).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        for line in out.splitlines():
            parts = line.split(maxsplit=2)
            if len(parts) == 3 and parts[1] in "TtWw":
                names.add(parts[2])
    return names


def valgrind_wrapper(out_dir: Path, entry_points: tuple[str, ...] | None) -> list[str]:
    """The callgrind command line a server starts under. With entry points, collection is on
    only inside them; without, it is off until the measured run switches it on."""
    argv = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", *CACHE_GEOMETRY,
            f"--callgrind-out-file={out_dir.absolute()}/callgrind.out.%p", "--dump-instr=no",
            "--collect-atstart=no" if entry_points else "--collect-atstart=yes"]
    argv += [f"--toggle-collect={fn}" for fn in entry_points or ()]
    return argv


def method_name(entry_points: tuple[str, ...] | None, forks_backends: bool = False) -> str:
    if entry_points:
        return "toggle-collect on " + ", ".join(entry_points)
    if forks_backends:
        return "window: every process that ended during the run (the backend's whole life, autovacuum workers too)"
    return "window: all threads between zeroing and dumping the counters"


def callgrind_control(runner: Runner, action: str, pid: int) -> None:
    """`action` "zero" or "dump": the counters of a running callgrind process (one-process servers)."""
    runner.run(["callgrind_control", f"--{action}", str(pid)], what=f"callgrind {action}")


def wait_for_backends(pid: int, baseline: set[int], timeout: float = 120.0) -> None:
    """Wait until only the long-lived children are left: a backend writes its counters as it exits."""
    deadline = time.monotonic() + timeout
    while child_pids(pid) - baseline and time.monotonic() < deadline:
        time.sleep(0.2)


def output_files(out_dir: Path) -> dict[Path, tuple[int, int, int]]:
    """callgrind's output files, each with what tells a rewritten file from the old one.

    The names hold a pid, and pids repeat: after a container restart they begin again, and a
    backend then writes over an earlier backend's file. Seen: a resumed cost run missed such a
    file and stopped with "counted no instructions".
    """
    files = {}
    for path in out_dir.glob("callgrind.out.*"):
        try:
            st = path.stat()
        except OSError:
            continue
        files[path] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return files


def new_files(out_dir: Path, before: dict[Path, tuple[int, int, int]], wait_s: float = 30.0,
              expect: int = 1) -> list[Path]:
    """Output files written since the snapshot `before` (`output_files`); waits until `expect` of
    them are complete."""
    deadline = time.monotonic() + wait_s
    while True:
        found = sorted(p for p, written in output_files(out_dir).items()
                       if before.get(p) != written and _complete(p))
        if len(found) >= expect or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def _complete(path: Path) -> bool:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return False
    return bool(re.search(r"^(summary|totals):", text, re.M))


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


def require_counts(counts: Counts, label: str, micro: str, method: str, files: list[Path]) -> None:
    if counts.get("Ir") <= 0:
        raise PgolabError(
            f"cost of {micro} on {label}: callgrind counted no instructions ({method})",
            detail="files: " + (", ".join(str(f) for f in files) or "none appeared"),
            hint="the server never entered the counted function: check the binary has its symbols "
                 "(nm -C -D), or that sysbench ran; stored samples are kept, run the same command to resume")


def describe_counts(counts: Counts) -> str:
    return " ".join(f"{k}={counts.get(k)}" for k in CALLGRIND_EVENTS if k in counts.events)


def sample_from_counts(step: Step, counts: Counts, queries: int, seconds: float, method: str,
                       argv: list[str], output: str) -> Sample:
    return Sample(step, counts.per_query(queries), seconds,
                  detail={"method": method, "queries": queries, "events": counts.events},
                  command=format_command(argv, None, {}), output=output)


def micro_events(micro: Micro, scale: float) -> tuple[int, int]:
    """Measured and warm-up events of a microbenchmark in cost mode."""
    events = max(int(round(micro.cost_events * scale)), 2)
    return events, max(events // 4, 2)


class CostExecutor:
    """Measures steps under callgrind; servers stay up across microbenchmarks. Counts are simulated,
    so several servers may be measured at once (options.cost_jobs): each uses its own core."""
    mode = "cost"

    def __init__(self, fleet, options, labels: list[str]):
        self.fleet, self.options, self.labels = fleet, options, labels
        self.concurrency = max(1, options.cost_jobs)
        # One method for every target, or their counts would not compare: a toggle function is a
        # candidate only if every binary has it, and is kept only if every server enters it (probed
        # at the first start); with none left the whole run uses the window method.
        insts = {label: fleet.targets[label].installation for label in labels}
        names = {label: function_names(i.server_binary) for label, i in insts.items()}
        self.candidates: list[dict[str, "CostEntry"]] = []
        for rank in range(max(len(i.cost_entry_points) for i in insts.values())):
            chosen = {label: i.cost_entry_points[min(rank, len(i.cost_entry_points) - 1)] for label, i in insts.items()}
            if all(len(entry.matches(names[label])) == 1 for label, entry in chosen.items()):
                self.candidates.append(chosen)
        self.probed = False
        self.entry_points: dict[str, tuple[str, ...] | None] = {}
        self._use_candidate()
        self.out_dirs: dict[str, Path] = {}
        for label, inst in insts.items():
            out = fleet.workdir / "callgrind" / label
            out.mkdir(parents=True, exist_ok=True)
            if inst.run_as:
                chown_tree(out, inst.run_as)
            self.out_dirs[label] = out
        self.long_lived: dict[str, set[int]] = {}   # a postmaster's own children (checkpointer, ...)

    def _use_candidate(self) -> None:
        """The next candidate entry for every target, or the window method when none is left."""
        chosen = self.candidates.pop(0) if self.candidates else {}
        self.entry_points = {label: ((chosen[label].toggle,) if label in chosen else None) for label in self.labels}

    def method(self, label: str) -> str:
        return method_name(self.entry_points[label], self.fleet.targets[label].installation.forks_backends)

    def start_instance(self, micro: Micro, instance: int) -> None:
        self._start_servers()
        while not self.probed:
            not_entered = self._labels_not_entering_toggle()
            if not not_entered:
                self.probed = True
                break
            self.fleet.runner("callgrind").note(
                f"cost: {', '.join(not_entered)} never entered {self.method(not_entered[0])}; next candidate")
            self.fleet.stop()
            self._use_candidate()
            self._start_servers()

    def _labels_not_entering_toggle(self) -> list[str]:
        """A probe query on each one-process server with a toggle: did callgrind count anything?"""
        missing = []
        for label in self.labels:
            server = self.fleet.servers[label]
            if self.entry_points[label] is None or server.installation.forks_backends:
                continue
            before = output_files(self.out_dirs[label])
            server.query("SELECT 1", what="cost probe")
            callgrind_control(server.runner, "dump", server.proc.pid)
            if Counts.of_files(new_files(self.out_dirs[label], before)).get("Ir") <= 0:
                missing.append(label)
        return missing

    def _start_servers(self) -> None:
        for label in self.labels:
            server = self.fleet.servers.get(label)
            if server is None or server.proc is None or server.proc.poll() is not None:
                inst = self.fleet.targets[label].installation
                server = self.fleet.start(label, self.mode,
                                          valgrind_wrapper(self.out_dirs[label], self.entry_points[label]),
                                          inst.valgrind_options(), timeout=900)
                if inst.forks_backends:
                    time.sleep(3)   # the readiness check's backend exits
                    self.long_lived[label] = child_pids(server.proc.pid)

    def measure(self, micro: Micro, step: Step) -> Sample:
        from .fleet import sysbench_argv
        from .sysbench_output import parse
        server = self.fleet.servers[step.label]
        inst = server.installation
        out = self.out_dirs[step.label]
        events, warmup = micro_events(micro, self.options.cost_scale)
        pid = server.proc.pid
        warm_argv = sysbench_argv(micro, server, self.options, events=warmup, seed=step.block)
        argv = sysbench_argv(micro, server, self.options, events=events, seed=step.block)
        if inst.forks_backends:
            wait_for_backends(pid, self.long_lived[step.label])
            # A first run absorbs one-off work (after writes: pruning, hint bits, index cleanup) that
            # would otherwise fall on the subtracted short run alone; seen here: long - short < 0.
            self._backend_run(step.label, warm_argv, "cost warm-up (discarded)")
            short, short_files, short_out = self._backend_run(step.label, warm_argv, "cost warm-up (short run)")
            started = time.monotonic()
            long, files, output = self._backend_run(step.label, argv, f"sysbench {step.micro} (cost)")
            seconds = time.monotonic() - started
            counts = long - short
            queries = parse(output).queries - parse(short_out).queries
            files = short_files + files
        else:
            # Warms the simulated caches and the server's own with the same statements.
            run_sysbench(server.runner, warm_argv, "cost warm-up")
            what = f"sysbench {step.micro} (cost)"
            for attempt in range(1, START_ATTEMPTS + 1):
                before = output_files(out)
                callgrind_control(server.runner, "zero", pid)   # again after a missed start
                started = time.monotonic()
                result = server.runner.run(argv, what=what, check=False)
                seconds = time.monotonic() - started
                if not missed_start(result, attempt, server.runner, what):
                    break
            output = result.output
            callgrind_control(server.runner, "dump", pid)
            files = new_files(out, before)
            counts = Counts.of_files(files)
            queries = parse(output).queries
        method = self.method(step.label)
        require_counts(counts, step.label, step.micro, method, files)
        server.check_alive()
        server.runner.note(f"cost of {step.micro}: {describe_counts(counts)} over {queries} queries "
                           f"({', '.join(f.name for f in files)})")
        return sample_from_counts(step, counts, queries, seconds, method, argv, output)

    def _backend_run(self, label: str, argv: list[str], what: str) -> tuple[Counts, list[Path], str]:
        """One sysbench run on a forking server: the counts of the processes that ended during it."""
        server, out = self.fleet.servers[label], self.out_dirs[label]
        for attempt in range(1, START_ATTEMPTS + 1):
            before = output_files(out)    # after a missed start: its backend's file is not counted
            result = server.runner.run(argv, what=what, check=False)
            wait_for_backends(server.proc.pid, self.long_lived[label])
            if not missed_start(result, attempt, server.runner, what):
                break
        files = new_files(out, before)
        return Counts.of_files(files), files, result.output

    def stop_instance(self) -> None:
        pass   # deterministic figures: one server life serves every microbenchmark

    def close(self) -> None:
        self.fleet.stop()
