"""What the pipeline hands a stage besides its paths and flags: runners that log to the build's
phase logs, servers of the build's stages, and the sealed digest of a profile.

Each stage module declares its own small context (a dataclass of exactly what its phases use);
these are the pieces several of them share. None of them knows the pipeline.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Protocol

from .. import scratch
from ..errors import PgolabError
from ..layout import BuildLayout
from ..paths import chown_tree
from ..profiles import ProfileTool
from ..runner import Runner
from ..server import ServerProcess, initialize_datadir
from ..workloads import TrainingSpec


class RunnerFactory(Protocol):
    """runner("configure") appends to the build's logs/configure.log."""

    def __call__(self, log_name: str, on_line: Callable[[str], None] | None = None) -> Runner: ...


# (profile folder, its tool, the phase its training starts at) -> the digest a phase reads it by;
# a profile written to since its merge is refused and its training forgotten (profiles.sealing).
SealedDigest = Callable[[Path, ProfileTool, str], str]


@dataclass(frozen=True)
class Runners:
    """A build's runners: one log per name under `logs`, and the environment every command gets."""

    logs: Path
    extra_env: Mapping[str, str] = field(default_factory=dict)

    def __call__(self, log_name: str, on_line: Callable[[str], None] | None = None) -> Runner:
        return Runner(self.logs / f"{log_name}.log", on_line=on_line, extra_env=dict(self.extra_env))


class Serving(Protocol):
    """How a stage starts a server of one of the build's stages, and what it keeps of it."""

    def installation(self, stage: str): ...

    def serve(self, stage: str, purpose: str, runner: Runner, env: dict | None = None,
              server_binary: Path | None = None) -> ServerProcess: ...

    def discard(self, server: ServerProcess, purpose: str) -> Path: ...


@dataclass
class Servers:
    """Servers of a build's stages, each on a fresh data directory in the build's folder.

    stages: the layout of each stage's build: "final" this build's, "gen" its instrumented
    build's (shared, or its _pgo_csgen build); home: the build whose folder holds the data
    directories and the kept error logs; train: the servers' options and configuration."""

    target: object                      # the server's recipe (targets/)
    source: Path
    stages: Mapping[str, BuildLayout]
    home: BuildLayout
    train: TrainingSpec

    def installation(self, stage: str):
        try:
            layout = self.stages[stage]
        except KeyError:
            raise PgolabError(f"internal: the build in {self.home.dir} has no {stage!r} stage")
        return self.target.installation(self.source, layout.build_dir, layout.install_dir)

    def serve(self, stage: str, purpose: str, runner: Runner, env: dict | None = None,
              server_binary: Path | None = None) -> ServerProcess:
        """A server of `stage` on a fresh data directory. server_binary: start another binary
        (BOLT's instrumented copy) on a data directory the installed one initialised."""
        installation = self.installation(stage)
        work = self.home.work_dir(purpose)
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
        return ServerProcess(installation, datadir, rundir, runner, env=env,
                             options=self.train.server_options(installation, datadir),
                             config=self.train.server_config)

    def discard(self, server: ServerProcess, purpose: str) -> Path:
        """Keep a finished server's error log under logs/ (a crash is explained there), then
        remove its private run directory; returns where the log is kept."""
        kept = self.home.logs / f"{purpose}-server-error.log"
        if server.error_log.exists():
            self.home.logs.mkdir(parents=True, exist_ok=True)
            shutil.copy(server.error_log, kept)
        shutil.rmtree(server.rundir, ignore_errors=True)
        return kept
