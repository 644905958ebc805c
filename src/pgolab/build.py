"""Running a build plan: a chain of phases (see phases.py), composed from the stage modules.

A re-run skips every phase whose record matches and repeats the rest, so an
interrupted build continues where it stopped (ninja and make resume their own
work) and an unchanged one does nothing. For a PGO variant the plan is the
whole pipeline: instrumented build, training run, profile merge, optimized
build, a check that the profile was used; a `_bolt` variant adds BOLT's
instrument, train, merge and optimize; every plan ends with a smoke test.

The instrumented build is a build of its own (the `_pgo_gen` variant, in its
own folder with its own phases), shared by every label of the same PGO
variant: training the same variant with several loads costs one instrumented
build, and each training sends its profile to its own folder at run time.
A context-sensitive variant (`_cs`) has a chain of two: its instrumented build
is the `_pgo_csgen` build, itself a PGO pipeline over the shared `_pgo_gen` one.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from . import __version__, elf, paths, processes, profiles, scratch
from .paths import chown_tree
from .errors import PgolabError
from .phases import Phase, PhaseEngine, PhaseState, PrefixedReporter, QuietReporter, Reporter, digest
from .record import BuildRecord
from .runner import Runner
from .server import ServerProcess, initialize_datadir
from .sources import SourceTree, tree_digest
from .stages.bolt import bolt_phases
from .stages.compile import compile_phases
from .stages.pgo import PROFILE_READY, TRAINING_PHASES, pgo_phases
from .stages.smoke import smoke_phase
from .targets import target_for
from .toolchains import toolchain as find_toolchain
from .variants import FlagSet, Variant, flags_for
from .workloads import TrainingSpec

__all__ = ["BuildRequest", "BuildResult", "Pipeline", "build", "variant_dir", "Reporter", "QuietReporter"]


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

    @property
    def name(self) -> str:
        return self.label or self.variant.name


@dataclass
class BuildResult:
    variant_dir: Path
    server_binary: Path
    install_dir: Path
    record: BuildRecord | None     # None for a build run only up to a phase (a twin's training)
    up_to_date: bool
    digest: str      # of the last phase: what a build that depends on this one chains from


def variant_dir(source: SourceTree, name: str, source_digest: str) -> Path:
    """builds/<server>-<version>-<source digest>/<label or variant name>"""
    return paths.builds_dir() / f"{source.label}-{source_digest[:10]}" / name


class Pipeline:
    def __init__(self, request: BuildRequest, reporter: Reporter | None = None, source_digest: str | None = None):
        self.request = request
        self.reporter = reporter or QuietReporter()
        self.variant = request.variant
        self.target = target_for(request.source.server)
        self.toolchain = find_toolchain(self.variant.compiler)
        self.profile_tool = self.toolchain.profile
        self.source_digest = source_digest or tree_digest(request.source.path)
        self.dir = variant_dir(request.source, request.name, self.source_digest)
        self.logs = self.dir / "logs"
        # Where this build's profile lives: what its training wrote (pgo=use, csgen), or the
        # directory compiled into the binary (pgo=gen; a training redirects it at run time).
        self.profile_dir = self.dir / "profile"
        self.state: PhaseState | None = None
        self.ran_any = False
        self.instrumented: Pipeline | None = None
        # A _bolt PGO build compiles with the profile of its twin (the same build without _bolt), so
        # that the two differ in BOLT's layout alone and one training serves both. The twin is run
        # up to its merge; its instrumented build is this build's too.
        self.profile_twin: Pipeline | None = None
        if self.variant.bolt and self.variant.reads_profile:
            twin_variant = self.variant.without_bolt()
            label = f"{request.label}-{twin_variant.name}" if request.label else None
            self.profile_twin = Pipeline(replace(request, variant=twin_variant, label=label),
                                         PrefixedReporter("twin-", self.reporter), self.source_digest)
            self.instrumented = self.profile_twin.instrumented
            self.profile_dir = self.profile_twin.profile_dir
        elif self.variant.reads_profile:
            gen_variant = self.variant.instrumented()
            # The _pgo_gen build holds no training and is shared by every label; a _pgo_csgen build
            # holds its training's profile, so a labelled training gets one of its own.
            label = f"{request.label}-{gen_variant.name}" if request.label and gen_variant.reads_profile else None
            gen_request = replace(request, variant=gen_variant, label=label, smoke=False)
            self.instrumented = Pipeline(gen_request, PrefixedReporter(stage_prefix(gen_variant), self.reporter),
                                         self.source_digest)

    @property
    def profile_owner(self) -> "Pipeline":
        """The build whose training wrote the profile this one reads (itself, or its twin)."""
        return self.profile_twin or self

    # -- layout -------------------------------------------------------------
    # Stages: "final" is this build's own; "gen" is its instrumented build's (shared, or _pgo_csgen).
    def _stage_owner(self, stage: str) -> "Pipeline":
        if stage == "gen":
            if self.instrumented is None:
                raise PgolabError(f"internal: {self.variant.name} has no instrumented stage")
            return self.instrumented
        return self

    def build_dir(self, stage: str) -> Path:
        return self._stage_owner(stage).dir / "final" / "build"

    def install_dir(self, stage: str) -> Path:
        return self._stage_owner(stage).dir / "final" / "install"

    def runner(self, log_name: str, on_line: Callable[[str], None] | None = None) -> Runner:
        extra_env = {}
        if self.variant.writes_profile:
            # Instrumented programs run while building (configure checks, build-time tools) and by
            # the smoke test would otherwise leave counters in the directory compiled into the build.
            extra_env = self.profile_tool.redirect_env(self.profile_dir, self.dir / "final" / "incidental-profile")
        return Runner(self.logs / f"{log_name}.log", on_line=on_line, extra_env=extra_env)

    def stage_flags(self, stage: str) -> tuple[Variant, FlagSet]:
        owner = self._stage_owner(stage)
        flags = flags_for(owner.variant, self.toolchain, profile_dir=owner.profile_dir,
                          build_dir=owner.build_dir("final"))
        return owner.variant, self.target.adapt_flags(owner.variant, flags)

    # -- phases -------------------------------------------------------------
    def run(self, until: str | None = None) -> BuildResult:
        """All phases, or those up to and including `until`."""
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = open(self.dir / ".lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PgolabError(f"another pgolab process is building {self.variant.name} in {self.dir}",
                              hint="wait for it to finish")
        self.stop_leftover_processes()
        self.state = PhaseState(self.dir / "state.json")
        versions = self.toolchain.versions()
        start = digest(__version__, self.source_digest, self.variant.name, versions,
                       self.request.extra_args, self.request.source.server)
        # Builds (or finds up to date) what this build's profile comes from: the shared instrumented
        # build, or the twin's chain up to its merge; a change there re-runs everything after it.
        upstream = (self.profile_twin.run(until=PROFILE_READY) if self.profile_twin is not None
                    else self.instrumented.run() if self.instrumented is not None else None)
        if upstream is not None:
            self.ran_any |= not upstream.up_to_date
            start = digest(start, upstream.digest)
        chain = PhaseEngine(self.state, self.reporter).run(self.plan(), start, until)
        self.ran_any |= bool(chain.ran)
        # A build run only part of the way is no finished build: build.json would say it is.
        record = self.write_record(versions) if until is None else None
        return BuildResult(self.dir, self.target.server_binary(self.install_dir("final")),
                           self.install_dir("final"), record, up_to_date=not self.ran_any, digest=chain.digest)

    def plan(self) -> list[Phase]:
        if self.variant.reads_profile:
            phases = pgo_phases(self)
        else:
            phases = compile_phases(self, "instrumented" if self.variant.writes_profile else "")
        if self.variant.bolt:
            phases += bolt_phases(self)
        if self.request.smoke:
            phases.append(smoke_phase(self))
        return phases

    def sealed_profile_digest(self, profile_dir: Path, tool, retrain_from: str) -> str:
        """The digest a build reads its profile by, after checking nothing wrote to it since its
        merge; if something did, the training is forgotten so that the next run repeats it."""
        try:
            profiles.require_sealed(profile_dir, tool)
        except PgolabError:
            assert self.state is not None
            self.state.forget_from(retrain_from, list(self.state.phases))
            raise
        return tool.digest(profile_dir)

    def stop_leftover_processes(self, grace: float = 60) -> None:
        """A killed pgolab leaves its commands running (make, ninja, compilers; servers get SIGTERM
        from the kernel): they would write into this build beside the re-run. Stop them first:
        SIGTERM (a server's clean shutdown), then SIGKILL for what is still there after `grace`."""
        pids = processes.processes_under(self.dir)
        if not pids:
            return
        runner = self.runner("leftovers")
        runner.note(f"processes left running in {self.dir} by an earlier run: {pids}; SIGTERM")
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
            pids = processes.signal_and_wait(pids, sig, wait)
            if not pids:
                return
            runner.note(f"still running after {sig.name}: {pids}")
        raise PgolabError(f"processes {pids} left by an earlier run still run in {self.dir}",
                          hint=f"stop them (kill -9 {' '.join(map(str, pids))}) and run the same command again")

    def discard(self, server: ServerProcess, purpose: str) -> Path:
        """Keep a finished server's error log under logs/ (a crash is explained there), then
        remove its private run directory; returns where the log is kept."""
        kept = self.logs / f"{purpose}-server-error.log"
        if server.error_log.exists():
            self.logs.mkdir(parents=True, exist_ok=True)
            shutil.copy(server.error_log, kept)
        shutil.rmtree(server.rundir, ignore_errors=True)
        return kept

    def installation(self, stage: str):
        return self.target.installation(self.request.source.path, self.build_dir(stage), self.install_dir(stage))

    def serve(self, stage: str, purpose: str, runner: Runner, env: dict | None = None,
              server_binary: Path | None = None) -> ServerProcess:
        """A server of this build on a fresh data directory. server_binary: start another binary
        (BOLT's instrumented copy) on a data directory the installed one initialised."""
        installation = self.installation(stage)
        work = self.dir / purpose
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        # A short private directory for the socket: unix socket paths are limited to 107 bytes.
        rundir = scratch.make(purpose)
        if installation.run_as:
            chown_tree(work, installation.run_as)
            chown_tree(rundir, installation.run_as)
        datadir = work / "data"
        initialize_datadir(installation, datadir, runner, env=env)
        if server_binary is not None:
            installation = installation.with_server_binary(server_binary)
        spec = self.request.train
        return ServerProcess(installation, datadir, rundir, runner, env=env or {},
                             options=spec.server_options(installation, datadir), config=spec.server_config)

    def all_phases(self) -> dict:
        """This build's phases and, prefixed, those of its chain of instrumented builds; a build that
        reads its twin's profile adds the twin's phases that made it (training, merge, the chain)."""
        phases = dict(self.state.phases) if self.state is not None else {}
        if self.profile_twin is not None:
            prefix = stage_prefix(self.instrumented.variant)
            made_profile = {k: v for k, v in self.profile_twin.all_phases().items()
                            if k in TRAINING_PHASES or k.startswith(prefix)}
            phases = {**made_profile, **phases}
        elif self.instrumented is not None:
            prefix = stage_prefix(self.instrumented.variant)
            phases = {**{prefix + k: v for k, v in self.instrumented.all_phases().items()}, **phases}
        return phases

    def write_record(self, versions: dict) -> BuildRecord:
        assert self.state is not None
        phases = self.all_phases()
        binary = self.target.server_binary(self.install_dir("final"))
        check = self.dir / "profile-check.json"
        record = BuildRecord(
            label=self.request.name,
            variant=self.variant.name,
            description=self.variant.describe(),
            server=self.request.source.server,
            source={"path": str(self.request.source.path), "version": self.request.source.version,
                    "digest": self.source_digest},
            toolchain=versions,
            flags={stage: self.stage_flags(stage)[1].as_dict()
                   for stage in (["gen", "final"] if self.instrumented else ["final"])},
            training=self.request.train.label if (self.instrumented or self.variant.bolt) else None,
            instrumented_build=str(self.instrumented.dir) if self.instrumented else None,
            server_binary=str(binary),
            install_dir=str(self.install_dir("final")),
            logs=str(self.logs),
            phases={k: {"seconds": v["seconds"], "cpu_seconds": v.get("cpu_seconds"),
                        "attempts": v.get("attempts", 1), "finished": v["finished"]}
                    for k, v in phases.items()},
            build_seconds=round(sum(v["seconds"] for v in phases.values()), 1),
            build_cpu_seconds=round(sum(v.get("cpu_seconds") or 0 for v in phases.values()), 1),
            profile={k: phases[k] for k in ("merge", "check-profile") if k in phases},
            smoke=phases.get("smoke", {}).get("version"),
            code_bytes=elf.code_bytes(binary) if binary.exists() else None,
            bolt={k: phases[k] for k in ("bolt-merge", "bolt-optimize") if k in phases} or None,
            profile_check=json.loads(check.read_text()) if check.exists() else None,
        )
        record.save()
        return record


def stage_prefix(instrumented: Variant) -> str:
    """How an instrumented build's phases are named in the build it feeds: gen-build, csgen-train."""
    return f"{instrumented.pgo}-"


def build(request: BuildRequest, reporter: Reporter | None = None) -> BuildResult:
    return Pipeline(request, reporter or QuietReporter()).run()
