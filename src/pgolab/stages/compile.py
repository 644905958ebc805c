"""Configure, compile and install one build (a pipeline's "final" stage)."""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING

from ..phases import Phase

if TYPE_CHECKING:
    from ..build import Pipeline

NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")


def compile_phases(p: "Pipeline", label: str = "", profile_input: bool = False) -> list[Phase]:
    variant, flags = p.stage_flags("final")
    # A configure depends on its flags and, for the optimized build, the profile it reads.
    if profile_input:
        configure_input = lambda: {"flags": flags.as_dict(),  # noqa: E731
                                   "profile": p.profile_owner.sealed_profile_digest(
                                       p.profile_dir, p.profile_tool, "train")}
    else:
        configure_input = flags.as_dict()
    what = f"{label} " if label else ""
    return [
        Phase("configure", f"configure {what}build ({variant.name})", configure_input, lambda: configure(p)),
        Phase("build", f"compile {what}build", flags.as_dict(), lambda: compile_(p)),
        Phase("install", f"install {what}build", None, lambda: install(p)),
    ]


def configure(p: "Pipeline") -> dict:
    build_dir = p.build_dir("final")
    # Always from an empty directory: stale objects would hide a flag or profile change.
    shutil.rmtree(build_dir, ignore_errors=True)
    variant, flags = p.stage_flags("final")
    runner = p.runner("configure")
    use_ccache = p.request.use_ccache and not variant.is_pgo
    for cmd in p.target.configure(p.request.source.path, build_dir, p.toolchain, flags, variant,
                                  p.request.extra_args, use_ccache, p.profile_dir):
        runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
    return {"flags": flags.as_dict()}


def compile_(p: "Pipeline") -> dict:
    _, flags = p.stage_flags("final")

    def on_line(line: str) -> None:
        if m := NINJA_PROGRESS.match(line):
            p.reporter.progress(int(m.group(1)), int(m.group(2)))
    runner = p.runner("build", on_line)
    for cmd in p.target.build(p.build_dir("final"), p.request.jobs, flags):
        runner.run(cmd.argv, cwd=cmd.cwd, env=cmd.env, what=cmd.what)
    return {}


def install(p: "Pipeline") -> dict:
    _, flags = p.stage_flags("final")
    install_dir = p.install_dir("final")
    p.target.install(p.request.source.path, p.build_dir("final"), install_dir, p.runner("install"), flags)
    binary = p.target.server_binary(install_dir)
    if p.variant.bolt:
        from .bolt import BoltSteps
        BoltSteps(p).keep_input()
    return {"server_binary": str(binary), "binary_bytes": binary.stat().st_size}
