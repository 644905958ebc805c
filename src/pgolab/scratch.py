"""Private scratch folders (a server's socket, pid file and temporary tables) under pgolab's home.

Each folder is named after the pgolab process that made it, so the next pgolab process can tell
the folders of a process that died (kill -9, reboot) from those of one still running, and sweep
them. A folder a live server still uses is left alone and reported.
"""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from . import paths
from .processes import pid_alive, servers_using

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


def _owner(folder: Path) -> int | None:
    head = folder.name.removeprefix("pgolab-").split("-", 1)[0]
    return int(head) if head.isdigit() else None


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
