"""Running a build plan: a chain of phases (see phases.py), composed from the stage modules.

A re-run skips every phase whose record matches and repeats the rest, so an
interrupted build continues where it stopped (ninja and make resume their own
work) and an unchanged one does nothing. For a PGO variant the plan is the
whole pipeline: instrumented build, training run, profile merge, optimized
build, a check that the profile was used; a `_bolt` variant adds BOLT's
instrument, train, merge and optimize; every plan ends with a smoke test.

The pieces: layout.py (the build's folder, its lock, stopping leftovers of a killed run),
chain.py (the instrumented builds and profile twin its profile comes from), stages/ (the
phases, each kind handed a small context built here), record.py (build.json).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import __version__, elf, profile_file, replicates, reproducible
from .chain import BuildChain
from .distribution import DistributionBuild
from .errors import PgolabError
from .layout import BuildLayout, stop_leftover_processes, variant_dir
from .phases import Phase, PhaseEngine, PhaseState, QuietReporter, Reporter, digest
from .profiles import holds_sealed, sealed_digest
from .profiles.bolt import bolt_profile
from .record import RECORD_FILE, BuildRecord, SourceInfo
from .runner import Runner, home_runner
from .sources import SourceTree, content_digest, file_digest, tree_digest
from .stages.bolt import BoltContext, bolt_phases, keep_bolt_profile
from .stages.compile import CompileContext, compile_phases
from .stages.context import Runners, SealedDigest, Servers
from .stages.pgo import PROFILE_IMPORT, PROFILE_READY, TRAINING_PHASES, PgoContext, pgo_phases
from .stages.smoke import SmokeContext, smoke_phase
from .targets import TARGETS, target_for
from .targets.base import engines_suffix
from .toolchains import ALLOCATORS, require
from .toolchains import toolchain as find_toolchain
from .variants import FlagSet, Variant, flags_for
from .workloads import TrainingSpec

__all__ = ["BuildRequest", "BuildResult", "Pipeline", "build", "like_distribution", "variant_dir", "Reporter",
           "QuietReporter", "with_profile_from", "keep_profile"]


@dataclass
class BuildRequest:
    source: SourceTree
    variant: Variant
    train: TrainingSpec
    jobs: int = field(default_factory=lambda: os.cpu_count() or 2)
    extra_args: list[str] = field(default_factory=list)
    use_ccache: bool = True
    smoke: bool = True
    label: str | None = None   # the build's folder name; lets one variant be built with several trainings
    profile_file: Path | None = None   # a PGO build compiles with this exported profile instead of training
    # The profile file may come from another tree of this server; this share of its functions must apply.
    stale_min_match: float | None = None
    # Configured like the distribution's package of this server (what `pgolab package` replaces); its
    # instrumented builds are too, since a profile is read by objects compiled like those that wrote it.
    distribution: DistributionBuild | None = None
    # Which build replicate this is (replicates.py): 1 the build itself; k > 1 another training seed
    # (a PGO build: `train` already moved) and layout seed k.
    replicate: int = 1
    # Storage-engine plugins built beside the server (MariaDB's rocksdb); the build is labelled +NAME.
    engines: tuple[str, ...] = ()
    # A folder of profile files (matrix --profiles): a _bolt build keeps BOLT's profile there as it is
    # merged, and one that has not instrumented its input here reads it from there (stages/bolt).
    profiles: Path | None = None

    def __post_init__(self):
        # One build whatever the spelling or repetition of its engines: one name, one digest.
        self.engines = tuple(dict.fromkeys(e.lower() for e in self.engines))

    @property
    def name(self) -> str:
        own = (self.label or self.variant.name) + (self.distribution.suffix if self.distribution else "")
        return replicates.label(own + engines_suffix(self.engines), self.replicate)

    def replicate_of(self, k: int) -> "BuildRequest":
        """Replicate k of this build (this one for k = 1)."""
        return replace(self, replicate=k, train=replicates.training(self.train, k))

    @property
    def configure_args(self) -> list[str]:
        """The distribution's options first, the user's after them: the later of two options wins."""
        return [*(self.distribution.configure_args if self.distribution else ()), *self.extra_args]


@dataclass
class BuildResult:
    variant_dir: Path
    server_binary: Path
    install_dir: Path
    record: BuildRecord | None     # None for a build run only up to a phase (a twin's training)
    up_to_date: bool
    digest: str      # of the last phase: what a build that depends on this one chains from


def require_buildable(variant: Variant, server: str) -> None:
    """Refuses, before anything is built, a variant the server cannot have. `_order`: a temporal
    profile is one trace per process file, and LLVM's runtime cannot merge one into a file another
    process wrote ("Temporal profiles do not support profile merging at runtime"); a forked backend
    inherits its parent's file name, so all but the first writer's counts would be lost."""
    if (why := order_refusal(variant, server)) is not None:
        one_process = ", ".join(name for name, t in TARGETS.items() if not t.forks_backends)
        raise PgolabError(why, hint=f"use _hotcold, _split or _bolt for a profile-driven layout of {server}; "
                                    f"_order serves servers of one process ({one_process})")


def order_refusal(variant: Variant, server: str) -> str | None:
    """Why this server cannot have this _order build (see require_buildable), or None."""
    if variant.order and target_for(server).forks_backends:
        return (f"{variant.name}: _order cannot train {server}, which forks a process per connection "
                "(LLVM's runtime cannot merge their temporal profiles, and would lose their counts)")
    return None


class Pipeline:
    """One build: its layout, its chain of instrumented builds, the plan of phases the stages make
    (each handed a context of its own, never the pipeline), and its record."""

    def __init__(self, request: BuildRequest, reporter: Reporter | None = None, source_digest: str | None = None):
        self.request = request
        self.reporter = reporter or QuietReporter()
        self.variant = request.variant
        self.target = target_for(request.source.server, request.engines)
        self.toolchain = find_toolchain(self.variant.compiler)
        if self.variant.allocator:    # refused before anything is built, with the package that has it
            require(f"{self.variant.allocator} library")
        self.profile_tool = self.toolchain.profile
        self.source_digest = source_digest or tree_digest(request.source.path)
        self.layout = BuildLayout(variant_dir(request.source, request.name, self.source_digest))
        self.dir, self.logs = self.layout.dir, self.layout.logs    # what callers (matrix, quality) name
        require_buildable(self.variant, request.source.server)
        self.chain = BuildChain(request, self.reporter, self.source_digest, Pipeline)
        # Where this build's profile lives: what its training wrote (pgo=use, csgen), its twin's,
        # or the directory compiled into the binary (pgo=gen; a training redirects it at run time).
        self.profile_dir = self.chain.profile_dir(self.layout.profile_dir)
        self.state: PhaseState | None = None
        self.ran_any = False

    @property
    def instrumented(self) -> "Pipeline | None":
        return self.chain.instrumented

    @property
    def profile_twin(self) -> "Pipeline | None":
        return self.chain.profile_twin

    @property
    def profile_owner(self) -> "Pipeline":
        """The build whose training wrote the profile this one reads (itself, or its twin)."""
        return self.profile_twin or self

    # -- stages: "final" is this build's own; "gen" is its instrumented build's (shared, or _pgo_csgen)
    def _stage_owner(self, stage: str) -> "Pipeline":
        if stage == "gen":
            if self.instrumented is None:
                raise PgolabError(f"internal: {self.variant.name} has no instrumented stage")
            return self.instrumented
        return self

    def build_dir(self, stage: str) -> Path:
        return self._stage_owner(stage).layout.build_dir

    def install_dir(self, stage: str) -> Path:
        return self._stage_owner(stage).layout.install_dir

    def stage_flags(self, stage: str) -> tuple[Variant, FlagSet]:
        owner = self._stage_owner(stage)
        flags = flags_for(owner.variant, self.toolchain, profile_dir=owner.profile_dir,
                          build_dir=owner.build_dir("final"))
        flags.compile += reproducible.prefix_map_flags(self.request.source.path, owner.build_dir("final"))
        if owner.request.replicate > 1:
            flags.link += self.toolchain.family.layout_seed_flags(owner.request.replicate, owner.layout.layout_seed_dir)
        if owner.variant.is_pgo:
            flags.compile.append(reproducible.NO_RECORDED_SWITCHES)
        return owner.variant, self.target.adapt_flags(owner.variant, flags)

    # -- what the stages are handed -----------------------------------------
    @property
    def runners(self) -> Runners:
        extra_env = reproducible.build_env(self.request.source.path)
        if self.request.replicate > 1:
            extra_env |= self.toolchain.family.layout_seed_env(self.layout.layout_seed_dir)
        if self.variant.writes_profile:
            # Instrumented programs run while building (configure checks, build-time tools) and by
            # the smoke test would otherwise leave counters in the directory compiled into the build.
            extra_env |= self.profile_tool.redirect_env(self.profile_dir, self.layout.incidental_profile_dir)
        return Runners(self.logs, extra_env)

    @property
    def servers(self) -> Servers:
        stages = {"final": self.layout}
        if self.instrumented is not None:
            stages["gen"] = self.instrumented.layout
        return Servers(self.target, self.request.source.path, stages, self.layout, self.request.train)

    def read_sealed(self) -> SealedDigest:
        """How a stage reads a profile's digest: checked against its seal; a refusal forgets this
        build's phases from the training that made the profile, so that the next run repeats it."""
        def read(profile_dir: Path, tool, retrain_from: str) -> str:
            assert self.state is not None, "a profile is read while its build runs"
            return sealed_digest(profile_dir, tool, self.state, retrain_from)
        return read

    def compile_context(self) -> CompileContext:
        variant, flags = self.stage_flags("final")
        return CompileContext(
            target=self.target, source=self.request.source.path, variant=variant, toolchain=self.toolchain,
            flags=flags, build_dir=self.layout.build_dir, install_dir=self.layout.install_dir,
            profile_dir=self.profile_dir, runner=self.runners, reporter=self.reporter, jobs=self.request.jobs,
            extra_args=self.request.configure_args, use_ccache=self.request.use_ccache,
            like_distribution=self.request.distribution is not None)

    def pgo_context(self) -> PgoContext:
        owner = self.profile_owner
        # A profile comes from a file (--profile) or a training, decided once by the chain; the build
        # that reads it makes it unless it has a profile twin (Variant.profile_source), which does.
        imports, makes = self.chain.imports, owner is self
        expected = self.expected_profile() if imports and makes else None
        return PgoContext(
            compile=self.compile_context(), tool=self.profile_tool, profile_dir=self.profile_dir,
            instrumented_profile_dir=self.instrumented.profile_dir if self.instrumented else self.profile_dir,
            first_profile=self.instrumented.profile_dir if self.variant.cs and self.instrumented else None,
            trains=makes and not imports, retrain_from=PROFILE_IMPORT if imports else TRAINING_PHASES[0],
            sealed_digest=owner.read_sealed(), build_log=self.layout.log("build"), train=self.request.train,
            runner=self.runners, servers=self.servers, reporter=self.reporter,
            profile_file=self.request.profile_file if imports and makes else None, expected=expected,
            # A profile twin imports the profile but runs no check: the build that compiles checks.
            stale_min_match=self.request.stale_min_match if imports else None)

    def expected_profile(self) -> profile_file.ProfileIdentity:
        """What a profile file must be made from for this build to compile with it. Its training and
        the build that trains it are checked only where a file is chosen from a folder (with_profile_from)."""
        return profile_file.expected_identity(
            self.request.source.server, content_digest(self.request.source.path, self.source_digest),
            profile_file.instrumented_name(self.variant, self.request.distribution, self.request.engines),
            self.toolchain.versions(), self.request.train.label, self.request.train.digest(),
            self.profile_owner.request.name)

    def profile_state(self) -> dict:
        """The phases recorded in the folder of the build whose training makes this build's profile."""
        return PhaseState(self.profile_owner.layout.state_file).phases

    def profile_trained_here(self) -> bool:
        """Whether this machine has trained, or begun to train, this build's profile with this request's
        training: its training phase is recorded, with this training's digest (a phase recorded before
        the digest was: taken as this training's)."""
        trained = self.profile_state().get(TRAINING_PHASES[0])
        return trained is not None and trained.get("training_digest") in (None, self.request.train.digest())

    def bolt_context(self) -> BoltContext:
        servers = self.servers
        tool = bolt_profile(servers.installation("final").forks_backends, self.toolchain.family.llvm_version,
                            hugify=self.variant.hugify)
        return BoltContext(
            dir=self.layout.bolt_dir, installed=self.target.server_binary(self.layout.install_dir), tool=tool,
            sealed_digest=self.read_sealed(),
            state_file=self.layout.state_file, train=self.request.train, runner=self.runners, servers=servers,
            reporter=self.reporter, profiles=self.request.profiles,
            expected=self.expected_bolt_profile(tool))

    def keep_bolt_profile(self) -> str | None:
        """BOLT's profile trained here, kept in the request's folder of profiles if it is not there yet
        (its merge keeps it; this also keeps one merged before the build was given the folder)."""
        if not self.variant.bolt or self.request.profiles is None:
            return None
        merged = PhaseState(self.layout.state_file).phases.get("bolt-merge")
        return keep_bolt_profile(self.bolt_context(), merged) if merged else None

    def expected_bolt_profile(self, tool) -> profile_file.ProfileIdentity:
        """What a BOLT profile file must be made from for this build's BOLT stage to read it, but for the
        digest of its input (the stage's): the same build's BOLT training, with the same BOLT."""
        request, name = self.request, self.request.name
        return replace(profile_file.expected_identity(
            request.source.server, content_digest(request.source.path, self.source_digest), name,
            tool.identity_versions(), request.train.label, request.train.digest(), name),
            source_version=request.source.version, source_root=str(request.source.path))

    def smoke_context(self) -> SmokeContext:
        allocator = ALLOCATORS[self.variant.allocator].library if self.variant.allocator else None
        return SmokeContext(self.servers, self.runners, self.reporter,
                            self.target.server_binary(self.layout.install_dir), allocator, self.variant.on_huge_pages)

    # -- phases -------------------------------------------------------------
    def plan(self) -> list[Phase]:
        if self.variant.reads_profile:
            phases = pgo_phases(self.pgo_context())
        else:
            phases = compile_phases(self.compile_context(), "instrumented" if self.variant.writes_profile else "")
        if self.variant.bolt:
            phases += bolt_phases(self.bolt_context())
        if self.request.smoke:
            phases.append(smoke_phase(self.smoke_context()))
        return phases

    def run(self, until: str | None = None) -> BuildResult:
        """All phases, or those up to and including `until`."""
        with self.layout.locked(self.variant.name):
            self.stop_leftover_processes()
            self.state = PhaseState(self.layout.state_file)
            versions = self.toolchain.versions()
            start = digest(__version__, self.source_digest, self.variant.name, versions,
                           self.request.configure_args, self.request.source.server)
            if self.request.engines:           # (none keeps the digests of builds made before --engine)
                start = digest(start, "engines", *self.request.engines)
            if self.request.replicate > 1:     # (replicate 1 keeps the digests of builds made before replicates)
                start = digest(start, f"replicate {self.request.replicate}")
                self.toolchain.family.prepare_layout_seed(self.request.replicate, self.layout.layout_seed_dir)
            # What this build's profile comes from, built or found up to date: a change there
            # re-runs everything after it.
            upstream = self.chain.run_upstream()
            if upstream is not None:
                self.ran_any |= not upstream.up_to_date
                start = digest(start, upstream.digest)
            plan = self.plan()
            self.state.keep_only([phase.name for phase in plan])
            chain = PhaseEngine(self.state, self.reporter).run(plan, start, until)
            if self.request.replicate > 1 and until is None:
                self.toolchain.family.check_layout_seed(self.layout.layout_seed_dir)
            self.ran_any |= bool(chain.ran)
            # A build run only part of the way is no finished build: build.json would say it is.
            record = self.write_record(versions) if until is None else None
        return BuildResult(self.dir, self.target.server_binary(self.install_dir("final")),
                           self.install_dir("final"), record, up_to_date=not self.ran_any, digest=chain.digest)

    def stop_leftover_processes(self, grace: float = 60) -> None:
        """Stops what an earlier, killed run left working in this build's folder (layout.py)."""
        stop_leftover_processes(self.dir, Runner(self.logs / "leftovers.log"), grace)

    def all_phases(self) -> dict:
        """This build's phases and, prefixed, those of its chain of instrumented builds (chain.py)."""
        return self.chain.record_phases(dict(self.state.phases) if self.state is not None else {})

    def trained_here(self, phases: dict) -> bool:
        """Whether its profile comes from this request's training (its own or its twin's), not a file."""
        return bool(self.instrumented or self.variant.bolt) and not phases.get(PROFILE_IMPORT)

    def training_label(self, phases: dict) -> str | None:
        """The training its profile came from: its own (or its twin's), or the imported file's."""
        imported = phases.get(PROFILE_IMPORT)
        if imported:
            return f"{imported['training']} (imported from {Path(imported['file']).name})"
        return self.request.train.label if self.trained_here(phases) else None

    def earlier_smoke(self, digest: str | None) -> dict:
        """The smoke answer of an earlier record of this very binary: a rerun without the smoke test
        (--no-smoke) of an up-to-date build keeps it rather than writing that none was given."""
        path = self.dir / RECORD_FILE
        if not digest or not path.is_file():
            return {}
        try:
            earlier = BuildRecord.load(path)
        except (PgolabError, ValueError, OSError):
            return {}
        return ({"version": earlier.smoke, "huge_code_kib": earlier.huge_code_kib}
                if earlier.binary_digest == digest else {})

    def write_record(self, versions: dict) -> BuildRecord:
        assert self.state is not None
        phases = self.all_phases()
        binary = self.target.server_binary(self.install_dir("final"))
        digest = file_digest(binary) if binary.exists() else None
        smoke = phases.get("smoke") or self.earlier_smoke(digest)
        check = self.layout.profile_check
        record = BuildRecord(
            label=self.request.name,
            variant=self.variant.name,
            description=self.variant.describe(),
            server=self.request.source.server,
            source=SourceInfo(str(self.request.source.path), self.request.source.version, self.source_digest,
                              content_digest(self.request.source.path, self.source_digest)),
            toolchain=versions,
            flags={stage: self.stage_flags(stage)[1].as_dict()
                   for stage in (["gen", "final"] if self.instrumented else ["final"])},
            training=self.training_label(phases),
            training_digest=self.request.train.digest() if self.trained_here(phases) else None,
            instrumented_build=str(self.instrumented.dir) if self.instrumented else None,
            server_binary=str(binary),
            install_dir=str(self.install_dir("final")),
            logs=str(self.logs),
            phases={k: {"seconds": v["seconds"], "cpu_seconds": v.get("cpu_seconds"),
                        "attempts": v.get("attempts", 1), "finished": v["finished"]}
                    for k, v in phases.items()},
            build_seconds=round(sum(v["seconds"] for v in phases.values()), 1),
            build_cpu_seconds=round(sum(v.get("cpu_seconds") or 0 for v in phases.values()), 1),
            profile={k: phases[k] for k in ("merge", PROFILE_IMPORT, "check-profile") if k in phases},
            smoke=smoke.get("version"),
            huge_code_kib=smoke.get("huge_code_kib"),
            code_bytes=elf.code_bytes(binary) if binary.exists() else None,
            binary_digest=digest,
            code_digest=elf.loaded_digest(binary) if binary.exists() else None,
            native_avx512=self.toolchain.native_avx512() if self.variant.native else None,
            bolt={k: phases[k] for k in ("bolt-merge", "bolt-optimize") if k in phases} or None,
            profile_check=json.loads(check.read_text()) if check.exists() else None,
            distribution=self.request.distribution.as_dict() if self.request.distribution else None,
            replicate=self.request.replicate,
            engines=list(self.request.engines),
            layout_seed=self.toolchain.family.layout_seed_method if self.request.replicate > 1 else None,
        )
        record.save()
        return record


