"""Source trees: fetch from Debian, unpack a tarball, recognise which server a tree is."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .errors import PgolabError

SUPPORTED = "MariaDB 10.x/11.x, MySQL 8.0/8.4, PostgreSQL"


@dataclass(frozen=True)
class SourceTree:
    path: Path
    server: str    # mariadb | mysql | postgresql
    version: str
    origin: str = ""   # where it came from, e.g. "Debian trixie, source package version ..."

    @property
    def label(self) -> str:
        return f"{self.server}-{self.version}"


def _read_keyvals(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text(errors="replace").splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip().strip('"')
    return out


def _mysql_like_version(tree: Path) -> tuple[str, str] | None:
    """(server, version) for a MariaDB or MySQL tree, from the tree's own files."""
    for name in ("MYSQL_VERSION", "VERSION"):
        f = tree / name
        if f.is_file():
            kv = _read_keyvals(f)
            if "MYSQL_VERSION_MAJOR" in kv:
                version = ".".join(kv.get(k, "0") for k in
                                   ("MYSQL_VERSION_MAJOR", "MYSQL_VERSION_MINOR", "MYSQL_VERSION_PATCH"))
                if not (tree / "sql").is_dir():
                    return None
                # Aria (storage/maria) exists only in MariaDB.
                server = "mariadb" if (tree / "storage" / "maria").is_dir() else "mysql"
                return server, version
    return None


def _postgresql_version(tree: Path) -> str | None:
    conf = tree / "configure.ac"
    if not (conf.is_file() and (tree / "src" / "backend" / "postmaster").is_dir()):
        return None
    match = re.search(r"AC_INIT\(\[PostgreSQL\],\s*\[([^\]]+)\]", conf.read_text(errors="replace"))
    return match.group(1) if match else None


def detect(path: Path) -> SourceTree:
    """Say which server a source tree is, or refuse it with a clear message."""
    path = path.expanduser().absolute()
    if not path.exists():
        raise PgolabError(f"source not found: {path}",
                          hint="pass a source directory or tarball, or fetch one with `pgolab source mariadb`")
    if path.is_file():
        return detect(unpack_tarball(path))
    if found := _mysql_like_version(path):
        return SourceTree(path, *found)
    if version := _postgresql_version(path):
        return SourceTree(path, "postgresql", version)
    # A tarball unpacked one level too high: a single sub-directory holding the tree.
    subdirs = [p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")]
    if len(subdirs) == 1 and not (path / "CMakeLists.txt").exists():
        try:
            return detect(subdirs[0])
        except PgolabError:
            pass
    raise PgolabError(
        f"{path} is not a supported server source tree",
        detail=f"looked for MariaDB/MySQL (VERSION or MYSQL_VERSION with MYSQL_VERSION_MAJOR, and sql/) "
               f"and PostgreSQL (configure.ac with AC_INIT([PostgreSQL], ...)); supported: {SUPPORTED}",
        hint="point --source at the top of the unpacked tree, or fetch one with `pgolab source mariadb`")


def unpack_tarball(tarball: Path) -> Path:
    """Unpack a source tarball into the cache once; return the unpacked directory."""
    if not tarfile.is_tarfile(tarball):
        raise PgolabError(f"{tarball} is neither a directory nor a tar archive",
                          hint="pass the unpacked source directory or a .tar.gz/.tar.xz/.tar.bz2")
    digest = file_digest(tarball)[:12]
    dest = paths.sources_dir() / f"{_stem(tarball.name)}-{digest}"
    done = dest / ".pgolab-unpacked"
    if not done.exists():
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        with tarfile.open(tarball) as tf:
            tf.extractall(tmp, filter="data")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        done.touch()
    entries = [p for p in dest.iterdir() if not p.name.startswith(".pgolab")]
    return entries[0] if len(entries) == 1 and entries[0].is_dir() else dest


def _stem(name: str) -> str:
    return re.sub(r"(\.tar)?\.(gz|xz|bz2|zst|tgz)$|\.tar$", "", name)


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_digest(tree: Path, fast: str | None = None) -> str:
    """A fingerprint of a source tree's content alone: every file's path and bytes. Two unpacks of one
    source package on two machines differ in modification times (dpkg-source patches files as it
    unpacks), so what must be the same tree everywhere (a profile's source) is this one. Kept beside
    pgolab's sources, keyed by the fast fingerprint, so each tree is read once."""
    fast = fast or tree_digest(tree)     # a caller that has the fast fingerprint passes it
    cache = paths.sources_dir() / ".content-digests" / f"{fast}.txt"
    if cache.is_file():
        return cache.read_text().strip()
    h = hashlib.sha256()
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(files):
            p = Path(root, name)
            if p.is_symlink():
                h.update(f"{p.relative_to(tree)}\0->{os.readlink(p)}\n".encode())
            elif p.is_file():
                h.update(f"{p.relative_to(tree)}\0{p.stat().st_size}\n".encode())
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
    digest = h.hexdigest()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(digest + "\n")
    return digest


def tree_digest(tree: Path) -> str:
    """A fast fingerprint of a source tree: every file's path, size and mtime.

    Content hashing a 300 MB tree on every build would cost more than it saves;
    an edit changes the mtime, which is what a rebuild decision needs.
    """
    h = hashlib.sha256()
    for root, dirs, files in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))
        for name in sorted(files):
            p = Path(root, name)
            try:
                st = p.lstat()
            except OSError:
                continue
            h.update(f"{p.relative_to(tree)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()
