"""Build variants: names <-> axes <-> the flags each axis adds.

Names follow the convention of the published MySQL 8.0.28 compiler study:
``rel`` (CMAKE_BUILD_TYPE=Release, -O3) then, in this order, ``_o2nofp``
(-O2 -fno-omit-frame-pointer), ``_native`` (-march=native -mtune=native),
``_lto``, ``_pgo_gen`` / ``_pgo_use``, ``_clang`` (gcc when absent), and pgolab's own ``_clang19``
in its place (clang and the tools of LLVM 19 instead of LLVM 16),
``_partial`` after ``_pgo_use`` (gcc's -fprofile-partial-training: code the training never ran
is optimized as usual instead of for size), ``_cs`` in the same place (clang's context-sensitive
PGO: a second instrumented build, ``_pgo_csgen``, compiled with the first profile, is trained
again and both profiles are merged), then clang's code layout from the profile: ``_order``
(functions in the order the training first ran them: temporal profiling, LLVM 17+), ``_split``
(-fsplit-machine-functions: cold blocks out of hot functions) and ``_hotcold`` (lld keeps the
profile's .text.hot/.text.unlikely/.text.split sections apart instead of interleaving them); after
the link and run-time axes, ``_hugetext`` (pgolab's own: the server copies its code onto 2 MiB pages
as it starts); and ``_bolt`` last: post-link layout (BOLT) of that build, ``_bolt_hugify`` with BOLT's runtime that asks
the kernel for 2 MiB pages under the hot code as the server starts. None of them is part of the study, and none needs hardware
counters: every profile here is counted by instrumentation during the training.

Flags are always *added* after the build type's own flags (see targets), never
put in place of them: MariaDB loses -DNDEBUG otherwise and fails to compile.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import labels as target_labels, replicates
from .errors import PgolabError
from .toolchains import ALLOCATORS

COMPILERS = ("gcc", "clang")           # the published study's
ALL_COMPILERS = (*COMPILERS, "clang19")
# csgen: compiled with the first profile and instrumented again after the profile's inlining (clang).
PGO_MODES = ("none", "gen", "csgen", "use")
# BOLT rewrites the linked binary; it needs the relocations the linker normally drops.
BOLT_LINK_FLAGS = ["-Wl,--emit-relocs"]


def allocator_link_flags(allocator: str) -> list[str]:
    """Linked whether or not the link is --as-needed (PostgreSQL's is): the library must stay named
    in the binary, so the loader puts its malloc before glibc's."""
    return [f"-Wl,--push-state,--no-as-needed,-l{ALLOCATORS[allocator].library},--pop-state"]


@dataclass(frozen=True)
class Variant:
    compiler: str = "gcc"
    o2nofp: bool = False
    native: bool = False
    lto: bool = False
    pgo: str = "none"
    partial: bool = False     # gcc -fprofile-partial-training on the optimized build
    cs: bool = False          # context-sensitive PGO: trained through a _pgo_csgen build (clang)
    # Link and run-time choices that stay inside the binary (pgolab's, not the study's):
    noplt: bool = False       # -fno-plt: calls into shared libraries through the GOT, no PLT stub
    nosi: bool = False        # -fno-semantic-interposition
    static_rt: bool = False   # -static-libstdc++ -static-libgcc
    allocator: str = ""       # "" (glibc's malloc) or a key of ALLOCATORS
    hugetext: bool = False    # pgolab's start-up copy of the code onto 2 MiB pages (data/pgolab_hugetext.c)
    # Code layout from the profile (clang's; each needs _pgo_use):
    order: bool = False       # functions ordered by the training's temporal profile (its own instrumented build)
    split: bool = False       # -fsplit-machine-functions
    hotcold: bool = False     # lld's -z keep-text-section-prefix
    bolt: bool = False
    hugify: bool = False      # BOLT's -hugify: asks for huge pages under the hot text at start-up

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
        if self.partial:
            parts.append("partial")
        if self.cs:
            parts.append("cs")
        for flag, token in ((self.order, "order"), (self.split, "split"), (self.hotcold, "hotcold")):
            if flag:
                parts.append(token)
        if self.compiler != "gcc":
            parts.append(self.compiler)
        for flag, token in ((self.noplt, "noplt"), (self.nosi, "nosi"), (self.static_rt, "static")):
            if flag:
                parts.append(token)
        if self.allocator:
            parts.append(self.allocator)
        if self.hugetext:
            parts.append("hugetext")
        if self.bolt:
            parts.append("bolt")
        if self.hugify:
            parts.append("hugify")
        return "_".join(parts)

    @property
    def is_pgo(self) -> bool:
        return self.pgo != "none"

    @property
    def reads_profile(self) -> bool:
        """Compiled with a profile that a training of its instrumented build wrote."""
        return self.pgo in ("use", "csgen")

    @property
    def writes_profile(self) -> bool:
        return self.pgo in ("gen", "csgen")

    def instrumented(self) -> "Variant":
        """The profile-generating build that feeds this PGO variant: the _pgo_csgen build for a
        context-sensitive one, whose own is the shared _pgo_gen build."""
        pgo = "csgen" if self.cs else "gen"
        # The axes that only read a profile, and the link-only ones, compile the same instrumented
        # code: they share the instrumented build without them (profile_source). _order does not: its
        # instrumented build also records when each function first ran.
        return replace(self.profile_source(), pgo=pgo, partial=False, cs=False)

    @property
    def on_huge_pages(self) -> bool:
        """Asks for its code on huge pages when it starts: what cost mode cannot see (no TLB in
        callgrind) and the smoke test measures."""
        return self.hugify or self.hugetext

    def profile_source(self) -> "Variant":
        """The build whose training writes the profile this one reads: the same build without the axes
        that only read a profile (BOLT's layout, function splitting, hot/cold sections) and without the
        link-only ones (_hugetext, the static runtime, the allocator: the same instrumented code, which
        the training counts, linked with other objects or libraries that are not instrumented), so that
        twins differ in those axes alone and one training serves them all. Itself when it has none."""
        return replace(self, bolt=False, hugify=False, split=False, hotcold=False, hugetext=False,
                       static_rt=False, allocator="")

    def profile_twin(self) -> "Variant | None":
        """The build whose profile this PGO build compiles with when that is another build's (its
        profile source), else None (it trains, or reads no profile)."""
        source = self.profile_source()
        return source if self.reads_profile and source != self else None

    def describe(self) -> str:
        opt = "-O2 -fno-omit-frame-pointer" if self.o2nofp else "-O3 (Release)"
        bits = [self.compiler, opt]
        if self.native:
            bits.append("-march=native -mtune=native")
        if self.lto:
            bits.append("LTO")
        if self.pgo == "use":
            bits.append("PGO (instrument, train, optimize)")
        if self.partial:
            bits.append("-fprofile-partial-training")
        if self.cs:
            bits.append("context-sensitive PGO (a second instrumented build, trained again)")
        if self.order:
            bits.append("function order from the training's temporal profile" if self.pgo == "use"
                        else "temporal profiling (when each function first ran)")
        if self.split:
            bits.append("-fsplit-machine-functions")
        if self.hotcold:
            bits.append("hot and cold text sections kept apart (lld -z keep-text-section-prefix)")
        if self.pgo == "gen":
            bits.append("PGO instrumented (writes profiles)")
        elif self.pgo == "csgen":
            bits.append("PGO with context-sensitive instrumentation (writes profiles)")
        if self.noplt:
            bits.append("-fno-plt")
        if self.nosi:
            bits.append("-fno-semantic-interposition")
        if self.static_rt:
            bits.append("static libstdc++ and libgcc")
        if self.allocator:
            bits.append(f"{self.allocator} as malloc")
        if self.hugetext:
            bits.append("code copied onto 2 MiB pages at start-up")
        if self.bolt:
            bits.append("BOLT (instrument, train, relayout)")
        if self.hugify:
            bits.append("hot text on 2 MiB pages (BOLT -hugify)")
        return ", ".join(bits)


# clang19 before clang: a name is read by prefixes.
_TOKENS = ("o2nofp", "native", "lto", "pgo_gen", "pgo_csgen", "pgo_use", "partial", "cs", "order", "split", "hotcold",
           "clang19", "clang", "noplt", "nosi", "static", *ALLOCATORS, "hugetext", "bolt", "hugify")


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
        compiler=next((c for c in ALL_COMPILERS if c in seen), "gcc"),
        o2nofp="o2nofp" in seen,
        native="native" in seen,
        lto="lto" in seen,
        pgo=next((m for m in PGO_MODES if f"pgo_{m}" in seen), "none"),
        partial="partial" in seen,
        cs="cs" in seen,
        noplt="noplt" in seen,
        nosi="nosi" in seen,
        static_rt="static" in seen,
        allocator=next((a for a in ALLOCATORS if a in seen), ""),
        hugetext="hugetext" in seen,
        order="order" in seen,
        split="split" in seen,
        hotcold="hotcold" in seen,
        bolt="bolt" in seen,
        hugify="hugify" in seen,
    )
    if sum(a in seen for a in ALLOCATORS) > 1:
        raise _unknown(name, f"one allocator: {' or '.join('_' + a for a in ALLOCATORS)}, or none for glibc's")
    if sum(c in seen for c in ALL_COMPILERS) > 1:
        raise _unknown(name, f"one compiler: {' or '.join('_' + c for c in ALL_COMPILERS[1:])}, or none for gcc")
    if variant.partial and (variant.pgo != "use" or not _has_partial_training(variant.compiler)):
        raise _unknown(name, "_partial is -fprofile-partial-training: it follows _pgo_use of a compiler that has it (gcc)")
    if (variant.cs or variant.pgo == "csgen") and not _has_cs_pgo(variant.compiler):
        raise _unknown(name, "context-sensitive PGO (_cs, _pgo_csgen) is clang's: add _clang")
    if variant.cs and variant.pgo != "use":
        raise _unknown(name, "_cs is context-sensitive PGO: it follows _pgo_use")
    _check_layout(name, variant)
    if variant.bolt and variant.writes_profile:
        raise _unknown(name, "an instrumented build is not laid out by BOLT; "
                             f"did you mean {replace(variant, pgo='use').name}?")
    if variant.name != name:  # wrong order, repeats, or both pgo_gen and pgo_use
        raise _unknown(name, f"did you mean {variant.name}?")
    return variant