def like_distribution(tree: SourceTree) -> DistributionBuild:
    """How the distribution's package of this server was configured (the server's recipe reads it)."""
    return target_for(tree.server).distribution_build(tree, home_runner("distribution"))


def build(request: BuildRequest, reporter: Reporter | None = None) -> BuildResult:
    return Pipeline(request, reporter or QuietReporter()).run()


def with_profile_from(request: BuildRequest, folder: Path, reporter: Reporter | None = None,
                      source_digest: str | None = None) -> BuildRequest:
    """A PGO build compiling with the file in `folder` (keep_profile's) that the same build's same
    training made, as on the machine that trained it: the same binary, without an instrumented build
    and a training. Not once this machine has begun that training: it goes on with its own, whose
    export the file may be. Of several such files, the one this build imported before."""
    if request.profile_file is not None or not request.variant.reads_profile:
        return request
    pipeline = Pipeline(request, source_digest=source_digest)
    if pipeline.profile_trained_here():
        return request
    imported = pipeline.profile_state().get(PROFILE_IMPORT, {}).get("file")
    found = profile_file.find(folder, pipeline.expected_profile(), prefer=Path(imported) if imported else None)
    say = (reporter or QuietReporter()).message
    for problem in found.unreadable:
        say(f"--profiles: passed over {problem}")
    if found.others:
        say(f"--profiles: {found.others + 1} files hold {request.name}'s training; compiling with {found.path.name}")
    if imported and (found.path is None or found.path.resolve() != Path(imported).resolve()):
        say(f"--profiles: {request.name} was compiled from {imported} before, which {folder} does not hold for it "
            f"now: " + (f"compiling with {found.path.name} (another binary)" if found.path else
                        "it trains again (another binary)"))
    return replace(request, profile_file=found.path) if found.path is not None else request


