"""Private scratch folders (a server's socket, pid file and temporary tables) under pgolab's home.

Each folder is named after the pgolab process that made it, so the next pgolab process can tell
the folders of a process that died (kill -9, reboot) from those of one still running, and sweep
them. A folder a live server still uses is left alone and reported.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from pathlib import Path

from . import paths

# A unix socket path holds at most 107 bytes; the longest socket name pgolab uses is 20.
SOCKET_PATH_LIMIT = 107 - 20


def root() -> Path:
    return paths.home() / "scratch"


def make(purpose: str) -> Path:
    """A new folder for this process; under /tmp only if pgolab's home is too deep for a socket."""
    name = f"{os.getpid()}-{purpose}-{secrets.token_hex(3)}"
    path = root() / name
    if len(str(path)) > SOCKET_PATH_LIMIT:
        path = Path("/tmp") / f"pgolab-{name}"
    path.mkdir(parents=True, mode=0o755)
    return path


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


def _owner(folder: Path) -> int | None:
    head = folder.name.removeprefix("pgolab-").split("-", 1)[0]
    return int(head) if head.isdigit() else None


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


def sweep() -> list[Path]:
    """Remove the folders of pgolab processes that are gone, unless a server still uses one."""
    removed = []
    candidates = list(root().glob("*")) if root().is_dir() else []
    candidates += list(Path("/tmp").glob("pgolab-[0-9]*"))
    for folder in candidates:
        owner = _owner(folder)
        if owner is None or pid_alive(owner) or servers_using(folder):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed
