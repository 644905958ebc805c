"""A build's chain of instrumented builds: the builds its profile comes from.

A PGO build reads the profile its instrumented build wrote during training. That build is a
build of its own (the `_pgo_gen` variant, in its own folder with its own phases), shared by
every label of the same PGO variant: training the same variant with several loads costs one
instrumented build, and each training sends its profile to its own folder at run time.
A context-sensitive variant (`_cs`) has a chain of two: its instrumented build is the
`_pgo_csgen` build, itself a PGO build over the shared `_pgo_gen` one.

A `_bolt` PGO build compiles with the profile of its twin (the same build without `_bolt`), so
that the two differ in BOLT's layout alone and one training serves both; so do the layout axes that
only read a profile (`_split`, `_hotcold`) and the link-only ones (`_static`, the allocator,
`_hugetext`): the twin is the build without them all (Variant.profile_source). The twin is run up
to its merge; its instrumented build is this build's too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Protocol

from .phases import PrefixedReporter, Reporter
from .stages.pgo import PROFILE_IMPORT, PROFILE_READY, TRAINING_PHASES
from .variants import Variant


class BuildOutcome(Protocol):
    up_to_date: bool
    digest: str          # of its last phase: what the build it feeds chains from


class Build(Protocol):
    """What the chain asks of an upstream build (a build.Pipeline)."""

    variant: Variant
    profile_dir: Path
    instrumented: "Build | None"

    def run(self, until: str | None = None) -> BuildOutcome: ...
    def all_phases(self) -> dict: ...


# How an upstream build of the chain is made: (request, reporter, source digest) -> the build. The
# request is a build.BuildRequest: a dataclass with a variant and a label, copied with replace().
MakeBuild = Callable[[Any, Reporter, str], Build]


def stage_prefix(instrumented: Variant) -> str:
    """How an instrumented build's phases are named in the build it feeds: gen-build, csgen-train."""
    return f"{instrumented.pgo}-"


class BuildChain:
    """The upstream builds of one build: its instrumented build, and the twin whose profile it reads."""

    def __init__(self, request: Any, reporter: Reporter, source_digest: str, make: MakeBuild):
        self.instrumented: Build | None = None
        self.profile_twin: Build | None = None
        self.imports = getattr(request, "profile_file", None) is not None
        variant = request.variant
        if (twin_variant := variant.profile_twin()) is not None:
            label = f"{request.label}-{twin_variant.name}" if request.label else None
            self.profile_twin = make(replace(request, variant=twin_variant, label=label),
                                     PrefixedReporter("twin-", reporter), source_digest)
            self.instrumented = self.profile_twin.instrumented
        elif variant.reads_profile and not self.imports:
            # (Given a profile file, the build compiles with it: no instrumented build, no training.)
            gen_variant = variant.instrumented()
            # The _pgo_gen build holds no training and is shared by every label; a _pgo_csgen build
            # holds its training's profile, so a labelled training gets one of its own.
            label = f"{request.label}-{gen_variant.name}" if request.label and gen_variant.reads_profile else None
            # (A replicate's own training and layout begin after the shared build: it is replicate 1.)
            gen_request = replace(request, variant=gen_variant, label=label, smoke=False,
                                  replicate=request.replicate if gen_variant.reads_profile else 1)
            self.instrumented = make(gen_request, PrefixedReporter(stage_prefix(gen_variant), reporter),
                                     source_digest)

    def profile_dir(self, own: Path) -> Path:
        """Where the profile of a build whose own profile folder is `own` lives."""
        return self.profile_twin.profile_dir if self.profile_twin is not None else own

    def run_upstream(self) -> BuildOutcome | None:
        """Builds (or finds up to date) what this build's profile comes from: the shared instrumented
        build, or the twin's chain up to its merge."""
        if self.profile_twin is not None:
            return self.profile_twin.run(until=PROFILE_IMPORT if self.imports else PROFILE_READY)
        if self.instrumented is not None:
            return self.instrumented.run()
        return None

    def record_phases(self, own: dict) -> dict:
        """A build's own phases and, prefixed, those of its chain of instrumented builds; a build that
        reads its twin's profile adds the twin's phases that made it (training, merge, the chain)."""
        if self.profile_twin is not None:
            prefix = stage_prefix(self.instrumented.variant) if self.instrumented is not None else None
            made_profile = {k: v for k, v in self.profile_twin.all_phases().items()
                            if k in (*TRAINING_PHASES, PROFILE_IMPORT) or (prefix and k.startswith(prefix))}
            return {**made_profile, **own}
        if self.instrumented is not None:
            prefix = stage_prefix(self.instrumented.variant)
            return {**{prefix + k: v for k, v in self.instrumented.all_phases().items()}, **own}
        return dict(own)
