"""Where pgolab keeps sources, builds and results."""

from __future__ import annotations

import os
import pwd
from pathlib import Path


def home() -> Path:
    """pgolab's cache root.

    Override with PGOLAB_HOME. As root the default is /var/cache/pgolab rather
    than ~/.cache: PostgreSQL refuses to run as root, so its server runs as an
    unprivileged user that must be able to reach the install tree.
    """
    if env := os.environ.get("PGOLAB_HOME"):
        return Path(env).absolute()
    if os.geteuid() == 0:
        return Path("/var/cache/pgolab")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pgolab"


def package_data() -> Path:
    """pgolab's own files shipped with it (data/): sysbench scripts, C and CMake sources."""
    from importlib import resources
    return Path(str(resources.files("pgolab") / "data"))


def sources_dir() -> Path:
    return home() / "sources"


def builds_dir() -> Path:
    return home() / "builds"


def runs_dir() -> Path:
    return home() / "runs"


def chown_tree(path: Path, user: str | None) -> None:
    if user is None:
        return
    entry = pwd.getpwnam(user)
    for root, dirs, files in os.walk(path):
        os.chown(root, entry.pw_uid, entry.pw_gid)
        for name in files:
            os.chown(os.path.join(root, name), entry.pw_uid, entry.pw_gid)