def _check_layout(name: str, variant: Variant) -> None:
    """The profile-driven layout axes: each needs a profile, and a toolchain that has it."""
    from .toolchains import compiler_family
    family = compiler_family(variant.compiler)
    if variant.order:
        if not family.temporal_profile_flags:
            raise _unknown(name, "_order needs temporal profiling (LLVM 17 or later): use _clang19")
        if variant.cs or variant.pgo == "csgen":
            raise _unknown(name, "_order and _cs each train an instrumented build of their own: choose one")
        if variant.pgo not in ("gen", "use"):
            raise _unknown(name, "_order follows _pgo_use (its instrumented build is _pgo_gen with _order)")
    for on, token, flags, absent in ((variant.split, "split", family.split_flags, family.split_absent),
                                     (variant.hotcold, "hotcold", family.hotcold_link_flags, family.hotcold_absent)):
        if on and not flags:
            raise _unknown(name, f"_{token} is clang's: {absent}")
        if on and variant.pgo != "use":
            raise _unknown(name, f"_{token} lays code out by the profile: it follows _pgo_use")
    if variant.hugify and not variant.bolt:
        raise _unknown(name, "_hugify is BOLT's -hugify: it follows _bolt")
    if variant.hugify and variant.hugetext:
        raise _unknown(name, "_hugetext and _hugify each put the code on huge pages: choose one")
    if variant.hugetext and variant.writes_profile:
        raise _unknown(name, "an instrumented build is not put on huge pages; "
                             f"did you mean {replace(variant, pgo='use').name}?")


