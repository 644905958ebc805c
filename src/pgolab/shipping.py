"""Install trees sent to another host, checked by digest: a cluster's workers build, the bench host
measures wall-clock figures of every build on its one machine (cluster.py).

A worker packs each build it measured (its install tree as a gzip'd tar, its build record, the
server binary's sha256); the bench host unpacks each into its own pgolab home and refuses a tree
whose server binary is not the one packed. A tree already unpacked with that digest is used again,
so a QPS run the client starts again continues on the same files.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import PgolabError
from .fleet import BenchTarget
from .record import BuildRecord
from .sources import file_digest
from .targets import installation_for_binary


@dataclass(frozen=True)
class PackedInstall:
    """One build as it travels: what the bench host needs to start its server and say what it is."""
    label: str
    digest: str           # sha256 of the server binary, where it was built
    binary: str           # the server binary's path inside the tree
    record: dict          # its build record (BuildRecord.as_dict)
    tree: bytes           # the install tree, a gzip'd tar

    @property
    def folder_name(self) -> str:
        return f"{self.label}-{self.digest[:12]}"


def pack(record: BuildRecord) -> PackedInstall:
    """A finished build's install tree, record and server binary digest."""
    install_dir, binary = Path(record.install_dir), Path(record.server_binary)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        tar.add(install_dir, arcname=".")
    return PackedInstall(record.label, file_digest(binary), str(binary.relative_to(install_dir)),
                         record.as_dict(), buffer.getvalue())


def unpack(packed: PackedInstall, into: Path) -> BenchTarget:
    """The build as a target of this host, its tree under `into`; refused if its server binary is not
    the one that was packed."""
    folder = into / packed.folder_name
    binary = folder / packed.binary
    if not (binary.is_file() and file_digest(binary) == packed.digest):
        into.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=into))
        with tarfile.open(fileobj=io.BytesIO(packed.tree), mode="r:gz") as tar:
            tar.extractall(staging, filter="tar")    # keeps the programs' modes; no path outside it
        staging.chmod(0o755)   # the unprivileged user a server runs as must reach its tree
        staging.rename(folder)
    found = file_digest(binary) if binary.is_file() else "nothing"
    if found != packed.digest:
        raise PgolabError(f"{packed.label}'s install tree arrived with {packed.binary} at {found[:12]}, "
                          f"packed at {packed.digest[:12]}",
                          hint="run the same command again: the worker packs its build anew")
    record = BuildRecord.from_dict(packed.record, f"{packed.label}'s build record")
    return BenchTarget(packed.label, BuildRecord.kind, installation_for_binary(binary), record)
