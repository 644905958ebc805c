"""A PGO build's training profile as a file: exported with what it was made from, checked and
unpacked by a build that compiles with it instead of training (`pgolab profile export`,
`pgolab build --profile FILE`). BOLT's profile of a `_bolt` build is one too (`bolt_input`): kept
in and read from a folder of profiles (`pgolab matrix --profiles`) by the BOLT stage.

The file is a gzipped tar: `pgolab-profile.json` (the identity below) and `profile/`, the merged
profile's files as the profile tool reads them (gcc: one .gcda per object, named by the object's
path in the build; clang: default.profdata). A build reads it only if the source tree (by digest),
the instrumented variant and the compiler (by version) are those that made it: the profile's
counters belong to that instrumented binary, and gcc's to that compiler's object layout.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .errors import PgolabError
from .host import Host
from . import replicates
from .profiles import ProfileTool, files_digest, holds_sealed
from .record import BuildRecord
from .sources import content_digest
from .targets.base import engines_suffix
from .stored import known_fields
from .toolchains import toolchain
from .variants import parse as parse_variant

FORMAT = 1
IDENTITY_FILE = "pgolab-profile.json"
PROFILE_FOLDER = "profile"
SUFFIX = ".profile.tar.gz"


@dataclass(frozen=True)
class ProfileIdentity:
    """What a profile was made from; a build that reads it must match the first four."""
    server: str
    source_digest: str             # the tree's content (sources.content_digest), the same on every machine
    instrumented_variant: str      # the build that was trained (rel_pgo_gen, rel_lto_pgo_gen_clang, ...)
    compiler: dict                 # the toolchain's versions (gcc, g++ / clang, clang++, lld, llvm-profdata)
    source_version: str
    training: str                  # the training load's label
    profile_digest: str            # of the files under profile/, as the profile tool digests them
    files: int
    bytes: int
    made_by: str                   # the build that trained it: label, binary digest, host
    format: int = FORMAT
    # The trained tree's path: clang names functions of internal linkage by their file, so a build
    # of a tree elsewhere renames them (profiles/relocation.py). Files before it: inferred.
    source_root: str = ""
    # TrainingSpec.digest() of the training (load, length, seed), which the label alone does not say;
    # empty in files written before it, and for a build that itself read an imported profile.
    training_digest: str = ""
    # The build whose own training it is (rel_pgo_use, rel_pgo_use_partial+r2): builds that share an
    # instrumented build and a training spec still train apart. Empty in files written before it.
    trained_build: str = ""
    # A BOLT profile's: the digest of the linked binary BOLT instrumented, which its counts belong to
    # (empty: a compiler's profile); and what llvm-bolt's instrumentation asked for (stages/bolt
    # Adjustments), which the layout starts with.
    bolt_input: str = ""
    bolt_adjustments: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, where: str) -> "ProfileIdentity":
        version = data.get("format")
        if not isinstance(version, int) or version > FORMAT:
            raise PgolabError(f"{where} is a profile file of format {version!r}; this pgolab reads up to {FORMAT}",
                              hint="upgrade pgolab, or export the profile again with this one")
        try:
            return cls(**known_fields(cls, data))
        except TypeError as exc:     # a field every format has is missing
            raise PgolabError(f"{where} is incomplete: {exc}", hint="export the profile again")

    def mismatch(self, expected: "ProfileIdentity", stale: bool = False) -> list[str]:
        """The fields that make this profile unreadable for a build expecting `expected`. A stale
        profile (`--stale-profile`) may come from another tree of the same server: the compile then
        says how much of it still applies."""
        checked = ("server", "instrumented_variant", "compiler", "bolt_input") if stale else \
            ("server", "source_digest", "instrumented_variant", "compiler", "bolt_input")
        return [f"{name} (profile: {getattr(self, name)}, build: {getattr(expected, name)})"
                for name in checked if getattr(self, name) != getattr(expected, name)]


def expected_identity(server: str, source_digest: str, instrumented_variant: str, compiler: dict,
                      training: str = "", training_digest: str = "", trained_build: str = "") -> ProfileIdentity:
    """What a build needs of a profile (the other fields are the profile's own); the training and the
    build that trained are checked only where a build chooses among files (find)."""
    return ProfileIdentity(server, source_digest, instrumented_variant, compiler, "", training, "", 0, 0, "",
                           training_digest=training_digest, trained_build=trained_build)


def file_name(identity: ProfileIdentity) -> str:
    """A profile file's name in a folder of them (find): the build whose training it is, and its own
    digest (find reads the identity, not the name)."""
    name = (f"{identity.server}-{identity.source_version}-{identity.trained_build or identity.instrumented_variant}-"
            f"{identity.profile_digest[:12]}{SUFFIX}")
    return name.replace("/", "_")     # (a name from a file another machine wrote stays in its folder)


@dataclass(frozen=True)
class Found:
    """What a folder of profiles holds for one build (find)."""
    path: Path | None
    identity: "ProfileIdentity | None"
    unreadable: tuple[str, ...] = ()     # files passed over, each with why
    matches: tuple[tuple[Path, "ProfileIdentity"], ...] = ()    # every file for the same build and training

    @property
    def others(self) -> int:
        return max(len(self.matches) - 1, 0)


def find(folder: Path, expected: ProfileIdentity, prefer: Path | None = None) -> Found:
    """The file in `folder` made for a build expecting `expected` by the very build and training that
    would make it here (by name and digest): a build compiled from it is the build that trained it
    (`pgolab matrix --profiles`). Of several, `prefer` (the file this build imported before), else the
    first by name. A file that cannot be read is passed over and named."""
    matching, unreadable = [], []
    for path in sorted(folder.glob(f"*{SUFFIX}")) if folder.is_dir() else []:
        try:
            identity = read_identity(path)
        except PgolabError as exc:
            unreadable.append(f"{path.name}: {exc}")
            continue
        if (not identity.mismatch(expected) and identity.training_digest == expected.training_digest != ""
                and identity.trained_build == expected.trained_build != ""):
            matching.append((path, identity))
    chosen = next((m for m in matching if prefer is not None and m[0].resolve() == prefer.resolve()),
                  matching[0] if matching else (None, None))
    return Found(*chosen, tuple(unreadable), tuple(matching))


def instrumented_name(variant, distribution, engines=()) -> str:
    """The instrumented build a profile comes from, as its identity names it: configured like the
    distribution's package, or with engine plugins, its objects differ, so its name says so."""
    return variant.instrumented().name + (distribution.suffix if distribution else "") + engines_suffix(engines)


def require_own_profile(variant, name: str, command) -> None:
    """A profile file holds a PGO build's own training: refused for a build that reads no profile,
    or (a _bolt, _split, _hotcold build, or one with a link-only axis) reads its twin's.
    `command(variant name)` is the command the hint gives."""
    if not variant.reads_profile:
        raise PgolabError(f"{name} ({variant.name}) is not a PGO build: it reads no profile",
                          hint=f"give a PGO build's, e.g. {command('rel_pgo_use')}")
    if (source := variant.profile_twin()) is not None:
        twin = source.name
        raise PgolabError(f"{name} compiles with the profile of its twin {twin}", hint=f"give that one: {command(twin)}")


def export_build(label: str, source: Path | None, out: Path) -> ProfileIdentity:
    """`pgolab profile export`: the profile of the newest finished build of that label (or the one
    from that source tree) to `out`."""
    record = BuildRecord.find(label, source)
    require_own_profile(parse_variant(record.variant), label, lambda name: f"pgolab profile export {name}")
    return export_compiled_with(record, out)


def profile_owners(record: BuildRecord) -> list[str]:
    """The build names whose folder (beside the finished build's) may hold the profile it compiled with:
    its own, or its twin's as the chain names it (the twin variant, or `LABEL-<twin>` for a labelled
    build, then the distribution and engine suffixes and the replicate: the same replicate). A build
    labelled with its own variant name could be either: the seal decides (export_compiled_with)."""
    twin = parse_variant(record.variant).profile_twin()
    if twin is None:
        return [record.label]
    tail = (record.distribution_build.suffix if record.distribution_build else "") + engines_suffix(record.engines)
    build_label, k = replicates.split(record.label)
    own = build_label[:-len(tail)] if tail and build_label.endswith(tail) else build_label
    names = [twin.name, f"{own}-{twin.name}"] if own == record.variant else [f"{own}-{twin.name}"]
    return [replicates.label(name + tail, k) for name in names]


def export_compiled_with(record: BuildRecord, out: Path) -> ProfileIdentity:
    """The profile a finished PGO build compiled with, its own training's or its twin's, written to `out`
    as the build that trained it would export it (trained_build names that build), for another machine
    to build the same binary. Refused where no folder holds what its merge sealed any more (trained
    again since), or the record names no training (built before pgolab recorded one)."""
    variant = parse_variant(record.variant)
    if not variant.reads_profile:
        raise PgolabError(f"{record.label} ({variant.name}) is not a PGO build: it reads no profile")
    if not record.training_digest:
        raise PgolabError(f"{record.label} records no training of its own (compiled from a profile file, or "
                          "built before pgolab recorded its training's digest)",
                          hint=f"give the file it was compiled from, or build it again: pgolab build SOURCE "
                               f"--variant {variant.name}")
    tool = toolchain(variant.compiler).profile
    sealed = record.profile.get("merge", {}).get("sealed")
    for name in profile_owners(record):
        folder = record.dir.parent / name / "profile"
        # (A record from before seals were recorded: its folder as it is.)
        if folder.is_dir() and (sealed is None or holds_sealed(folder, tool, sealed)):
            return export(record, instrumented_name(variant, record.distribution_build, record.engines), tool,
                          folder, out, trained_build=name)
    raise PgolabError(f"{record.label}: the profile it compiled with is no longer in "
                      f"{' or '.join(str(record.dir.parent / n / 'profile') for n in profile_owners(record))} "
                      "(trained again since)", hint=f"no file makes that binary again: build it anew (pgolab build "
                                                   f"SOURCE --variant {variant.name}, or the matrix's command) and export that")


def export(record: BuildRecord, instrumented_variant: str, tool: ProfileTool, profile_dir: Path,
           out: Path, trained_build: str | None = None) -> ProfileIdentity:
    """Write a finished PGO build's profile with its identity to `out`: its own training's, or
    (`trained_build`, a _bolt build's twin) the training of the build whose profile it reads."""
    files = tool.read_files(profile_dir)
    if not files or not all(f.is_file() for f in files):
        raise PgolabError(f"{record.label} has no merged profile in {profile_dir}",
                          hint=f"build it first: pgolab build SOURCE --variant {record.variant}")
    trained_build = trained_build or record.label
    made_by = (f"{record.label} (binary {(record.binary_digest or 'not recorded')[:12]})" if trained_build == record.label
               else f"{trained_build}'s training, read by {record.label}")
    return write(out, files, server=record.server, source_digest=_source_content(record),
                 instrumented_variant=instrumented_variant, compiler=record.toolchain,
                 source_version=record.version, training=record.training or "", made_by=made_by,
                 source_root=str(record.source_path), training_digest=record.training_digest or "",
                 trained_build=trained_build)


def keep(folder: Path, expected: ProfileIdentity, files: list[Path],
         write_to: Callable[[Path], ProfileIdentity]) -> str:
    """A profile trained here (`files`), written into `folder` once by `write_to`, for a build on another
    machine to find (find) instead of training; what was done, for the build's progress. A file of
    another training of the same build that reached the folder first stays: other machines read that one."""
    found = find(folder, expected)
    own = files_digest(files)
    if (kept := next((path for path, identity in found.matches if identity.profile_digest == own), None)) is not None:
        return f"profile: {kept} (kept before)"
    if found.identity is not None:
        return (f"profile: not kept; {found.path.name} holds another training of {expected.trained_build} "
                f"(made by {found.identity.made_by}), which other machines read")
    folder.mkdir(parents=True, exist_ok=True)
    exporting = folder / f".{expected.trained_build}.{os.getpid()}.exporting"
    identity = write_to(exporting)
    return f"profile: {exporting.replace(folder / file_name(identity))}"


def write_as(out: Path, files: list[Path], template: ProfileIdentity, made_by: str, **changes) -> ProfileIdentity:
    """write() with the identity of `template` (an expected identity with what it lacks in `changes`)."""
    fields = {k: v for k, v in template.as_dict().items() if k not in ("profile_digest", "files", "bytes", "made_by",
                                                                       "format")}
    return write(out, files, made_by=made_by, **(fields | changes))


def write(out: Path, files: list[Path], *, made_by: str, **identity) -> ProfileIdentity:
    """The profile's files and their identity (what they were made from, `made_by` on this host) as
    one file at `out`: written whole or not at all."""
    identity = ProfileIdentity(**identity, profile_digest=files_digest(files), files=len(files),
                               bytes=sum(f.stat().st_size for f in files), made_by=f"{made_by} on {Host.this().cpu}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    with tarfile.open(tmp, "w:gz") as tar:
        data = json.dumps(identity.as_dict(), indent=2).encode()
        info = tarfile.TarInfo(IDENTITY_FILE)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for f in files:
            tar.add(f, arcname=f"{PROFILE_FOLDER}/{f.name}", recursive=False)
    tmp.replace(out)
    return identity


def _source_content(record: BuildRecord) -> str:
    if record.source.content_digest:
        return record.source.content_digest
    if not record.source_path.is_dir():     # a record from before content digests, its tree gone
        raise PgolabError(f"{record.label}'s source tree {record.source_path} is gone, and its record does not say "
                          f"what the tree held", hint=f"build it again (pgolab build SOURCE --variant {record.variant})")
    return content_digest(record.source_path)


def read_identity(path: Path) -> ProfileIdentity:
    try:
        with tarfile.open(path, "r:gz") as tar:
            # The identity is written first: read there, the rest of the archive is not decompressed.
            first = tar.next()
            member = tar.extractfile(first if first is not None and first.name == IDENTITY_FILE
                                     else tar.getmember(IDENTITY_FILE))
            if member is None:
                raise KeyError(IDENTITY_FILE)
            return ProfileIdentity.from_dict(json.loads(member.read()), str(path))
    except (OSError, EOFError, tarfile.TarError, KeyError, ValueError) as exc:     # (ValueError: bad JSON or bytes)
        raise PgolabError(f"{path} is not a pgolab profile file: {exc}",
                          hint="give a file written by `pgolab profile export`")


def unpack(path: Path, expected: ProfileIdentity, tool: ProfileTool, profile_dir: Path,
           stale: bool = False) -> ProfileIdentity:
    """The profile into `profile_dir` (emptied first), after checking it belongs to this build;
    refused, naming the fields that differ, if it does not."""
    identity = read_identity(path)
    if identity.bolt_input and not expected.bolt_input:
        raise PgolabError(f"{path} holds BOLT's profile of {identity.trained_build}, not a compiler's",
                          hint="a matrix or search reads it from its --profiles folder; give a PGO build's "
                               "profile (pgolab profile export)")
    differing = identity.mismatch(expected, stale)
    if differing:
        another_tree = not stale and identity.mismatch(expected, stale=True) == []
        raise PgolabError(f"the profile in {path} was not made for this build: {'; '.join(differing)} differ",
                          hint="add --stale-profile to use a profile of another tree of this server (the build "
                               "then says how much of it applies)" if another_tree else
                               "export the profile of a build of this source and variant with this compiler")
    if profile_dir.exists():
        for old in profile_dir.iterdir():
            if old.is_file():
                old.unlink()
    profile_dir.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar.getmembers():
                folder, _, name = member.name.partition("/")
                if member.isfile() and folder == PROFILE_FOLDER and name and "/" not in name:
                    source = tar.extractfile(member)
                    assert source is not None
                    (profile_dir / Path(member.name).name).write_bytes(source.read())
    except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:    # its identity read, its files not
        raise PgolabError(f"the profile in {path} is damaged (cut short in transfer?): {exc}",
                          hint="remove it, or copy or export it again")
    got = files_digest(tool.read_files(profile_dir))
    if got != identity.profile_digest:
        raise PgolabError(f"the profile in {path} does not match its own digest (damaged in transfer?)",
                          hint="export it again")
    return identity
