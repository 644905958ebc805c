"""PGO inside the user's own build: `pgolab train --binary PATH --profile-dir DIR` trains a server
that the user compiled with clang's `-fprofile-generate` in their own build system, and says which
flags compile the optimized build.

The server runs as in a pgolab build's training: on a fresh data directory (initialised by the same
instrumented binary), its profile written to absolute per-process file names (the server chdir()s;
PostgreSQL forks a process per connection), stopped through its own shutdown so the counters are
written, then merged with the llvm-profdata of the LLVM release that compiled it (read from the
binary's `.comment`). Nothing of the user's build tree is touched.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import elf, paths, scratch
from .errors import PgolabError
from .paths import chown_tree
from .profiles import require_raw_profiles
from .runner import home_runner
from .server import ServerProcess, initialize_datadir
from .targets import installation_for_binary
from .toolchains import COMPILER_FAMILIES, CompilerFamily
from .workloads import TrainingSpec, run_training


@dataclass
class TrainedProfile:
    compiler: str             # the compiler family that instrumented the binary (clang, clang19)
    profile: Path             # the merged profile
    raw_files: int
    raw_bytes: int
    functions: int
    covered: list[str]        # what each training load covered
    use_flags: list[str]      # what compiles the optimized build


def compiler_of(binary: Path) -> CompilerFamily:
    """The compiler family whose instrumentation the binary carries; refused if it carries none, or
    one pgolab cannot merge (gcc's .gcda files go next to the objects, in the user's tree)."""
    names = elf.section_names(binary)
    if not names:
        raise PgolabError(f"{binary} is not an ELF executable", hint="give the server binary you built")
    if "__llvm_prf_cnts" not in names:
        if b".gcda" in binary.read_bytes():
            raise PgolabError(f"{binary} is instrumented by gcc, whose counters go to .gcda files beside the "
                              "objects in your build tree",
                              hint="instrument with clang (CC=clang-16 CFLAGS=-fprofile-generate), or run the "
                                   "load against the gcc build yourself and compile with -fprofile-use there")
        raise PgolabError(f"{binary} carries no profile instrumentation",
                          hint="compile it with clang's -fprofile-generate (e.g. CFLAGS=-fprofile-generate)")
    comment = elf.comment(binary)
    match = re.search(r"clang version (\d+)\.", comment)
    if match is None:
        raise PgolabError(f"{binary} has clang's counters but names no clang version in .comment",
                          hint="build it with a Debian clang-16 or clang-19")
    for family in COMPILER_FAMILIES.values():
        if family.name != "gcc" and family.llvm_version == match.group(1):
            return family
    known = ", ".join(f.llvm_version for f in COMPILER_FAMILIES.values() if f.name != "gcc")
    raise PgolabError(f"{binary} was compiled by clang {match.group(1)}, whose profiles pgolab cannot merge",
                      hint=f"use clang of LLVM {known} (its raw profile format must match llvm-profdata's)")


def train_binary(binary: Path, profile_dir: Path, spec: TrainingSpec, report=print) -> TrainedProfile:
    """Train the instrumented server at `binary` with `spec`; its merged profile goes to `profile_dir`."""
    binary = binary.absolute()
    installation = installation_for_binary(binary)
    family = compiler_of(binary)
    tool = family.toolchain().profile
    profile_dir = profile_dir.absolute()
    profile_dir.mkdir(parents=True, exist_ok=True)
    stale = [p for p in profile_dir.iterdir() if p.suffix in (".profraw", ".profdata")]
    for p in stale:       # an earlier training's counters would be merged with this one's
        p.unlink()
    if stale:
        report(f"removed {len(stale)} profile files of an earlier training from {profile_dir}")
    runner = home_runner("train-binary")
    env = tool.redirect_env(profile_dir, profile_dir)
    work = paths.home() / "work" / f"train-binary-{os.getpid()}"
    rundir = scratch.make("train-binary")
    try:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        if installation.run_as:
            for folder in (work, rundir, profile_dir):
                chown_tree(folder, installation.run_as)
        datadir = work / "data"
        initialize_datadir(installation, datadir, runner, env=env)
        server = ServerProcess(installation, datadir, rundir, runner, env=env,
                               options=spec.server_options(installation, datadir), config=spec.server_config)
        with server:
            covered = run_training(server, spec, runner)
        stats = require_raw_profiles(profile_dir, tool, server.error_log)
        merged = tool.merge(profile_dir, runner)
        if installation.run_as:     # the server's user wrote them; they are the caller's again
            chown_tree(profile_dir, pwd.getpwuid(os.getuid()).pw_name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(rundir, ignore_errors=True)
    return TrainedProfile(family.name, Path(merged["merged"]), stats.files, stats.bytes, merged["functions"],
                          covered, tool.use_flags(profile_dir, profile_dir))
