"""A build's folder: where its state, logs, profile, build and install trees live; the lock that
keeps two pgolab processes out of it; and stopping what an earlier, killed run left working in it.

    builds/<server>-<version>-<source digest>/<label or variant name>/
        state.json  build.json  profile-check.json  .lock
        logs/<phase>.log
        profile/                  the profile this build's training wrote (or the directory
                                  compiled into an instrumented build, redirected at run time)
        final/build  final/install
        final/incidental-profile  counters instrumented programs write while building and smoke-testing
        final/bolt/               BOLT's input copy, instrumented binary, profile and output
        <purpose>/data            a served stage's data directory (train, smoke, bolt-train, ...)
"""

from __future__ import annotations

import fcntl
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from . import paths, processes
from .errors import PgolabError
from .runner import Runner
from .sources import SourceTree


def variant_dir(source: SourceTree, name: str, source_digest: str) -> Path:
    """builds/<server>-<version>-<source digest>/<label or variant name>"""
    return paths.builds_dir() / f"{source.label}-{source_digest[:10]}" / name


def tree_folder_of(path: Path) -> Path:
    """builds/<server>-<version>-<source digest>, the folder of every build of one tree, that holds
    `path` (a build's build directory, say); a path outside pgolab's builds stands for itself."""
    root = paths.builds_dir()
    return next((p for p in path.parents if p.parent == root), path)


@dataclass(frozen=True)
class BuildLayout:
    """The folders and files of one build."""

    dir: Path

    @property
    def logs(self) -> Path:
        return self.dir / "logs"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def profile_dir(self) -> Path:
        """This build's own profile folder (a build reading its twin's profile reads that one's)."""
        return self.dir / "profile"

    @property
    def build_dir(self) -> Path:
        return self.dir / "final" / "build"

    @property
    def install_dir(self) -> Path:
        return self.dir / "final" / "install"

    @property
    def incidental_profile_dir(self) -> Path:
        return self.dir / "final" / "incidental-profile"

    @property
    def layout_seed_dir(self) -> Path:
        """What a replicate's link needs to move its code (a gcc build's ld wrapper)."""
        return self.dir / "final" / "layout-seed"

    @property
    def bolt_dir(self) -> Path:
        return self.dir / "final" / "bolt"

    @property
    def profile_check(self) -> Path:
        return self.dir / "profile-check.json"

    def work_dir(self, purpose: str) -> Path:
        """Where a server started for `purpose` keeps its data directory."""
        return self.dir / purpose

    @contextmanager
    def locked(self, what: str) -> Iterator[IO]:
        """Held while `what` is built here; a second pgolab process is refused at once."""
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / ".lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise PgolabError(f"another pgolab process is building {what} in {self.dir}",
                                  hint="wait for it to finish")
            yield lock


def stop_leftover_processes(folder: Path, runner: Runner, grace: float = 60) -> None:
    """A killed pgolab leaves its commands running (make, ninja, compilers; servers get SIGTERM
    from the kernel): they would write into this build beside the re-run. Stop them first:
    SIGTERM (a server's clean shutdown), then SIGKILL for what is still there after `grace`."""
    pids = processes.processes_under(folder)
    if not pids:
        return
    runner.note(f"processes left running in {folder} by an earlier run: {pids}; SIGTERM")
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        pids = processes.signal_and_wait(pids, sig, wait)
        if not pids:
            return
        runner.note(f"still running after {sig.name}: {pids}")
    raise PgolabError(f"processes {pids} left by an earlier run still run in {folder}",
                      hint=f"stop them (kill -9 {' '.join(map(str, pids))}) and run the same command again")
