"""Build variants: names <-> axes <-> the flags each axis adds.

Names follow the convention of the published MySQL 8.0.28 compiler study:
``rel`` (CMAKE_BUILD_TYPE=Release, -O3) then, in this order, ``_o2nofp``
(-O2 -fno-omit-frame-pointer), ``_native`` (-march=native -mtune=native),
``_lto``, ``_pgo_gen`` / ``_pgo_use``, and ``_clang`` last (gcc when absent).

Flags are always *added* after the build type's own flags (see targets), never
put in place of them: MariaDB loses -DNDEBUG otherwise and fails to compile.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import PgolabError

COMPILERS = ("gcc", "clang")
PGO_MODES = ("none", "gen", "use")
# clang reads this name inside a -fprofile-use directory by default (MySQL relies on it).
MERGED_PROFILE = "default.profdata"


@dataclass(frozen=True)
class Variant:
    compiler: str = "gcc"
    o2nofp: bool = False
    native: bool = False
    lto: bool = False
    pgo: str = "none"

    @property
    def name(self) -> str:
        parts = ["rel"]
        if self.o2nofp:
            parts.append("o2nofp")
        if self.native:
            parts.append("native")
        if self.lto:
            parts.append("lto")
        if self.pgo != "none":
            parts.append(f"pgo_{self.pgo}")
        if self.compiler == "clang":
            parts.append("clang")
        return "_".join(parts)

    @property
    def is_pgo(self) -> bool:
        return self.pgo != "none"

    def instrumented(self) -> "Variant":
        """The profile-generating build that feeds this PGO variant."""
        return replace(self, pgo="gen")

    def describe(self) -> str:
        opt = "-O2 -fno-omit-frame-pointer" if self.o2nofp else "-O3 (Release)"
        bits = [self.compiler, opt]
        if self.native:
            bits.append("-march=native -mtune=native")
        if self.lto:
            bits.append("LTO")
        if self.pgo == "use":
            bits.append("PGO (instrument, train, optimize)")
        elif self.pgo == "gen":
            bits.append("PGO instrumented (writes profiles)")
        return ", ".join(bits)


_TOKENS = ("o2nofp", "native", "lto", "pgo_gen", "pgo_use", "clang")


def parse(name: str) -> Variant:
    """Turn a variant name into its axes; the inverse of Variant.name."""
    if not name.startswith("rel"):
        raise _unknown(name)
    rest = name[3:]
    seen: list[str] = []
    while rest:
        for token in _TOKENS:
            if rest.startswith("_" + token):
                seen.append(token)
                rest = rest[len(token) + 1:]
                break
        else:
            raise _unknown(name)
    variant = Variant(
        compiler="clang" if "clang" in seen else "gcc",
        o2nofp="o2nofp" in seen,
        native="native" in seen,
        lto="lto" in seen,
        pgo="use" if "pgo_use" in seen else "gen" if "pgo_gen" in seen else "none",
    )
    if variant.name != name:  # wrong order, repeats, or both pgo_gen and pgo_use
        raise _unknown(name, f"did you mean {variant.name}?")
    return variant


def _unknown(name: str, extra: str = "") -> PgolabError:
    return PgolabError(
        f"unknown variant {name!r}" + (f" ({extra})" if extra else ""),
        hint="names are rel[_o2nofp][_native][_lto][_pgo_gen|_pgo_use][_clang]; "
             "`pgolab variants` lists them")


def published() -> list[Variant]:
    """The 20 builds of the published MySQL 8.0.28 study: 16 without PGO, 4 with."""
    out = [Variant(compiler=c, o2nofp=o, native=n, lto=l)
           for n, o, l, c in itertools.product((False, True), (True, False), (False, True), COMPILERS)]
    out += [Variant(compiler=c, lto=l, pgo="use") for l, c in itertools.product((False, True), COMPILERS)]
    return out


def all_variants() -> list[Variant]:
    """Every combination of the axes (published ones first)."""
    pub = published()
    rest = [Variant(compiler=c, o2nofp=o, native=n, lto=l, pgo=p)
            for p, n, o, l, c in itertools.product(("use", "gen", "none"), (False, True), (True, False),
                                                   (False, True), COMPILERS)]
    return pub + [v for v in rest if v not in pub]


@dataclass
class FlagSet:
    """What one build adds to the build type's flags."""

    compile: list[str] = field(default_factory=list)   # C and C++ compile (and link) flags
    link: list[str] = field(default_factory=list)      # linker-only flags
    tools: dict[str, str] = field(default_factory=dict)  # AR, RANLIB, NM overrides

    def as_dict(self) -> dict:
        return {"compile": self.compile, "link": self.link, "tools": self.tools}


def flags_for(variant: Variant, toolchain, *, profile_dir: Path | None = None,
              build_dir: Path | None = None) -> FlagSet:
    """The flags a variant adds, for one toolchain.

    profile_dir: absolute directory where the instrumented build writes (pgo=gen)
    or from which the optimized build reads (pgo=use) its profile.
    build_dir: absolute build directory; gcc names .gcda files after object paths,
    so both builds strip their own build directory (-fprofile-prefix-path) and
    the optimized build, built elsewhere, still finds the instrumented one's files.
    """
    flags = FlagSet()
    if variant.o2nofp:
        flags.compile += ["-O2", "-fno-omit-frame-pointer"]
    if variant.native:
        flags.compile += ["-march=native", "-mtune=native"]
    if variant.compiler == "clang":
        # One LLVM for compiler, linker, archiver and profile tools.
        flags.link += ["-fuse-ld=lld"]
        flags.tools.update(AR=toolchain.ar, RANLIB=toolchain.ranlib, NM=toolchain.nm)
    if variant.lto:
        if variant.compiler == "gcc":
            flags.compile += ["-flto=auto"]
            # Static libraries of LTO objects need the plugin-aware archiver.
            flags.tools.update(AR=toolchain.ar, RANLIB=toolchain.ranlib, NM=toolchain.nm)
        else:
            flags.compile += ["-flto=thin"]
    if variant.is_pgo:
        if profile_dir is None or not profile_dir.is_absolute():
            raise PgolabError(f"internal: PGO build needs an absolute profile directory, got {profile_dir}")
        if variant.compiler == "gcc":
            if build_dir is None or not build_dir.is_absolute():
                raise PgolabError("internal: gcc PGO build needs its absolute build directory")
            if variant.pgo == "gen":
                # -ftest-coverage adds .gcno files (function names for `pgolab profile-check`);
                # the counters and the code are those of -fprofile-generate alone.
                flags.compile += [f"-fprofile-generate={profile_dir}", "-fprofile-update=prefer-atomic",
                                  f"-fprofile-prefix-path={build_dir}", "-ftest-coverage"]
            else:
                # A file generated into the build directory (MariaDB's ma_client_plugin.c) can
                # differ between the two builds; gcc makes that an error by default. As a
                # warning, gcc drops that function's profile and pgolab counts the warnings.
                flags.compile += [f"-fprofile-use={profile_dir}", "-fprofile-correction",
                                  f"-fprofile-prefix-path={build_dir}", "-Wno-missing-profile",
                                  "-Wno-error=coverage-mismatch"]
        else:
            if variant.pgo == "gen":
                # The file name is set at run time by LLVM_PROFILE_FILE (absolute, %p/%m).
                flags.compile += [f"-fprofile-generate={profile_dir}"]
            else:
                flags.compile += [f"-fprofile-use={profile_dir / MERGED_PROFILE}"]
    return flags