def _has_partial_training(compiler: str) -> bool:
    from .toolchains import compiler_family
    return bool(compiler_family(compiler).partial_training_flags)


def _has_cs_pgo(compiler: str) -> bool:
    from .toolchains import compiler_family
    return compiler_family(compiler).cs_generate_flag is not None


def _unknown(name: str, extra: str = "") -> PgolabError:
    return PgolabError(
        f"unknown variant {name!r}" + (f" ({extra})" if extra else ""),
        hint="names are rel[_o2nofp][_native][_lto][_pgo_gen|_pgo_csgen|_pgo_use[_partial|_cs]][_order][_split]"
             "[_hotcold][_clang|_clang19][_noplt][_nosi][_static][_jemalloc|_tcmalloc|_mimalloc][_hugetext][_bolt[_hugify]]; "
             "`pgolab variants` lists them")


@dataclass(frozen=True)
class Axis:
    """One axis of the grammar as a report names it: the Variant field, its value without and with, and
    the short name a command line gives it (`pgolab best --axes`)."""
    name: str
    field: str
    without: object
    with_: object
    token: str


AXES = (
    Axis("-O3", "o2nofp", True, False, "O3"),                 # against -O2 -fno-omit-frame-pointer
    Axis("-march=native", "native", False, True, "native"),
    Axis("LTO", "lto", False, True, "lto"),
    Axis("clang", "compiler", "gcc", "clang", "clang"),
    Axis("LLVM 19", "compiler", "clang", "clang19", "clang19"),      # against clang 16
    Axis("PGO", "pgo", "none", "use", "pgo"),
    Axis("partial training", "partial", False, True, "partial"),
    Axis("context-sensitive PGO", "cs", False, True, "cs"),
    Axis("function order (temporal profile)", "order", False, True, "order"),
    Axis("machine function splitting", "split", False, True, "split"),
    Axis("hot/cold text sections", "hotcold", False, True, "hotcold"),
    Axis("-fno-plt", "noplt", False, True, "noplt"),
    Axis("-fno-semantic-interposition", "nosi", False, True, "nosi"),
    Axis("static libstdc++ and libgcc", "static_rt", False, True, "static"),
    *(Axis(a, "allocator", "", a, a) for a in ALLOCATORS),
    Axis("code on 2 MiB pages (pgolab's copy at start-up)", "hugetext", False, True, "hugetext"),
    Axis("BOLT", "bolt", False, True, "bolt"),
    Axis("huge pages (BOLT -hugify)", "hugify", False, True, "hugify"),
)


