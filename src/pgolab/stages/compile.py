"""Configure, compile and install one build (a pipeline's "final" stage)."""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import paths
from ..phases import Phase, Reporter
from ..targets.base import Cmd
from ..toolchains import Toolchain
from ..variants import FlagSet, Variant
from .context import RunnerFactory

NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")
# make's (a build configured with the Unix Makefiles generator, as Debian's packages are): a percentage.
MAKE_PROGRESS = re.compile(r"^\[\s*(\d+)%\]")


@dataclass
class CompileContext:
    """What a compile uses: the recipe and tree, the variant and its flags, where to build and install."""

    target: object                # the server's recipe (targets/): configure, build, install argv
    source: Path
    variant: Variant
    toolchain: Toolchain
    flags: FlagSet                # the variant's flags as the recipe adapted them
    build_dir: Path
    install_dir: Path
    profile_dir: Path             # the profile it reads (pgo=use), or compiles in (pgo=gen)
    runner: RunnerFactory
    reporter: Reporter
    jobs: int
    extra_args: list[str] = field(default_factory=list)
    use_ccache: bool = True
    like_distribution: bool = False   # configured like the distribution's package (extra_args has its options)


def compile_phases(ctx: CompileContext, label: str = "",
                   profile_digest: Callable[[], str] | None = None) -> list[Phase]:
    """configure, build, install. profile_digest: the profile the compile reads, by its digest
    (an optimized build's configure depends on it)."""
    flags = ctx.flags.as_dict()
    if ctx.flags.objects:      # an edited source of pgolab's own objects, or their flags, compile again
        flags["object_sources"] = {source: hashlib.sha256((paths.package_data() / source).read_bytes()).hexdigest()
                                   for source in ctx.flags.objects.values()}
        flags["object_flags"] = list(OBJECT_FLAGS)
    # A configure depends on its flags and, for the optimized build, the profile it reads.
    if profile_digest is not None:
        configure_input = lambda: {"flags": flags, "profile": profile_digest()}  # noqa: E731
    else:
        configure_input = flags
    what = f"{label} " if label else ""
    return [
        Phase("configure", f"configure {what}build ({ctx.variant.name})", configure_input, lambda: configure(ctx)),
        Phase("build", f"compile {what}build", flags, lambda: compile_(ctx)),
        Phase("install", f"install {what}build", None, lambda: install(ctx)),
    ]


def configure(ctx: CompileContext) -> dict:
    # Always from an empty directory: stale objects would hide a flag or profile change.
    shutil.rmtree(ctx.build_dir, ignore_errors=True)
    # Every object is compiled anew: the build log starts anew too, so that the profile check counts
    # this compile's warnings only (an earlier compile's would count again).
    ctx.runner("build").log_path.unlink(missing_ok=True)
    runner = ctx.runner("configure")
    ctx.build_dir.mkdir(parents=True, exist_ok=True)
    for cmd in object_compiles(ctx.flags, ctx.toolchain):
        runner.run(cmd.argv, cwd=cmd.cwd, what=cmd.what)
    use_ccache = ctx.use_ccache and not ctx.variant.is_pgo
    for cmd in ctx.target.configure(ctx.source, ctx.build_dir, ctx.toolchain, ctx.flags, ctx.variant,
                                    ctx.extra_args, use_ccache, ctx.profile_dir, ctx.like_distribution):
        runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
    return {"flags": ctx.flags.as_dict()}


# pgolab's own objects: position-independent (a build may link them into shared libraries too).
OBJECT_FLAGS = ("-O2", "-fPIC")


def object_compiles(flags: FlagSet, toolchain: Toolchain) -> list[Cmd]:
    """pgolab's own objects the link names (FlagSet.objects), each compiled from its source in the
    package's data/ with the build's C compiler. The source is named from its own folder: the object's
    file symbol is then its bare name, wherever pgolab is installed (a binary the same in every home)."""
    return [Cmd([toolchain.cc, *OBJECT_FLAGS, "-c", source, "-o", path], cwd=paths.package_data(),
                what=f"compile {source}") for path, source in flags.objects.items()]


def compile_(ctx: CompileContext) -> dict:
    def on_line(line: str) -> None:
        if m := NINJA_PROGRESS.match(line):
            ctx.reporter.progress(int(m.group(1)), int(m.group(2)))
        elif m := MAKE_PROGRESS.match(line):
            ctx.reporter.progress(int(m.group(1)), 100)
    runner = ctx.runner("build", on_line)
    for cmd in ctx.target.build(ctx.build_dir, ctx.jobs, ctx.flags):
        runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
    return {}


def install(ctx: CompileContext) -> dict:
    ctx.target.install(ctx.source, ctx.build_dir, ctx.install_dir, ctx.runner("install"), ctx.flags)
    binary = ctx.target.server_binary(ctx.install_dir)
    return {"server_binary": str(binary), "binary_bytes": binary.stat().st_size}
