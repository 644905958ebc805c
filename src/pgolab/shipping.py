"""Install trees sent to another host, checked by digest: a cluster's workers build, the bench host
measures wall-clock figures of every build on its one machine (cluster.py).

A worker names each build it measured (`BuildOnWorker`: label, server sha256, where its record is);
the client picks one build of each label, and the worker that has it packs it (its install tree as a
gzip'd tar, its build record, the server binary's sha256) for the bench host, worker to worker, so no
tree passes through the client. The bench host unpacks each into its own pgolab home and refuses a tree
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
from .host import Host
from .record import RECORD_FILE, BuildRecord
from .sources import file_digest
from .targets import installation_for_binary
from .variants import parse


@dataclass(frozen=True)
class PackedInstall:
    """One build as it travels: what the bench host needs to start its server and say what it is."""
    label: str
    digest: str           # sha256 of the server binary, where it was built
    binary: str           # the server binary's path inside the tree
    record: dict          # its build record (BuildRecord.as_dict)
    tree: bytes           # the install tree, a gzip'd tar
    built_on: str         # the CPU model of the host that built it (Host.model)

    @property
    def folder_name(self) -> str:
        return f"{self.label}-{self.digest[:12]}"


@dataclass(frozen=True)
class BuildOnWorker:
    """A finished build as its worker names it to the client: a few bytes, the tree stays put."""
    label: str
    digest: str           # sha256 of the server binary when it was measured
    record_path: str      # its build.json, on that worker
    built_on: str         # the worker's CPU model (Host.model): a -march=native build is that CPU's


def on_worker(record: BuildRecord) -> BuildOnWorker:
    return BuildOnWorker(record.label, file_digest(Path(record.server_binary)), str(record.dir / RECORD_FILE),
                         Host.this().model())


def pack(build: BuildOnWorker) -> PackedInstall:
    """On the worker that has it: the build's install tree, record and server binary digest; refused
    if the binary is no longer the one that was measured (rebuilt since)."""
    record = BuildRecord.load(Path(build.record_path))
    install_dir, binary = Path(record.install_dir), Path(record.server_binary)
    digest = file_digest(binary)
    if digest != build.digest:
        raise PgolabError(f"{build.label} was measured at {build.digest[:12]} and is now {digest[:12]} on its worker",
                          hint="run the same command again: the build is measured anew before it travels")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        tar.add(install_dir, arcname=".")
    return PackedInstall(record.label, digest, str(binary.relative_to(install_dir)),
                         record.as_dict(), buffer.getvalue(), Host.this().model())


def foreign_native(variant: str, built_on: str, here: str) -> str | None:
    """Why a build may not run as built on this CPU model: -march=native compiled for another one,
    whose instructions this CPU may lack (SIGILL) and which is not this CPU's native build anyway."""
    if built_on != here and parse(variant).native:
        return f"built with -march=native on {built_on}, not on this host's {here}"
    return None


def unpack(packed: PackedInstall, into: Path) -> BenchTarget:
    """The build as a target of this host, its tree under `into`; refused if its server binary is not
    the one that was packed."""
    folder = into / packed.folder_name
    binary = folder / packed.binary
    if not (binary.is_file() and file_digest(binary) == packed.digest):
        into.mkdir(parents=True, exist_ok=True)
        into.chmod(0o755)      # the unprivileged user a server runs as must pass through it
        for leftover in [folder, *into.glob(f".unpacking-{packed.folder_name}-*")]:   # an unpack cut short
            shutil.rmtree(leftover, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=f".unpacking-{packed.folder_name}-", dir=into))
        with tarfile.open(fileobj=io.BytesIO(packed.tree), mode="r:gz") as tar:
            extract(tar, staging)
        staging.chmod(0o755)   # the unprivileged user a server runs as must reach its tree
        staging.rename(folder)
    found = file_digest(binary) if binary.is_file() else "nothing"
    if found != packed.digest:
        raise PgolabError(f"{packed.label}'s install tree arrived with {packed.binary} at {found[:12]}, "
                          f"packed at {packed.digest[:12]}",
                          hint="run the same command again: the worker packs its build anew")
    record = BuildRecord.from_dict(packed.record, f"{packed.label}'s build record")
    return BenchTarget(packed.label, BuildRecord.kind, installation_for_binary(binary), record)


def extract(tar: tarfile.TarFile, into: Path) -> None:
    """Every member inside `into`, with the programs' modes. Python 3.11.4 and later refuse a member or
    a link that leads outside it themselves (the "data" filter); before (Debian 12's 3.11.2), the same
    check by hand."""
    if hasattr(tarfile, "data_filter"):
        try:
            tar.extractall(into, filter="data")
        except tarfile.FilterError as exc:
            raise PgolabError(f"the install tree names a path outside itself: {exc}",
                              hint="the worker's tree is not one pgolab packed: run the same command again") from exc
        return
    for member in tar.getmembers():
        for name in (member.name, member.linkname if member.islnk() or member.issym() else ""):
            target = (into / Path(member.name).parent / name) if member.issym() and name == member.linkname \
                else into / name
            if name and (Path(name).is_absolute() or not target.resolve().is_relative_to(into.resolve())):
                raise PgolabError(f"the install tree names a path outside itself: {member.name} -> {name}",
                                  hint="the worker's tree is not one pgolab packed: run the same command again")
    tar.extractall(into)