def keep_profile(pipeline: Pipeline, folder: Path) -> str | None:
    """A PGO build's profile, trained here and merged, exported into `folder` once (named by what it is
    for), for with_profile_from on another machine: as soon as the training is done, before the
    optimized compile, so that a session ending in that compile loses no training. Called after its
    profile's owner ran up to PROFILE_READY with this request (the identity is the request's). What it
    did, for the build's progress, or None for a build whose profile this machine has not trained."""
    owner = pipeline.profile_owner
    ready = owner.profile_state()
    # (A build given a file, or reading no profile, has no training phase: profile_trained_here is false.)
    if not owner.profile_trained_here() or PROFILE_READY not in ready:
        return None
    files = pipeline.profile_tool.read_files(pipeline.profile_dir)
    # What the compile would refuse is not published: a profile missing, or with counters written
    # after its merge (its seal; the optimized build's compile forgets that training and repeats it).
    if not files or not all(f.is_file() for f in files) \
            or not holds_sealed(pipeline.profile_dir, pipeline.profile_tool, ready[PROFILE_READY].get("sealed")):
        return None
    gen = f" of {owner.instrumented.variant.name}" if owner.instrumented is not None else ""
    expected = pipeline.expected_profile()
    made_by = f"{expected.trained_build}'s training{gen}"
    return profile_file.keep(folder, expected, files, lambda out: _write_profile(pipeline, files, out, made_by))


