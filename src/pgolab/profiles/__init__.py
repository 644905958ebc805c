"""Profiles: one `ProfileTool` per kind of profile, each in a module of its own.

base: the interface and what every kind shares (raw-file statistics, the training-wrote and
build-used checks); gcc and clang: the compilers' PGO profiles; bolt: BOLT's .fdata profile and
llvm-bolt's statistics; sealing: a merged profile refused if counters arrived after its merge;
overlap: how well a training's profile covers a benchmark's (`pgolab profile-check`); relocation:
a clang profile's names by file moved onto another tree.

bolt is imported by name (`pgolab.profiles.bolt`), not from here: it finds llvm-bolt through
toolchains, which makes gcc's and clang's profile tools; importing it here would close a loop.
"""

from .base import (ConsumptionCheck, ProfileMatch, ProfileTool, RawProfileStats, files_digest, object_files, raw_stats,
                   require_raw_profiles, require_used)
from .clang import MERGED_PROFILE, ClangProfile, clang_object_used_profile
from .gcc import GccProfile, gcda_name
from .overlap import OverlapReport, overlap
from .relocation import Relocation
from .sealing import SEAL, holds_sealed, raw_digest, require_sealed, seal, sealed_digest

__all__ = [
    "ConsumptionCheck", "ProfileMatch", "ProfileTool", "RawProfileStats", "files_digest", "object_files", "raw_stats",
    "require_raw_profiles", "require_used",
    "MERGED_PROFILE", "ClangProfile", "clang_object_used_profile",
    "GccProfile", "gcda_name",
    "OverlapReport", "overlap", "Relocation",
    "SEAL", "holds_sealed", "raw_digest", "require_sealed", "seal", "sealed_digest",
]
