"""Running a build plan: phases, each recorded with the digest of its inputs.

A re-run skips every phase whose record matches and repeats the rest, so an
interrupted build continues where it stopped (ninja and make resume their own
work) and an unchanged one does nothing. For a PGO variant the plan is the
whole pipeline: instrumented build, training run, profile merge, optimized
build, a check that the profile was used, and a smoke test of the server.

The instrumented build is a build of its own (the `_pgo_gen` variant, in its
own folder with its own phases), shared by every label of the same PGO
variant: training the same variant with several loads costs one instrumented
build, and each training sends its profile to its own folder at run time.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Protocol

from . import __version__, paths, profiles
from .errors import PgolabError
from .runner import Runner
from .server import ServerProcess, initialize_datadir
from .sources import SourceTree, tree_digest
from .targets import target_for
from .targets.base import chown_tree
from .toolchains import toolchain as find_toolchain
from .variants import FlagSet, Variant, flags_for
from .workloads import TrainingSpec, run_training

NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")
# build.json's format: 1 had no version field; 2 adds it. A newer file is refused, not misread.
RECORD_VERSION = 2


def load_record(path: Path) -> dict:
    record = json.loads(path.read_text())
    version = record.get("record_version", 1)
    if version > RECORD_VERSION:
        raise PgolabError(f"{path} is a version-{version} build record; this pgolab reads up to {RECORD_VERSION}",
                          hint="upgrade pgolab, or rebuild with this one")
    record.setdefault("label", record["variant"])
    return record


class Reporter(Protocol):
    def phase_started(self, name: str, description: str) -> None: ...
    def phase_skipped(self, name: str, description: str) -> None: ...
    def phase_finished(self, name: str, seconds: float) -> None: ...
    def progress(self, done: int, total: int) -> None: ...
    def message(self, text: str) -> None: ...


class QuietReporter:
    def phase_started(self, name, description): pass
    def phase_skipped(self, name, description): pass
    def phase_finished(self, name, seconds): pass
    def progress(self, done, total): pass
    def message(self, text): pass


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
    record: dict
    up_to_date: bool
    digest: str      # of the last phase: what a build that depends on this one chains from


class PrefixedReporter:
    """Shows the phases of a nested build (the shared instrumented build) under a prefix."""

    def __init__(self, prefix: str, inner: "Reporter"):
        self.prefix, self.inner = prefix, inner

    def phase_started(self, name, description):
        self.inner.phase_started(f"{self.prefix}{name}", description)

    def phase_skipped(self, name, description):
        self.inner.phase_skipped(f"{self.prefix}{name}", description)

    def phase_finished(self, name, seconds):
        self.inner.phase_finished(f"{self.prefix}{name}", seconds)

    def progress(self, done, total):
        self.inner.progress(done, total)

    def message(self, text):
        self.inner.message(text)


def variant_dir(source: SourceTree, name: str, source_digest: str) -> Path:
    """builds/<server>-<version>-<source digest>/<label or variant name>"""
    return paths.builds_dir() / f"{source.label}-{source_digest[:10]}" / name


def _digest(*parts: object) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps(p, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()


def _children_cpu_seconds() -> float:
    import resource
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class PhaseState:
    """state.json: the finished phases, in order, with the digest they ran with."""

    def __init__(self, path: Path):
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {"phases": {}}

    def matches(self, name: str, digest: str) -> bool:
        return self.data["phases"].get(name, {}).get("digest") == digest

    def record(self, name: str, digest: str, seconds: float, extra: dict | None = None) -> None:
        self.data["phases"][name] = {"digest": digest, "seconds": round(seconds, 1),
                                     "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **(extra or {})}
        self._save()

    def add_partial(self, name: str, digest: str, seconds: float) -> None:
        partial = self.data.setdefault("partial", {})
        previous = partial.get(name, {})
        total = previous.get("seconds", 0.0) if previous.get("digest") == digest else 0.0
        partial[name] = {"digest": digest, "seconds": round(total + seconds, 1)}
        self._save()

    def partial(self, name: str, digest: str) -> float:
        entry = self.data.get("partial", {}).pop(name, {})
        return entry.get("seconds", 0.0) if entry.get("digest") == digest else 0.0

    def forget_from(self, name: str, order: list[str]) -> None:
        """A phase that runs again invalidates every phase after it."""
        for later in order[order.index(name):]:
            self.data["phases"].pop(later, None)
        self._save()

    def _save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=2))
        tmp.replace(self.path)


class Pipeline:
    def __init__(self, request: BuildRequest, reporter: Reporter | None = None, source_digest: str | None = None):
        self.request = request
        self.reporter = reporter or QuietReporter()
        self.variant = request.variant
        self.target = target_for(request.source.server)
        self.toolchain = find_toolchain(self.variant.compiler)
        self.source_digest = source_digest or tree_digest(request.source.path)
        self.dir = variant_dir(request.source, request.name, self.source_digest)
        self.logs = self.dir / "logs"
        # Where this build's profile lives: what its training wrote (pgo=use), or the
        # directory compiled into the binary (pgo=gen; a training redirects it at run time).
        self.profile_dir = self.dir / "profile"
        self.state: PhaseState | None = None
        self.ran_any = False
        self.instrumented: Pipeline | None = None
        if self.variant.pgo == "use":
            gen_request = replace(request, variant=self.variant.instrumented(), label=None, smoke=False)
            self.instrumented = Pipeline(gen_request, PrefixedReporter("gen-", self.reporter), self.source_digest)

    # -- layout -------------------------------------------------------------
    # Stages: "final" is this build's own; "gen" is the shared instrumented build's.
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
        if self.variant.pgo == "gen":
            # Instrumented programs run while building (configure checks, build-time tools) and by
            # the smoke test would otherwise leave counters in the directory compiled into the build.
            extra_env = profiles.redirect_env(self.variant.compiler, self.profile_dir,
                                              self.dir / "final" / "incidental-profile")
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
        self.state = PhaseState(self.dir / "state.json")
        versions = self.toolchain.versions()
        base = _digest(__version__, self.source_digest, self.variant.name, versions,
                       self.request.extra_args, self.request.source.server)
        order, steps = self.plan(base)
        if until:
            steps = steps[:order.index(until) + 1]
        previous = base
        if self.instrumented is not None:
            # Builds (or finds up to date) the shared instrumented build; a change there
            # re-runs this build's training and everything after it.
            gen = self.instrumented.run()
            self.ran_any |= not gen.up_to_date
            previous = _digest(base, gen.digest)
        for name, description, extra_inputs, action in steps:
            digest = _digest(previous, name, extra_inputs() if callable(extra_inputs) else extra_inputs)
            if self.state.matches(name, digest):
                self.reporter.phase_skipped(name, description)
            else:
                self.state.forget_from(name, order)
                self.reporter.phase_started(name, description)
                started, cpu_started = time.monotonic(), _children_cpu_seconds()
                try:
                    extra = action() or {}
                except BaseException:
                    # Keep the time an interrupted phase took: its resumed run adds to it.
                    self.state.add_partial(name, digest, time.monotonic() - started)
                    raise
                seconds = time.monotonic() - started + self.state.partial(name, digest)
                # CPU time of the commands (compilers, linkers): unlike wall time, it does not grow
                # when something else shares the machine.
                extra["cpu_seconds"] = round(_children_cpu_seconds() - cpu_started, 1)
                self.state.record(name, digest, seconds, extra)
                self.reporter.phase_finished(name, seconds)
                self.ran_any = True
            previous = digest
        record = self.write_record(versions)
        return BuildResult(self.dir, self.target.server_binary(self.install_dir("final")),
                           self.install_dir("final"), record, up_to_date=not self.ran_any, digest=previous)

    def plan(self, base: str):
        steps = []
        if self.variant.pgo == "use":
            steps += [
                ("train", f"training run ({self.request.train.label}, {self.request.train.seconds}s)",
                 self.request.train.digest_input(), self.train),
                ("merge", "profile merge and statistics", None, self.merge),
            ]
            steps += self.compile_steps("optimized", profile_input=True)
            steps.append(("check-profile", "check that the optimized build used the profile", None,
                          self.check_profile))
        else:
            steps += self.compile_steps("instrumented" if self.variant.pgo == "gen" else "")
        if self.request.smoke:
            steps.append(("smoke", "start the server, query it, stop it cleanly", None, self.smoke))
        return [s[0] for s in steps], steps

    def compile_steps(self, label: str, profile_input: bool = False):
        """Configure, compile and install this pipeline's own build (its "final" stage)."""
        variant, flags = self.stage_flags("final")
        # A configure depends on its flags and, for the optimized build, the merged profile.
        if profile_input:
            configure_input = lambda: {"flags": flags.as_dict(),  # noqa: E731
                                       "profile": profiles.profile_digest(self.profile_dir, self.variant.compiler)}
        else:
            configure_input = flags.as_dict()
        what = f"{label} " if label else ""
        return [
            ("configure", f"configure {what}build ({variant.name})", configure_input, self.configure),
            ("build", f"compile {what}build", flags.as_dict(), self.compile),
            ("install", f"install {what}build", None, self.install),
        ]

    def configure(self) -> dict:
        build_dir = self.build_dir("final")
        # Always from an empty directory: stale objects would hide a flag or profile change.
        shutil.rmtree(build_dir, ignore_errors=True)
        variant, flags = self.stage_flags("final")
        runner = self.runner("configure")
        use_ccache = self.request.use_ccache and not variant.is_pgo
        for cmd in self.target.configure(self.request.source.path, build_dir, self.toolchain, flags, variant,
                                         self.request.extra_args, use_ccache, self.profile_dir):
            runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
        return {"flags": flags.as_dict()}

    def compile(self) -> dict:
        _, flags = self.stage_flags("final")

        def on_line(line: str) -> None:
            if m := NINJA_PROGRESS.match(line):
                self.reporter.progress(int(m.group(1)), int(m.group(2)))
        runner = self.runner("build", on_line)
        for cmd in self.target.build(self.build_dir("final"), self.request.jobs, flags):
            runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
        return {}

    def install(self) -> dict:
        _, flags = self.stage_flags("final")
        runner = self.runner("install")
        install_dir = self.install_dir("final")
        self.target.install(self.request.source.path, self.build_dir("final"), install_dir, runner, flags)
        binary = self.target.server_binary(install_dir)
        return {"server_binary": str(binary), "binary_bytes": binary.stat().st_size}

    def installation(self, stage: str):
        return self.target.installation(self.request.source.path, self.build_dir(stage), self.install_dir(stage))

    def serve(self, stage: str, purpose: str, runner: Runner, env: dict | None = None) -> ServerProcess:
        installation = self.installation(stage)
        work = self.dir / purpose
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        # A short private directory for the socket: unix socket paths are limited to 107 bytes.
        rundir = Path(tempfile.mkdtemp(prefix=f"pgolab-{purpose}-"))
        if installation.run_as:
            chown_tree(work, installation.run_as)
            chown_tree(rundir, installation.run_as)
        datadir = work / "data"
        initialize_datadir(installation, datadir, runner, env=env)
        spec = self.request.train
        return ServerProcess(installation, datadir, rundir, runner, env=env or {},
                             options=spec.server_options(installation.server, datadir), config=spec.server_config)

    def train(self) -> dict:
        shutil.rmtree(self.profile_dir, ignore_errors=True)
        self.profile_dir.mkdir(parents=True)
        installation = self.installation("gen")
        if installation.run_as:
            chown_tree(self.profile_dir, installation.run_as)
        runner = self.runner("train")
        # The instrumented build is shared: its profile goes to this build's folder.
        env = profiles.redirect_env(self.variant.compiler, self.instrumented.profile_dir, self.profile_dir)
        server = self.serve("gen", "train", runner, env=env)
        try:
            with server:
                covered = run_training(server, self.request.train, runner)
        finally:
            shutil.rmtree(server.rundir, ignore_errors=True)
        stats = profiles.require_raw_profiles(self.profile_dir, self.variant.compiler, server.error_log)
        for text in covered:
            self.reporter.message(text)
        self.reporter.message(f"training wrote {stats.describe()}")
        return {"raw_files": stats.files, "raw_bytes": stats.bytes, "covered": covered}

    def merge(self) -> dict:
        runner = self.runner("merge")
        result = profiles.merge(self.profile_dir, self.variant.compiler, self.toolchain.profdata, runner)
        stats = profiles.raw_stats(self.profile_dir, self.variant.compiler)
        return {**result, "raw_files": stats.files, "raw_bytes": stats.bytes}

    def check_profile(self) -> dict:
        check = profiles.check_consumed(self.variant.compiler, self.build_dir("final"), self.profile_dir,
                                        self.logs / "build.log")
        self.reporter.message(f"profile used: {check.describe()}")
        return check.as_dict()

    def smoke(self) -> dict:
        runner = self.runner("smoke")
        server = self.serve("final", "smoke", runner)
        try:
            with server:
                version = server.query(server.installation.version_sql(), what="version query")
        finally:
            shutil.rmtree(server.rundir, ignore_errors=True)
        self.reporter.message(f"server answered: {version}")
        return {"version": version}

    def write_record(self, versions: dict) -> dict:
        assert self.state is not None
        phases = dict(self.state.data["phases"])
        if self.instrumented is not None and self.instrumented.state is not None:
            phases = {**{f"gen-{k}": v for k, v in self.instrumented.state.data["phases"].items()}, **phases}
        record = {
            "record_version": RECORD_VERSION,
            "label": self.request.name,
            "variant": self.variant.name,
            "description": self.variant.describe(),
            "server": self.request.source.server,
            "source": {"path": str(self.request.source.path), "version": self.request.source.version,
                       "digest": self.source_digest},
            "toolchain": versions,
            "flags": {stage: self.stage_flags(stage)[1].as_dict()
                      for stage in (["gen", "final"] if self.instrumented else ["final"])},
            "training": self.request.train.label if self.instrumented else None,
            "instrumented_build": str(self.instrumented.dir) if self.instrumented else None,
            "server_binary": str(self.target.server_binary(self.install_dir("final"))),
            "install_dir": str(self.install_dir("final")),
            "logs": str(self.logs),
            "phases": {k: {"seconds": v["seconds"], "cpu_seconds": v.get("cpu_seconds"), "finished": v["finished"]}
                       for k, v in phases.items()},
            "build_seconds": round(sum(v["seconds"] for v in phases.values()), 1),
            "build_cpu_seconds": round(sum(v.get("cpu_seconds") or 0 for v in phases.values()), 1),
            "profile": {k: phases[k] for k in ("merge", "check-profile") if k in phases},
            "smoke": phases.get("smoke", {}).get("version"),
        }
        check = self.dir / "profile-check.json"
        if check.exists():
            record["profile_check"] = json.loads(check.read_text())
        (self.dir / "build.json").write_text(json.dumps(record, indent=2))
        return record


def build(request: BuildRequest, reporter: Reporter | None = None) -> BuildResult:
    return Pipeline(request, reporter or QuietReporter()).run()


def finished_builds() -> list[dict]:
    """Every build record under the builds folder, oldest first."""
    records = []
    for path in sorted(paths.builds_dir().glob("*/*/build.json"), key=lambda p: p.stat().st_mtime):
        records.append(load_record(path))
    return records
