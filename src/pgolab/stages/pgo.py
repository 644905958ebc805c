"""PGO around an optimized compile: train the instrumented build, merge the profile, compile
with it, and prove the compile used it. A context-sensitive build trains its _pgo_csgen build
(itself compiled this way) and merges those counters with that build's first profile."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..phases import Phase
from ..profiles import ProfileTool, raw_stats, require_raw_profiles, require_used, seal
from ..paths import chown_tree
from ..workloads import run_training
from .compile import compile_phases

if TYPE_CHECKING:
    from ..build import Pipeline


# The phases that make a PGO build's profile; a _bolt build reads its twin's and has none of them.
TRAINING_PHASES = ("train", "merge")
PROFILE_READY = TRAINING_PHASES[-1]    # run a pipeline up to this phase and its profile can be read


def pgo_phases(p: "Pipeline") -> list[Phase]:
    spec = p.request.train
    training = [
        Phase("train", f"training run ({spec.label}, {spec.seconds}s)", spec.digest_input(), lambda: train(p)),
        Phase("merge", "profile merge and statistics", None, lambda: merge(p)),
    ] if p.profile_owner is p else []
    return [
        *training,
        *compile_phases(p, "context-sensitive instrumented" if p.variant.writes_profile else "optimized",
                        profile_input=True),
        Phase("check-profile", "check that the optimized build used the profile", None, lambda: check(p)),
    ]


def train(p: "Pipeline") -> dict:
    # The instrumented build is shared: its profile goes to this build's folder.
    env = p.profile_tool.redirect_env(p.instrumented.profile_dir, p.profile_dir)
    return train_into(p, "gen", "train", p.profile_dir, p.profile_tool, env=env)


def train_into(p: "Pipeline", stage: str, purpose: str, profile_dir: Path, tool: ProfileTool,
               env: dict | None = None, server_binary: Path | None = None) -> dict:
    """The training load on a server of `stage` whose profile goes to `profile_dir`, emptied first so
    that nothing of an earlier training survives (PGO's training, and BOLT's with its instrumented copy).
    Servers an earlier, killed run left in this build were stopped when the build started."""
    shutil.rmtree(profile_dir, ignore_errors=True)
    profile_dir.mkdir(parents=True)
    runner = p.runner(purpose)
    server = p.serve(stage, purpose, runner, env=env, server_binary=server_binary)
    if server.installation.run_as:
        chown_tree(profile_dir, server.installation.run_as)
    try:
        with server:
            covered = run_training(server, p.request.train, runner)
    finally:
        error_log = p.discard(server, purpose)
    stats = require_raw_profiles(profile_dir, tool, error_log)
    for text in covered:
        p.reporter.message(text)
    p.reporter.message(f"{purpose} wrote {stats.describe()}")
    return {"raw_files": stats.files, "raw_bytes": stats.bytes, "covered": covered}


def merge(p: "Pipeline") -> dict:
    # The context-sensitive counters complete the first profile, which the _pgo_csgen build was compiled with.
    first = p.instrumented.profile_dir if p.variant.cs else None
    result = p.profile_tool.merge(p.profile_dir, p.runner("merge"), first)
    stats = raw_stats(p.profile_dir, p.profile_tool)
    return {**result, "raw_files": stats.files, "raw_bytes": stats.bytes,
            "sealed": seal(p.profile_dir, p.profile_tool)}


def check(p: "Pipeline") -> dict:
    build_log = p.logs / "build.log"
    result = require_used(p.profile_tool.check_used(p.build_dir("final"), p.profile_dir, build_log), build_log)
    p.reporter.message(f"profile used: {result.describe()}")
    return result.as_dict()
