"""Processes as /proc shows them: alive or not, whose child, where they work, what they name, CPU time.

The one low-level module every other one may import for these: server lifecycle, builds that stop
what a killed run left, the cost executor's backends and the QPS executor's CPU time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """A running process (a zombie, exited but not yet reaped, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:][:1] != "Z"


def signal_and_wait(pids: list[int], sig: int, timeout: float) -> list[int]:
    """Send `sig` to each process and wait up to `timeout` seconds for all to end; those still alive."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(pid_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if pid_alive(p)]


def servers_using(path: Path) -> list[int]:
    """Live processes whose command line names `path` (a server's data or run directory)."""
    name = str(path).encode()
    needles = (name + b"\0", name + b"/")     # the path itself or something inside it, not a sibling
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(n in cmdline for n in needles):
            found.append(int(entry.name))
    return found


def _ancestors() -> set[int]:
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return pids


def processes_under(path: Path) -> list[int]:
    """Live processes whose working directory is inside `path`: what a killed pgolab left running
    there (make, ninja, compilers, and servers, which work in their data directory's parent). Not the
    command line: a server of another build may name this one's binary. Never this process or its
    ancestors."""
    mine = _ancestors()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd == str(path) or cwd.startswith(str(path) + "/"):
            found.add(int(entry.name))
    return sorted(p for p in found - mine if pid_alive(p))


def child_pids(pid: int) -> set[int]:
    """The live children of a process (a postmaster's backends and workers)."""
    out = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.add(int(entry.name))
    return out


def process_cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process plus its reaped children (PostgreSQL's
    backends are children of the postmaster and are reaped when a connection ends)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + cutime) / tick, (stime + cstime) / tick


def live_children_cpu_seconds(pid: int) -> float:
    """CPU seconds of a process's live children with their own reaped ones (a postmaster's
    checkpointer, WAL writer and autovacuum live as long as the server). Added to the process's own
    figure (process_cpu_seconds, reaped children included), the difference of two readings is the
    whole tree's work between them: a child that ends in between moves from this sum into its
    parent's reaped time."""
    total = 0.0
    for child in child_pids(pid):
        try:
            total += sum(process_cpu_seconds(child))
        except OSError:   # ended and reaped since it was listed: now in the parent's reaped time
            pass
    return total


def parse_machine_cpu(stat_text: str) -> tuple[float, float]:
    """From /proc/stat's text: the CPU seconds the whole machine spent busy since boot, and those
    the hypervisor took for other guests (steal). Busy is everything but idle and iowait; steal is
    left out of busy, for this guest's CPUs did not run then."""
    ticks = [int(x) for x in stat_text.splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (ticks + [0] * 8)[:8]
    # guest and guest_nice (fields 9 and 10) are already counted in user and nice
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def machine_cpu_seconds() -> tuple[float, float]:
    """Busy and stolen CPU seconds of the whole machine since boot (parse_machine_cpu)."""
    return parse_machine_cpu(Path("/proc/stat").read_text())


@dataclass(frozen=True)
class CpuReading:
    """The machine's busy and stolen CPU seconds, and this process's own with its reaped children
    (pgolab and a finished client), at one moment of wall time."""
    wall: float
    busy: float
    steal: float
    own: float

    @classmethod
    def now(cls) -> "CpuReading":
        t = os.times()
        return cls(time.monotonic(), *machine_cpu_seconds(), t.user + t.system + t.children_user + t.children_system)


def other_work(before: CpuReading, after: CpuReading, server_cpu: float) -> tuple[float, float]:
    """Cores busy with other work between two readings (beyond the server's `server_cpu` seconds, its
    whole process tree's, and pgolab's own with its client), and cores the hypervisor stole, each
    averaged over the wall time. /proc/stat counts the whole host kernel's CPUs (in a container, the
    host's other tenants too). Clock ticks are 10 ms, so a 1-second window reads to about 0.02 core,
    either way: a small negative reading is that rounding, kept as read so an idle machine's
    accuracy shows."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0, 0.0
    other = (after.busy - before.busy) - server_cpu - (after.own - before.own)
    return other / wall, (after.steal - before.steal) / wall
