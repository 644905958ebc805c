"""The build record (build.json): what a finished build is, read and written in one place; and
what a run stores of each target it measured (a build record, or a binary pgolab did not build).

Bench, matrix, `pgolab builds` and profile-check all find builds through `BuildRecord.find`
and `BuildRecord.all`; nothing else globs for build.json.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from . import paths
from .distribution import DistributionBuild
from .errors import PgolabError
from .profiles import ConsumptionCheck
from .profiles.bolt import BoltStats
from .stored import known_fields

RECORD_FILE = "build.json"
# build.json's format: 1 had no version field; 2 adds it; 3 adds code_bytes and bolt; 4 adds
# binary_digest; 5 adds distribution; 6 adds replicate and layout_seed; 7 adds engines; 8 adds huge_code_kib; 9 adds code_digest;
# 10 adds training_digest. A newer
# file is refused, not misread.
RECORD_VERSION = 10


@dataclass(frozen=True)
class ProfileOverlap:
    training: str
    benchmark: str          # what the profile was compared with
    share: float            # 0..1 (profiles.OverlapReport.overlap)


@dataclass(frozen=True)
class SourceInfo:
    path: str = ""
    version: str = ""
    digest: str = ""            # the fast fingerprint (paths, sizes, times): this machine's build folders
    content_digest: str = ""    # paths and bytes alone: the same tree on every machine ("": not recorded)

    @classmethod
    def from_dict(cls, data: dict) -> "SourceInfo":
        return cls(**known_fields(cls, data))

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class BuildRecord:
    label: str
    variant: str
    description: str
    server: str
    source: SourceInfo
    toolchain: dict
    flags: dict                     # per stage ("gen", "final"): added compile/link flags and tools
    server_binary: str
    install_dir: str
    logs: str
    # The parts below are stored as build.json holds them; read them through the typed properties
    # (profile_use, bolt_stats, overlap), which know every version's shape.
    phases: dict = field(default_factory=dict)   # name -> seconds, cpu_seconds, attempts, finished
    build_seconds: float = 0.0
    build_cpu_seconds: float = 0.0
    training: str | None = None
    # TrainingSpec.digest() of its own training (None: none, an imported profile's, or before version 10)
    training_digest: str | None = None
    instrumented_build: str | None = None
    profile: dict = field(default_factory=dict)  # merge and check-profile figures
    smoke: str | None = None
    code_bytes: int | None = None   # executable sections of the server binary
    # sha256 of the server binary: "the same build" is this digest, wherever it was built (None
    # before version 4)
    binary_digest: str | None = None
    # sha256 of what the binary runs (elf.loaded_digest; None before version 9): equal where the file
    # digests differ only in symbol names, as clang ThinLTO builds of one tree at two paths do.
    code_digest: str | None = None
    # The AVX-512 extensions -march=native turned on where it was built ([] none; None: not a native
    # build, or recorded before this field): code callgrind cannot run.
    native_avx512: list[str] | None = None
    bolt: dict | None = None        # BOLT's own statistics, for _bolt variants
    profile_check: dict | None = None
    # The distribution package a build configured like it replaces (distribution.DistributionBuild;
    # None: configured pgolab's way, or recorded before version 5)
    distribution: dict | None = None
    # Which build replicate (replicates.py; 1 before version 6) and how its layout was moved (None:
    # replicate 1, the build as the variant makes it).
    replicate: int = 1
    layout_seed: str | None = None
    # Storage-engine plugins built with the server ([] none, or recorded before version 7).
    engines: list[str] = field(default_factory=list)
    # A _hugify or _hugetext build's running code on huge pages, as its smoke test read it (None: not measured).
    huge_code_kib: int | None = None
    record_version: int = RECORD_VERSION
    kind = "variant"      # a run's target that pgolab built

    @property
    def version(self) -> str:
        """The server version, as the source tree names it."""
        return self.source.version

    @property
    def profile_use(self) -> ConsumptionCheck | None:
        """How the optimized compile used the profile (a PGO build's check-profile phase)."""
        check = self.profile.get("check-profile")
        if not check:
            return None
        return ConsumptionCheck(check.get("method", ""), check["objects"], check["with_profile"],
                                check.get("mismatched", 0))

    @property
    def bolt_stats(self) -> BoltStats | None:
        """llvm-bolt's own statistics of a _bolt build."""
        stats = (self.bolt or {}).get("bolt-optimize", {}).get("stats")
        if not stats:
            return None
        return BoltStats(**{f.name: stats.get(f.name, 0) for f in fields(BoltStats)})   # older: fewer counts

    @property
    def distribution_build(self) -> DistributionBuild | None:
        return DistributionBuild.from_dict(self.distribution) if self.distribution else None

    @property
    def overlap(self) -> ProfileOverlap | None:
        """What `pgolab profile-check` last found for this build's training."""
        if not self.profile_check:
            return None
        return ProfileOverlap(self.profile_check.get("training", ""), self.profile_check["benchmark"],
                              self.profile_check["overlap"])

    def summary(self) -> str:
        """One line for a run's targets table: what it is, its training, its profile's overlap."""
        text = self.description
        if self.engines:
            text += f"; with the engine plugin{'s' if len(self.engines) > 1 else ''} {', '.join(self.engines)}"
        if self.training:
            text += f"; trained with {self.training}"
        if self.overlap:
            text += f"; profile overlap with {self.overlap.benchmark}: {self.overlap.share * 100:.1f}%"
        return text

    # -- the build's folder --------------------------------------------------
    @property
    def dir(self) -> Path:
        return Path(self.install_dir).parent.parent

    @property
    def source_path(self) -> Path:
        return Path(self.source.path)

    def installation(self):
        """A runnable installation of this build (what bench and matrix start)."""
        from .targets import target_for
        final = self.dir / "final"
        return target_for(self.server).installation(self.source_path, final / "build", final / "install")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, where: str = "a build record") -> "BuildRecord":
        """From build.json's content, or a run's stored copy of it; any version up to this one."""
        version = data.get("record_version", 1)
        if version > RECORD_VERSION:
            raise PgolabError(f"{where} is a version-{version} build record; this pgolab reads up to "
                              f"{RECORD_VERSION}", hint="upgrade pgolab, or rebuild with this one")
        values = known_fields(cls, {"label": data.get("variant"), **data})
        return cls(**{**values, "source": SourceInfo.from_dict(values.get("source") or {})})

    # -- reading and writing -------------------------------------------------
    def save(self) -> Path:
        path = self.dir / RECORD_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.as_dict(), indent=2))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: Path) -> "BuildRecord":
        """From a build.json, or a build folder holding one."""
        if path.is_dir():
            path = path / RECORD_FILE
        return cls.from_dict(json.loads(path.read_text()), str(path))

    @classmethod
    def all(cls) -> list["BuildRecord"]:
        """Every finished build under the builds folder, oldest first."""
        found = sorted(paths.builds_dir().glob(f"*/*/{RECORD_FILE}"), key=lambda p: p.stat().st_mtime)
        return [cls.load(p) for p in found]

    @classmethod
    def find(cls, label: str, source_path: Path | None = None) -> "BuildRecord":
        """The newest finished build of that label (the variant name unless --label gave another),
        or the one from source_path."""
        matches = [r for r in cls.all() if r.label == label
                   and (source_path is None or r.source_path == source_path.absolute())]
        if not matches:
            where = f" from {source_path}" if source_path else ""
            raise PgolabError(f"no finished build of {label!r}{where} in {paths.builds_dir()}",
                              hint=f"build it first: pgolab build SOURCE --variant {label}")
        return matches[-1]


@dataclass(frozen=True)
class BinaryInfo:
    """A server binary a run measured that pgolab did not build (--binary NAME=PATH)."""
    path: str = ""
    version: str = ""       # what `BINARY --version` said
    description: str = ""
    kind = "binary"

    @classmethod
    def from_dict(cls, data: dict) -> "BinaryInfo":
        return cls(**known_fields(cls, data))

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return self.description or self.version


TargetDescription = BuildRecord | BinaryInfo
DESCRIPTIONS = {cls.kind: cls for cls in (BuildRecord, BinaryInfo)}


def load_description(kind: str, data: dict) -> TargetDescription:
    """A run's stored description of one target, by the target's kind."""
    if kind not in DESCRIPTIONS:
        raise PgolabError(f"a stored target of kind {kind!r}: this pgolab knows {', '.join(DESCRIPTIONS)}",
                          hint="upgrade pgolab to read this store")
    return DESCRIPTIONS[kind].from_dict(data)