def axes_named(tokens: str) -> tuple[Axis, ...]:
    """`native,clang19,bolt` -> those axes, in AXES order."""
    wanted = [t.strip() for t in tokens.split(",") if t.strip()]
    known = {a.token: a for a in AXES}
    unknown = [t for t in wanted if t not in known]
    if unknown or not wanted:
        raise PgolabError(f"unknown axis {', '.join(unknown)}" if unknown else f"no axis in {tokens!r}",
                          hint=f"axes are {', '.join(known)}")
    return tuple(a for a in AXES if a.token in wanted)


@dataclass(frozen=True)
class AxisPair:
    axis: str
    without: str     # target labels
    with_: str


def axis_pairs(labels: list[str]) -> list[AxisPair]:
    """Every two labels whose variants differ in one axis alone, axis by axis in AXES order. Labels of
    a version series (`<tree>:<variant>`) pair within their tree; a label that names no variant (a
    binary given by path) is on no axis. A build replicate pairs with the same replicate of its twin
    (`V_bolt+r2` with `V+r2`, whose profile it reads), so an axis's summary covers its builds too."""
    found = {}
    for label in labels:
        tree, name = target_labels.split(label)
        name, k = replicates.split(name)
        try:
            found[label] = (tree, parse(name), k)
        except PgolabError:
            continue
    by_name = {(tree, v, k): label for label, (tree, v, k) in found.items()}
    pairs = []
    for axis in AXES:
        for label, (tree, v, k) in found.items():
            if getattr(v, axis.field) != axis.with_:
                continue
            try:
                twin = parse(replace(v, **{axis.field: axis.without}).name)
            except PgolabError:      # e.g. _cs without its _pgo_use: no such build
                continue
            if (tree, twin, k) in by_name:
                pairs.append(AxisPair(axis.name, by_name[(tree, twin, k)], label))
    return pairs


def published() -> list[Variant]:
    """The 20 builds of the published MySQL 8.0.28 study: 16 without PGO, 4 with."""
    out = [Variant(compiler=c, o2nofp=o, native=n, lto=l)
           for n, o, l, c in itertools.product((False, True), (True, False), (False, True), COMPILERS)]
    out += [Variant(compiler=c, lto=l, pgo="use") for l, c in itertools.product((False, True), COMPILERS)]
    return out


def all_variants() -> list[Variant]:
    """Every combination of the compiler axes (published ones first, then LLVM 19's), without BOLT;
    gcc's PGO builds also with -fprofile-partial-training, clang's also context-sensitive."""
    pub = published()
    rest = [Variant(compiler=c, o2nofp=o, native=n, lto=l, pgo=p)
            for compilers in (COMPILERS, ALL_COMPILERS[len(COMPILERS):])
            for p, n, o, l, c in itertools.product(("use", "gen", "none"), (False, True), (True, False),
                                                   (False, True), compilers)]
    rest += [replace(v, partial=True) for v in rest if v.pgo == "use" and _has_partial_training(v.compiler)]
    rest += [replace(v, cs=True) for v in rest if v.pgo == "use" and not v.partial and _has_cs_pgo(v.compiler)]
    return pub + [v for v in rest if v not in pub]


