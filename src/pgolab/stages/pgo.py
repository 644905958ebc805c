"""PGO around an optimized compile: train the instrumented build, merge the profile, compile
with it, and prove the compile used it. A context-sensitive build trains its _pgo_csgen build
(itself compiled this way) and merges those counters with that build's first profile."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import profile_file
from ..paths import chown_tree
from ..profile_file import ProfileIdentity
from ..phases import Phase, Reporter
from ..errors import PgolabError
from ..profiles import ProfileMatch, ProfileTool, raw_stats, require_raw_profiles, require_used, seal
from ..sources import file_digest
from ..variants import FUNCTION_ORDER
from ..workloads import TrainingSpec, run_training
from .compile import CompileContext, compile_phases
from .context import RunnerFactory, SealedDigest, Serving

# The phases that make a PGO build's profile; a _bolt build reads its twin's and has none of them.
TRAINING_PHASES = ("train", "merge")
PROFILE_READY = TRAINING_PHASES[-1]    # run a pipeline up to this phase and its profile can be read
# A build given a profile file (`pgolab build --profile FILE`) has this phase instead of them.
PROFILE_IMPORT = "profile-import"


class TrainingContext(Protocol):
    """What a training run uses (PGO's, and BOLT's on its instrumented copy)."""

    train: TrainingSpec
    runner: RunnerFactory
    servers: Serving
    reporter: Reporter


@dataclass
class PgoContext:
    """A PGO build: its training (unless it reads its twin's profile), and the compile that reads it."""

    compile: CompileContext       # the optimized compile (a _pgo_csgen build's: instrumented again)
    tool: ProfileTool
    profile_dir: Path             # the profile it reads: its training's, or its twin's
    instrumented_profile_dir: Path   # compiled into its instrumented build; a training redirects it
    first_profile: Path | None    # a context-sensitive build's: the profile its csgen build read
    trains: bool                  # False for a _bolt build (its twin made the profile) or one given a file
    retrain_from: str             # the phase that made the profile, forgotten if the profile was written to
    sealed_digest: SealedDigest   # of the profile, checked (a refusal forgets the training that made it)
    build_log: Path               # the compile's log, where a profile mismatch is reported
    train: TrainingSpec
    runner: RunnerFactory
    servers: Serving
    reporter: Reporter
    # Instead of a training: a profile file, and what it must have been made from.
    profile_file: Path | None = None
    expected: ProfileIdentity | None = None
    # A profile file of another tree of this server (--stale-profile): the share of its functions that
    # must still apply, checked after the compile.
    stale_min_match: float | None = None


def pgo_phases(ctx: PgoContext) -> list[Phase]:
    spec = ctx.train
    if ctx.profile_file is not None:
        made = [Phase(PROFILE_IMPORT, f"profile from {ctx.profile_file.name} (no instrumented build, no training)",
                      lambda: import_input(ctx), lambda: import_profile(ctx))]
    elif ctx.trains:
        made = [
            Phase("train", f"training run ({spec.label}, {spec.seconds}s)", spec.digest_input(), lambda: train(ctx)),
            Phase("merge", "profile merge and statistics", None, lambda: merge(ctx)),
        ]
    else:
        made = []
    label = "context-sensitive instrumented" if ctx.compile.variant.writes_profile else "optimized"
    return [
        *made,
        *compile_phases(ctx.compile, label,
                        profile_digest=lambda: ctx.sealed_digest(ctx.profile_dir, ctx.tool, ctx.retrain_from)),
        # A stale profile's threshold is this phase's input: a stricter one checks again.
        Phase("check-profile", "check that the optimized build used the profile",
              {"min_match": ctx.stale_min_match} if ctx.stale_min_match is not None else None, lambda: check(ctx)),
    ]


def train(ctx: PgoContext) -> dict:
    # The instrumented build is shared: its profile goes to this build's folder.
    env = ctx.tool.redirect_env(ctx.instrumented_profile_dir, ctx.profile_dir)
    # Which training this is, for a later run to tell its own from another's (build.profile_trained_here).
    return {**train_into(ctx, "gen", "train", ctx.profile_dir, ctx.tool, env=env),
            "training_digest": ctx.train.digest()}


def train_into(ctx: TrainingContext, stage: str, purpose: str, profile_dir: Path, tool: ProfileTool,
               env: dict | None = None, server_binary: Path | None = None) -> dict:
    """The training load on a server of `stage` whose profile goes to `profile_dir`, emptied first so
    that nothing of an earlier training survives (PGO's training, and BOLT's with its instrumented copy).
    Servers an earlier, killed run left in this build were stopped when the build started."""
    shutil.rmtree(profile_dir, ignore_errors=True)
    profile_dir.mkdir(parents=True)
    runner = ctx.runner(purpose)
    server = ctx.servers.serve(stage, purpose, runner, env=env, server_binary=server_binary)
    if server.installation.run_as:
        chown_tree(profile_dir, server.installation.run_as)
    try:
        with server:
            covered = run_training(server, ctx.train, runner)
    finally:
        error_log = ctx.servers.discard(server, purpose)
    stats = require_raw_profiles(profile_dir, tool, error_log)
    for text in covered:
        ctx.reporter.message(text)
    ctx.reporter.message(f"{purpose} wrote {stats.describe()}")
    return {"raw_files": stats.files, "raw_bytes": stats.bytes, "covered": covered}


def merge(ctx: PgoContext) -> dict:
    # The context-sensitive counters complete the first profile, which the _pgo_csgen build was compiled with.
    runner = ctx.runner("merge")
    result = ctx.tool.merge(ctx.profile_dir, runner, ctx.first_profile)
    stats = raw_stats(ctx.profile_dir, ctx.tool)
    return {**result, "raw_files": stats.files, "raw_bytes": stats.bytes, **function_order(ctx, runner),
            "sealed": seal(ctx.profile_dir, ctx.tool)}


def function_order(ctx: PgoContext, runner) -> dict:
    """An _order build's function order, written beside the profile it comes from (the profile's
    owner writes it, so a _bolt build reads its twin's): derived from the profile, which is sealed."""
    if not ctx.compile.variant.order:
        return {}
    order = ctx.tool.write_function_order(ctx.profile_dir, ctx.profile_dir / FUNCTION_ORDER, runner)
    ctx.reporter.message(f"function order: {order.describe()}")
    return {"function_order": order.as_dict()}


# The import's revision where the tool names functions by file: 2 moves the names onto the tree.
NAMES_BY_FILE_REVISION = 2


def import_input(ctx: PgoContext) -> dict:
    """What an import depends on: the file, and where the tool names functions by their file, the tree
    and build folder the names are moved to (a gcc import keeps the digest it had before)."""
    assert ctx.profile_file is not None
    moved = {"names_for": [str(ctx.compile.source), str(ctx.compile.build_dir)], "revision": NAMES_BY_FILE_REVISION}
    return {"file": file_digest(ctx.profile_file), **(moved if ctx.tool.names_by_file else {})}


def import_profile(ctx: PgoContext) -> dict:
    assert ctx.profile_file is not None and ctx.expected is not None
    stale = ctx.stale_min_match is not None
    identity = profile_file.unpack(ctx.profile_file, ctx.expected, ctx.tool, ctx.profile_dir, stale)
    other_tree = identity.source_digest != ctx.expected.source_digest
    ctx.reporter.message(f"profile of {identity.made_by}, trained with {identity.training}: "
                         f"{identity.files} files, {identity.bytes / 1024:.0f} KiB"
                         + (f"; stale: trained on {identity.server} {identity.source_version}, another tree"
                            if other_tree else ""))
    # Before the seal: the compile reads (and its digest covers) the profile as this tree names it.
    moved = ctx.tool.relocate(ctx.profile_dir, ctx.compile.source, identity.source_root, ctx.runner(PROFILE_IMPORT),
                              ctx.compile.build_dir)
    if moved.moves:
        ctx.reporter.message(f"profile names: {moved.describe()}")
    # The file's digest: a file of that name written since (another import) is not what this compiled with.
    return {"file": str(ctx.profile_file.absolute()), "file_digest": file_digest(ctx.profile_file),
            "training": identity.training, "made_by": identity.made_by,
            "training_digest": identity.training_digest, "trained_build": identity.trained_build,
            "files": identity.files, "relocation": moved.as_dict(),
            **function_order(ctx, ctx.runner(PROFILE_IMPORT)), "sealed": seal(ctx.profile_dir, ctx.tool),
            "stale_from": {"version": identity.source_version, "source_digest": identity.source_digest}
            if other_tree else None}


def check(ctx: PgoContext) -> dict:
    result = require_used(ctx.tool.check_used(ctx.compile.build_dir, ctx.profile_dir, ctx.build_log), ctx.build_log)
    ctx.reporter.message(f"profile used: {result.describe()}")
    if ctx.stale_min_match is None:
        return result.as_dict()
    runner = ctx.runner("check-profile")
    names = ctx.tool.relocate(ctx.profile_dir, ctx.compile.source, "", runner, ctx.compile.build_dir, write=False)
    match = ProfileMatch(ctx.tool.profile_functions(ctx.profile_dir, runner), result.mismatched, names.unread)
    ctx.reporter.message(f"stale profile: {match.describe()}")
    if match.share < ctx.stale_min_match:
        raise PgolabError(f"the stale profile: {match.describe()}; below --min-profile-match "
                          f"{ctx.stale_min_match * 100:.0f}%", log=ctx.build_log,
                          hint="train on this tree (leave --profile out), or lower --min-profile-match")
    return {**result.as_dict(), "match": match.as_dict()}