def _write_profile(pipeline: Pipeline, files: list[Path], out: Path, made_by: str) -> profile_file.ProfileIdentity:
    """A merged profile this request's training made, written with the identity a build expects of it."""
    expected, request = pipeline.expected_profile(), pipeline.request
    return profile_file.write(
        out, files, server=expected.server, source_digest=expected.source_digest,
        instrumented_variant=expected.instrumented_variant, compiler=expected.compiler,
        source_version=request.source.version, training=expected.training, made_by=made_by,
        source_root=str(request.source.path), training_digest=expected.training_digest,
        trained_build=expected.trained_build)


def train_profile(request: BuildRequest, out: Path, reporter: Reporter | None = None) -> profile_file.ProfileIdentity:
    """`pgolab profile make`: a PGO build's instrumented build and training, up to its merged profile,
    written to `out` as `pgolab profile export` writes one; the optimized compile is left to whoever
    reads the file (`pgolab build --profile FILE`, on this machine or another)."""
    variant = request.variant
    profile_file.require_own_profile(variant, request.name, lambda name: f"pgolab profile make SOURCE --variant {name}")
    pipeline = Pipeline(request, reporter or QuietReporter())
    pipeline.run(until=PROFILE_READY)
    instrumented = pipeline.instrumented
    assert instrumented is not None, "a PGO build that trains has an instrumented build"
    binary = instrumented.target.server_binary(instrumented.install_dir("final"))
    return _write_profile(pipeline, pipeline.profile_tool.read_files(pipeline.profile_dir), out,
                          f"{variant.name}'s training of {instrumented.variant.name} (binary {file_digest(binary)[:12]})")
