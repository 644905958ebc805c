"""valgrind's callgrind as a cost counter: its command line, its counts, and its output files.

The cache geometry is fixed (a common x86 L1 and an 8 MiB last level), not the host's, so that a
binary's counts compare across machines. The counts of a run are summed events; per query they
become the cost figures, and estimated cycles by one formula.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import PgolabError
from ..runner import Runner

CACHE_GEOMETRY = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"]
CALLGRIND_EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bc", "Bcm", "Bi", "Bim")

# Estimated cycles, the usual callgrind estimate extended by branch mispredictions:
CYCLE_FORMULA = "cycles ≈ Ir + 10·(I1mr + D1mr + D1mw) + 100·(ILmr + DLmr + DLmw) + 20·(Bcm + Bim)"
MISPREDICT_CYCLES = 20    # the formula's price of one simulated misprediction
# The formula's parts: each per-query figure (Counts.per_query's keys) and its price in cycles.
CYCLE_PRICES = {"instructions": 1, "i1_misses": 10, "d1_misses": 10, "ll_misses": 100,
                "mispredicts": MISPREDICT_CYCLES}


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

    def parts(self) -> dict[str, int]:
        """The events of each part of the cycle formula (CYCLE_PRICES' keys)."""
        e = self.get
        return {"instructions": e("Ir"), "i1_misses": e("I1mr"), "d1_misses": e("D1mr") + e("D1mw"),
                "ll_misses": e("ILmr") + e("DLmr") + e("DLmw"), "mispredicts": e("Bcm") + e("Bim")}

    def cycles(self) -> float:
        return sum(CYCLE_PRICES[k] * v for k, v in self.parts().items())

    def per_query(self, queries: int) -> dict[str, float]:
        return {"cycles": self.cycles() / queries, **{k: v / queries for k, v in self.parts().items()}}

    def describe(self) -> str:
        return " ".join(f"{k}={self.get(k)}" for k in CALLGRIND_EVENTS if k in self.events)


def function_names(binary: Path, runner: Runner) -> set[str]:
    """Demangled names in the binary's static and dynamic symbol tables, as callgrind names them
    (Debian's mariadbd is stripped but still exports its command functions dynamically)."""
    names: set[str] = set()
    for argv in (["nm", "-C", str(binary)], ["nm", "-C", "-D", str(binary)]):
        try:
            out = runner.run(argv, check=False, timeout=300, what="symbol table", log_output=False).output
        except PgolabError:    # nm missing: no names, so the run falls back to the window method
            continue
        for line in out.splitlines():
            parts = line.split(maxsplit=2)
            if len(parts) == 3 and parts[1] in "TtWw":
                names.add(parts[2])
    return names


def valgrind_version(runner: Runner) -> str:
    """`valgrind --version` (its simulation is part of what a cost figure means), or "not installed"."""
    try:
        return runner.run(["valgrind", "--version"], check=False, what="valgrind version").output.strip()
    except PgolabError:
        return "not installed"


# glibc's dynamic loader lists the processor's features as glibc read them (glibc 2.33 and later).
LOADER = Path("/lib64/ld-linux-x86-64.so.2")


def guest_cpu_from_diagnostics(text: str) -> str:
    """`ld.so --list-diagnostics` reduced to what picks glibc's routines: the x86 feature words, the
    preferences and the cache sizes and thresholds, named by the processor's family and model and
    a digest of the whole."""
    lines = sorted(line for line in text.splitlines() if line.startswith("x86.cpu_features."))
    if not lines:
        return "unknown (glibc lists no x86 features)"
    basic = dict(line.removeprefix("x86.cpu_features.basic.").split("=", 1)
                 for line in lines if line.startswith("x86.cpu_features.basic."))
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return f"family {basic.get('family', '?')} model {basic.get('model', '?')}, glibc's view {digest}"


def guest_cpu(runner: Runner) -> str:
    """The processor as glibc sees it under valgrind: it picks glibc's string and memory routines,
    and their thresholds come from its cache sizes. valgrind presents a processor of its own, not the
    host's (on an AMD EPYC of family 25: an Intel family 6 model 0x3c), so a binary's counts compare
    across hosts where valgrind presents the same one; that is what the run's identity records."""
    if not LOADER.exists():
        return f"unknown ({LOADER} is missing)"
    try:
        result = runner.run(["valgrind", "--tool=none", "-q", str(LOADER), "--list-diagnostics"], check=False,
                            timeout=120, what="the processor glibc sees under valgrind", log_output=False)
    except PgolabError:
        return "unknown (valgrind is not installed)"
    return guest_cpu_from_diagnostics(result.output)


def valgrind_wrapper(out_dir: Path, entry_points: tuple[str, ...] | None) -> list[str]:
    """The callgrind command line a server starts under. With entry points, collection is on
    only inside them; without, it is off until the measured run switches it on."""
    argv = ["valgrind", "--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", *CACHE_GEOMETRY,
            f"--callgrind-out-file={out_dir.absolute()}/callgrind.out.%p", "--dump-instr=no",
            "--collect-atstart=no" if entry_points else "--collect-atstart=yes"]
    argv += [f"--toggle-collect={fn}" for fn in entry_points or ()]
    return argv


def callgrind_control(runner: Runner, action: str, pid: int) -> None:
    """`action` "zero" or "dump": the counters of a running callgrind process (one-process servers)."""
    runner.run(["callgrind_control", f"--{action}", str(pid)], what=f"callgrind {action}")


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
