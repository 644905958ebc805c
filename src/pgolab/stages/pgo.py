"""PGO around an optimized compile: train the shared instrumented build, merge the profile,
compile with it, and prove the compile used it."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from ..phases import Phase
from ..profiles import raw_stats, require_raw_profiles, require_used, seal
from ..targets.base import chown_tree
from ..workloads import run_training
from .compile import compile_phases

if TYPE_CHECKING:
    from ..build import Pipeline


def pgo_phases(p: "Pipeline") -> list[Phase]:
    spec = p.request.train
    return [
        Phase("train", f"training run ({spec.label}, {spec.seconds}s)", spec.digest_input(), lambda: train(p)),
        Phase("merge", "profile merge and statistics", None, lambda: merge(p)),
        *compile_phases(p, "optimized", profile_input=True),
        Phase("check-profile", "check that the optimized build used the profile", None, lambda: check(p)),
    ]


def train(p: "Pipeline") -> dict:
    runner = p.runner("train")
    p.stop_leftovers("train", runner)
    shutil.rmtree(p.profile_dir, ignore_errors=True)
    p.profile_dir.mkdir(parents=True)
    installation = p.installation("gen")
    if installation.run_as:
        chown_tree(p.profile_dir, installation.run_as)
    # The instrumented build is shared: its profile goes to this build's folder.
    env = p.profile_tool.redirect_env(p.instrumented.profile_dir, p.profile_dir)
    server = p.serve("gen", "train", runner, env=env)
    try:
        with server:
            covered = run_training(server, p.request.train, runner)
    finally:
        p.discard(server, "train")
    stats = require_raw_profiles(p.profile_dir, p.profile_tool, server.error_log)
    for text in covered:
        p.reporter.message(text)
    p.reporter.message(f"training wrote {stats.describe()}")
    return {"raw_files": stats.files, "raw_bytes": stats.bytes, "covered": covered}


def merge(p: "Pipeline") -> dict:
    result = p.profile_tool.merge(p.profile_dir, p.runner("merge"))
    stats = raw_stats(p.profile_dir, p.profile_tool)
    return {**result, "raw_files": stats.files, "raw_bytes": stats.bytes,
            "sealed": seal(p.profile_dir, p.profile_tool)}


def check(p: "Pipeline") -> dict:
    build_log = p.logs / "build.log"
    result = require_used(p.profile_tool.check_used(p.build_dir("final"), p.profile_dir, build_log), build_log)
    p.reporter.message(f"profile used: {result.describe()}")
    return result.as_dict()
