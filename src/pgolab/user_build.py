"""PGO inside the user's own build: `pgolab train --binary PATH --profile-dir DIR` trains a server
that the user compiled with clang's `-fprofile-generate` in their own build system, and says which
flags compile the optimized build.

The server runs as in a pgolab build's training: on a fresh data directory (initialised by the same
instrumented binary), its profile written to absolute per-process file names (the server chdir()s;
PostgreSQL forks a process per connection), stopped through its own shutdown so the counters are
written, then merged with the llvm-profdata of the LLVM release that compiled it (read from the
binary's `.comment`). Nothing of the user's build tree is touched. `pgolab verify` checks the
optimized build of a CMake build folder the same way (cmake_module.py runs both from the user's build).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import elf, paths, scratch
from .errors import PgolabError
from .paths import chown_tree
from .profiles import require_raw_profiles
from .runner import home_runner
from .server import ServerProcess, initialize_datadir
from .profiles.clang import clang_object_used_profile
from .targets import installation_for_binary, target_for
from .targets.base import cmake_build_folder
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


@contextmanager
def fresh_server(installation, purpose: str, env: dict | None = None, options=None,
                 config: Path | None = None, owned: tuple[Path, ...] = ()):
    """The server of `installation` on a fresh data directory initialised by the same binary (with
    `env`: an instrumented one counts from the first instruction), for the caller to start and stop
    (`with server:`); its data and run folders are removed on leaving. `owned` folders are handed to
    the server's user."""
    runner = home_runner(purpose)
    work = paths.home() / "work" / f"{purpose}-{os.getpid()}"
    rundir = scratch.make(purpose)
    try:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        if installation.run_as:
            for folder in (work, rundir, *owned):
                chown_tree(folder, installation.run_as)
        datadir = work / "data"
        initialize_datadir(installation, datadir, runner, env=env)
        yield ServerProcess(installation, datadir, rundir, runner, env=env,
                            options=options(datadir) if options else [], config=config), runner
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(rundir, ignore_errors=True)


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
    env = tool.redirect_env(profile_dir, profile_dir)
    with fresh_server(installation, "train-binary", env=env, config=spec.server_config, owned=(profile_dir,),
                      options=lambda datadir: spec.server_options(installation, datadir)) as (server, runner):
        with server:
            covered = run_training(server, spec, runner)
        stats = require_raw_profiles(profile_dir, tool, server.error_log)    # the log is still there
        merged = tool.merge(profile_dir, runner)
    if installation.run_as:     # the server's user wrote them; they are the caller's again
        chown_tree(profile_dir, pwd.getpwuid(os.getuid()).pw_name)
    return TrainedProfile(family.name, Path(merged["merged"]), stats.files, stats.bytes, merged["functions"],
                          covered, tool.use_flags(profile_dir, profile_dir))


@dataclass
class VerifiedBuild:
    version: str                  # what the optimized server answered
    objects: int                  # the server's objects in its build folder
    with_profile: int             # of them, those the profile shaped
    scope: str                    # how the server's objects were found


def verify_binary(binary: Path) -> VerifiedBuild:
    """`pgolab verify`: the optimized server in its CMake build folder (`cmake -DWITH_PGO=ON`'s second
    build): the share of its objects clang's profile shaped, and its answer on a fresh data directory.
    A build none of whose objects shows the profile is refused."""
    binary = binary.absolute()
    installation = installation_for_binary(binary)
    target = target_for(installation.server)
    build = cmake_build_folder(binary, target.build_tree_server)
    if build is None:
        raise PgolabError(f"{binary} is not in a CMake build folder (as {target.build_tree_server})",
                          hint="give the server of the optimized build folder, e.g. BUILD/" + target.build_tree_server)
    objects, scope = server_objects(build, target.server_program, home_runner("verify"))
    shaped = sum(1 for o in objects if clang_object_used_profile(o))
    if objects and not shaped:
        raise PgolabError(f"none of the {len(objects)} objects of {binary.name} shows a profile ({scope})",
                          hint="the optimized build did not read it: look for -fprofile-use in its CMakeCache.txt")
    with fresh_server(installation, "verify") as (server, _), server:
        version = server.query(installation.version_sql(), what="version query")
    return VerifiedBuild(version, len(objects), shaped, scope)


def server_objects(build: Path, program: str, runner) -> tuple[list[Path], str]:
    """The objects linked into `program`: ninja's inputs of that target where ninja built it, else
    every object in the folder."""
    if (build / "build.ninja").is_file():
        listed = runner.run(["ninja", "-C", str(build), "-t", "inputs", program], what="ninja -t inputs").output
        objects = [build / line.strip() for line in listed.splitlines() if line.strip().endswith(".o")]
        return [o for o in objects if o.is_file()], f"ninja's inputs of {program}"
    return sorted(build.rglob("*.o")), "every object in the build folder"
