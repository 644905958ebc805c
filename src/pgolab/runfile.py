"""A run as one file (`pgolab export`, `pgolab import`): how a run travels between machines.

The file is gzipped JSON holding everything the store keeps of the run: its identity, options and
host, every target with its build record and binary digest, every sample, every excluded block
with its reason, and, if asked, the exported profiles of its PGO targets. It carries its format
version and a digest of its content, checked on import: a truncated or edited file is refused, not
half imported. Importing the same file twice changes nothing.

A run killed on one machine continues on another: rebuild the same binaries there (the same
digests: reproducible builds, PGO ones from the exported profiles), import the file, run the same
command. A run that measures wall-clock QPS names its machine in its identity, so it continues
only on the same kind of CPU; a cost-only run continues anywhere (bench.run_identity).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__, labels, paths, profile_file
from .errors import PgolabError
from .profile_file import profile_owners
from .record import BuildRecord
from .sources import file_digest
from .variants import parse as parse_variant
from .stages.bolt import bolt_profile_of
from .stages.pgo import PROFILE_IMPORT
from .store import Store

FORMAT = 1
# The name a _bolt target's BOLT profile has in a run file, after its label.
BOLT_SUFFIX = ".bolt"


@dataclass(frozen=True)
class Imported:
    run: str
    run_id: int
    samples_added: int
    samples_in_file: int
    profiles: list[Path]         # compile profiles (pgolab build ... --profile FILE, or --profiles)
    bolt_profiles: list[Path]    # BOLT profiles (read through --profiles only)
    left_out: list[str]          # what the exporting machine said the file lacks


def _content_digest(content: dict) -> str:
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Exported:
    """What `pgolab export` wrote: how many samples, which profiles, and which the file lacks and why."""
    samples: int
    profiles: list[str]
    left_out: list[str]


def export_run(store: Store, run_ref: str, out: Path, with_profiles: bool = False) -> Exported:
    """Write a stored run to `out`."""
    data, content = _exported(store, run_ref, with_profiles)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    tmp.write_bytes(data)
    tmp.replace(out)
    return Exported(len(content["samples"]), sorted(content.get("profiles", {})), content.get("profiles_left_out", []))


def exported(store: Store, run_ref: str, with_profiles: bool = False) -> tuple[bytes, int]:
    """A stored run as the bytes of its run file (what a cluster's task sends back), and how many
    samples it holds."""
    data, content = _exported(store, run_ref, with_profiles)
    return data, len(content["samples"])


def _exported(store: Store, run_ref: str, with_profiles: bool) -> tuple[bytes, dict]:
    run = store.run(run_ref)
    if run is None:
        raise PgolabError(f"no stored run {run_ref!r} in {store.path}", hint="`pgolab report --list` shows them")
    content = store.rows(run.id)
    if with_profiles:
        content["profiles"], content["profiles_left_out"] = _profiles_of(store, run.id)
    document = {"format": FORMAT, "pgolab": __version__, "digest": _content_digest(content), "content": content}
    return gzip.compress(json.dumps(document).encode()), content


def _profiles_of(store: Store, run_id: int) -> tuple[dict[str, str], list[str]]:
    """name -> a profile file (base64), for another machine to build the same binaries: under a target's
    label, the profile it trained (or the file it was compiled from); under a twin's name, the profile
    of the twin a target compiled with (_bolt, _split, a link-only axis); `<label>.bolt`, a _bolt
    target's BOLT profile. And what the file still lacks, each with what to do."""
    carried = Carried()
    for t in store.targets(run_id):
        if isinstance(t.description, BuildRecord):
            _carry(t.description, carried, t.label)
    return carried.files, carried.left_out


@dataclass
class Carried:
    """The profiles a run file carries, as its targets are gone through (_carry)."""
    files: dict[str, str] = field(default_factory=dict)      # name -> a profile file (base64)
    digests: dict[str, str] = field(default_factory=dict)    # name -> its profile's digest
    left_out: list[str] = field(default_factory=list)        # what it lacks, each with what to do

    def put(self, name: str, identity: profile_file.ProfileIdentity, path: Path, label: str) -> bool:
        """A profile under `name`, unless another target put another profile there (two trainings of
        one build: the first stays, and the file says which target's profile it lacks). Two exports of
        one training differ in bytes (who read it, when): the profile's digest decides. Whether it is
        in the file."""
        if self.digests.setdefault(name, identity.profile_digest) != identity.profile_digest:
            self.lack(label, f"the profile {name} it compiled with is another training than the one of that name "
                             "already in the file: give its build there its own file (pgolab build ... --profile FILE)")
            return False
        self.files.setdefault(name, base64.b64encode(path.read_bytes()).decode())
        return True

    def lack(self, label: str, what: str) -> None:
        self.left_out.append(f"{label}: {what}")


def _one_line(exc: PgolabError) -> str:
    return f"{exc.message}: {exc.hint}" if exc.hint else exc.message


def _carry(record: BuildRecord, carried: Carried, label: str) -> None:
    """One target's profiles: the one it compiled with and its BOLT profile, each apart (a damaged file
    or record leaves that one out, named: the rest of the run still travels)."""
    for part in (_carry_compiled_with, _carry_bolt):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                part(record, Path(tmp) / "profile.tgz", carried, label)
            except PgolabError as exc:     # (a message naming the build already: its name once)
                carried.lack(label, _one_line(exc).removeprefix(f"{record.label}: "))
            except OSError as exc:
                carried.lack(label, f"a profile could not be read: {exc}")


def _carry_compiled_with(record: BuildRecord, out: Path, carried: Carried, label: str) -> None:
    """The profile a PGO target compiled with: the file it was read from, or its own or its twin's
    training, named after the build whose training it is, in the target's tree."""
    variant = parse_variant(record.variant)
    if not variant.reads_profile:
        return
    imported = record.profile.get(PROFILE_IMPORT, {})
    tree, _ = labels.split(label)

    def named(build: str) -> str:
        """A profile's name in the file: the build whose training it is, in the target's tree."""
        return labels.in_tree(tree, build) if tree else build
    if imported.get("file") is None:
        identity = profile_file.export_compiled_with(record, out)
        # (A twin that is a target too gives the same training's name: one file of one training.)
        carried.put(named(identity.trained_build), identity, out, label)
        return
    # Compiled from a file (its own, or its twin's): that file, which names its training.
    read_from, recorded = Path(imported["file"]), imported.get("file_digest")    # (none: built before it was)
    if not read_from.is_file() or recorded not in (None, file_digest(read_from)):
        carried.lack(label, f"compiled from {read_from}, which " + (
            "holds another profile since" if read_from.is_file() else "is no longer there")
            + ": give its build there the file it was compiled from (pgolab build ... --profile FILE)")
        return
    identity = profile_file.read_identity(read_from)
    if carried.put(named(identity.trained_build or record.label), identity, read_from, label) and \
            (not identity.training_digest or identity.trained_build not in profile_owners(record)):
        carried.lack(label, f"compiled from {read_from.name}, a profile "
                            + (f"of {identity.trained_build}'s training" if identity.training_digest else
                               "that names no training (written before pgolab recorded it)")
                            + ", which a --profiles folder does not give this build: give it to its build there "
                              "with pgolab build ... --profile FILE")


def _carry_bolt(record: BuildRecord, out: Path, carried: Carried, label: str) -> None:
    """A _bolt target's BOLT profile, as `<label>.bolt`."""
    merged = (record.bolt or {}).get("bolt-merge")
    if not merged:
        return
    identity = bolt_profile_of(record.dir, merged, out)
    if identity is not None:
        carried.put(f"{label}{BOLT_SUFFIX}", identity, out, label)
        return
    where = record.dir / "final" / "bolt"
    carried.lack(label, "its BOLT profile, " + (
        f"not on this machine ({where} is missing): export the run on the machine that built it, or" if not
        where.is_dir() else
        "merged before pgolab recorded what it is a profile of:" if "profile_identity" not in merged else
        "not as its merge sealed it (written to or removed since):") + " BOLT trains again there, into another binary")


def import_run(store: Store, path: Path) -> Imported:
    """Bring a run file into the store: the run if it is new, else what the store lacks of it."""
    return import_content(store, read(path))


def import_content(store: Store, content: dict) -> Imported:
    """A run file's checked content (read, decoded) into the store; its profiles into the folder of
    profiles named after the run, each named by what it is (profile_file.file_name), so that another
    training of the same build imported later lands beside it, not over it."""
    name = content["run"]["name"]
    if not name or Path(name).name != name or name in (".", ".."):
        raise PgolabError(f"the run file names its run {name!r}, which is not a name",
                          hint="export the run again with pgolab export")
    run_id, added = store.add_rows(content)
    profiles, bolt_profiles = [], []
    if content.get("profiles"):
        folder = paths.home() / "profiles" / name
        folder.mkdir(parents=True, exist_ok=True)
        for data in content["profiles"].values():
            # Read before it is named: a half-written file is never one a --profiles folder holds (nor
            # globs: no profile file's suffix until then).
            partial = folder / f".{os.getpid()}.importing"
            partial.write_bytes(base64.b64decode(data))
            try:
                identity = profile_file.read_identity(partial)
            except PgolabError:
                partial.unlink()
                raise
            target = partial.replace(folder / profile_file.file_name(identity))
            (bolt_profiles if identity.bolt_input else profiles).append(target)
    return Imported(name, run_id, added, len(content["samples"]), profiles, bolt_profiles,
                    list(content.get("profiles_left_out", [])))


def read(path: Path) -> dict:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise PgolabError(f"{path} is not a pgolab run file: {exc}", hint="give a file written by `pgolab export`")
    return decoded(data, str(path))


def decoded(data: bytes, path: str, hint: str = "") -> dict:
    """A run file's content, checked against its format and its own digest; `path` names it in errors,
    `hint` says what to do where the file did not come from `pgolab export`."""
    try:
        document = json.loads(gzip.decompress(data))
    except (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise PgolabError(f"{path} is not a pgolab run file: {exc}",
                          hint=hint or "give a file written by `pgolab export`")
    version = document.get("format") if isinstance(document, dict) else None
    if not isinstance(version, int) or version > FORMAT:
        raise PgolabError(f"{path} is a run file of format {version!r}; this pgolab reads up to {FORMAT}",
                          hint=hint or "upgrade pgolab, or export the run again with this one")
    if _content_digest(document.get("content", {})) != document.get("digest"):
        raise PgolabError(f"{path} does not match its own digest (truncated or edited)",
                          hint=hint or "export the run again and copy the whole file")
    return document["content"]