@dataclass
class FlagSet:
    """What one build adds to the build type's flags."""

    compile: list[str] = field(default_factory=list)   # C and C++ compile (and link) flags
    link: list[str] = field(default_factory=list)      # linker-only flags
    tools: dict[str, str] = field(default_factory=dict)  # AR, RANLIB, NM overrides
    # pgolab's own objects the link names (`link` has their paths): path -> the C source in
    # pgolab's data/, compiled with the build's compiler before its configure.
    objects: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        flags = {"compile": self.compile, "link": self.link, "tools": self.tools}
        # (Only when there are some: every earlier build's configure keeps its digest.)
        return {**flags, "objects": self.objects} if self.objects else flags

    def add_object(self, path: str, source: str) -> None:
        self.objects[path] = source
        self.link.append(f"-Wl,{path}")

    def object_link_flags(self) -> list[str]:
        """The link flags that name pgolab's own objects (add_object's), for a recipe that passes them apart."""
        return [f"-Wl,{path}" for path in self.objects]


# The _hugetext axis: pgolab's C source (package data), and the object compiled from it beside the build folder.
HUGETEXT_SOURCE = "pgolab_hugetext.c"
HUGETEXT_OBJECT = "pgolab-hugetext.o"


# Where a profile's function order is written beside it (stages.pgo), for the link of an _order build.
FUNCTION_ORDER = "function-order.txt"


def function_order_link_flags(profile_dir: Path) -> list[str]:
    # Functions the order names but the link lacks (inlined everywhere, or gone) are expected.
    return [f"-Wl,--symbol-ordering-file={profile_dir / FUNCTION_ORDER}", "-Wl,--no-warn-symbol-ordering"]


def flags_for(variant: Variant, toolchain, *, profile_dir: Path | None = None,
              build_dir: Path | None = None) -> FlagSet:
    """The flags a variant adds, for one toolchain.

    profile_dir: absolute directory where the instrumented build writes (pgo=gen)
    or from which the optimized build reads (pgo=use, csgen) its profile.
    build_dir: the build's absolute build directory (gcc names profile files after object paths).
    """
    family = toolchain.family
    flags = FlagSet()
    if variant.o2nofp:
        flags.compile += ["-O2", "-fno-omit-frame-pointer"]
    if variant.native:
        flags.compile += ["-march=native", "-mtune=native"]
    flags.link += list(family.link_flags)
    flags.tools.update(family.tool_overrides(toolchain, variant.lto))
    if variant.lto:
        flags.compile += list(family.lto_flags)
    if variant.is_pgo:
        for what, directory in (("profile", profile_dir), ("build", build_dir)):
            if directory is None or not directory.is_absolute():
                raise PgolabError(f"internal: PGO build needs an absolute {what} directory, got {directory}")
        tool = toolchain.profile
        make = tool.use_flags if variant.reads_profile else tool.generate_flags
        flags.compile += make(profile_dir, build_dir)
        if variant.pgo == "csgen":
            # Where the second counters go unless a run redirects them (a training always does).
            flags.compile.append(f"{family.cs_generate_flag}={profile_dir.parent / 'cs-profile'}")
        if variant.partial:
            flags.compile += list(family.partial_training_flags)
        if variant.order and variant.writes_profile:
            flags.compile += list(family.temporal_profile_flags)
        elif variant.order:
            # The linker orders input sections: without a section per function (LTO's code generation
            # in lld has one anyway) a whole object's code would move as one.
            flags.compile.append("-ffunction-sections")
            flags.link += function_order_link_flags(profile_dir)
    if variant.split:
        flags.compile += list(family.split_flags)
    if variant.hotcold:
        flags.link += list(family.hotcold_link_flags)
    if variant.noplt:
        flags.compile.append("-fno-plt")
    if variant.nosi:
        flags.compile.append("-fno-semantic-interposition")
    if variant.static_rt:
        flags.link += ["-static-libstdc++", "-static-libgcc"]
    if variant.allocator:
        flags.link += allocator_link_flags(variant.allocator)
    if variant.hugetext:
        if build_dir is None or not build_dir.is_absolute():
            raise PgolabError(f"internal: a _hugetext build needs an absolute build directory, got {build_dir}")
        # An object file named on the link line (through -Wl, so that a compile line ignores it):
        # its constructor runs in the program; PostgreSQL's link flags reach every compile and library
        # too. Beside the build folder, not in it: the profile check counts the objects in there.
        flags.add_object(str(build_dir.parent / HUGETEXT_OBJECT), HUGETEXT_SOURCE)
    if variant.bolt:
        flags.compile += list(family.bolt_flags)
        flags.link += BOLT_LINK_FLAGS
    return flags
