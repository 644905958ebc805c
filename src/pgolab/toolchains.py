"""Finding compilers and their companion tools, their versions, and install hints.

Version probes run through `runner.Runner` like every other command, into
<pgolab home>/logs/toolchains.log; an answer is kept for as long as the program's file is
unchanged, so the probes each build makes (its digest carries the compiler versions) run once
per process and program.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from . import replicates
from .errors import PgolabError
from .profiles.clang import ClangProfile
from .profiles.gcc import GccProfile
from .runner import home_runner

# The LLVM release of `_clang` builds and of BOLT on gcc builds; `_clang19` builds use LLVM 19
# (Debian 12's main suite has both).
LLVM_VERSION = "16"
LLVM_VERSIONS = (LLVM_VERSION, "19")


@dataclass(frozen=True)
class Tool:
    """One program the pipeline may need, and the Debian package that provides it."""

    name: str            # what pgolab calls it
    program: str         # executable looked up on PATH
    package: str         # Debian package
    needed_for: str
    version_args: tuple[str, ...] = ("--version",)

    def path(self) -> str | None:
        if self.program.startswith("/"):   # a library file, not a program
            return self.program if Path(self.program).exists() else None
        return shutil.which(self.program)

    def version(self) -> str | None:
        path = self.path()
        if not path:
            return None
        if self.program.startswith("/"):
            return "present"
        return probe_version(path, self.version_args)


# (program path, version arguments, the file's identity) -> its answer
_VERSIONS: dict[tuple, str] = {}


def probe_version(path: str, args: tuple[str, ...]) -> str:
    """The first version number the program prints, or "?". Asked again only when the program's
    file changed (an upgrade between two builds of one matrix)."""
    try:
        st = os.stat(path)
    except OSError:
        return "?"
    key = (path, args, st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _VERSIONS:
        runner = home_runner("toolchains")
        try:
            result = runner.run([path, *args], check=False, what=f"{Path(path).name} version", timeout=20)
        except (OSError, PgolabError):
            return "?"
        text = result.output.strip().splitlines()
        _VERSIONS[key] = _short_version(text[0]) if text else "?"
    return _VERSIONS[key]


def _short_version(line: str) -> str:
    match = re.search(r"\d+\.\d+(\.\d+)?", line)
    return match.group(0) if match else line[:40]


def llvm_tool(name: str, version: str) -> str:
    """The name pgolab gives one of an LLVM release's tools: the plain name for the default release
    (build records and digests of LLVM 16 builds keep the names they had), `<name> <version>` for
    another."""
    return name if version == LLVM_VERSION else f"{name} {version}"


def llvm_tools(v: str) -> tuple[Tool, ...]:
    """The tools of one LLVM release, from Debian's versioned packages."""
    return (
        Tool(llvm_tool("clang", v), f"clang-{v}", f"clang-{v}", f"clang-{v} variants"),
        Tool(llvm_tool("clang++", v), f"clang++-{v}", f"clang-{v}", f"clang-{v} variants"),
        Tool(llvm_tool("lld", v), f"ld.lld-{v}", f"lld-{v}", f"clang-{v} linking and LTO"),
        Tool(llvm_tool("llvm-ar", v), f"llvm-ar-{v}", f"llvm-{v}", f"clang-{v} LTO (static libraries)"),
        # llvm-profdata 16 answers a bare --version with "Unknown command!"; its subcommands know it.
        Tool(llvm_tool("llvm-profdata", v), f"llvm-profdata-{v}", f"llvm-{v}", f"clang-{v} PGO profile merge",
             ("merge", "--version")),
        Tool(llvm_tool("clang profile runtime", v),
             f"/usr/lib/llvm-{v}/lib/clang/{v}/lib/linux/libclang_rt.profile-x86_64.a",
             f"libclang-rt-{v}-dev", f"clang-{v} PGO instrumented builds"),
        Tool(llvm_tool("llvm-bolt", v), f"llvm-bolt-{v}", f"bolt-{v}", f"BOLT {v} post-link layout"),
        Tool(llvm_tool("merge-fdata", v), f"merge-fdata-{v}", f"bolt-{v}", f"BOLT {v} profile merge"),
    )


@dataclass(frozen=True)
class Allocator:
    """A malloc linked in place of glibc's (the allocator axis: `_jemalloc`, ...)."""
    library: str          # -l<library>
    package: str          # Debian 12's package with its .so

    def tool(self, name: str) -> Tool:
        return Tool(f"{name} library", f"/usr/lib/x86_64-linux-gnu/lib{self.library}.so", self.package,
                    f"the _{name} axis")


ALLOCATORS = {"jemalloc": Allocator("jemalloc", "libjemalloc-dev"),
              # tcmalloc without its heap profiler
              "tcmalloc": Allocator("tcmalloc_minimal", "libgoogle-perftools-dev"),
              "mimalloc": Allocator("mimalloc", "libmimalloc-dev")}


TOOLS: tuple[Tool, ...] = (
    Tool("gcc", "gcc", "gcc", "gcc variants"),
    Tool("g++", "g++", "g++", "gcc variants"),
    Tool("gcc-ar", "gcc-ar", "gcc", "gcc LTO (static libraries)"),
    Tool("gcc-ranlib", "gcc-ranlib", "gcc", "gcc LTO (static libraries)"),
    Tool("gcov-tool", "gcov-tool", "gcc", "gcc profile overlap"),
    Tool("objcopy", "objcopy", "binutils", "pgolab package (debug info stripped)"),
    Tool("dpkg-deb", "dpkg-deb", "dpkg", "pgolab package --format deb"),
    Tool("dpkg-shlibdeps", "dpkg-shlibdeps", "dpkg-dev", "pgolab package: the libraries a .deb depends on"),
    Tool("patchelf", "patchelf", "patchelf", "pgolab package --format tar (libpq found from the tarball)"),
    *(t for v in LLVM_VERSIONS for t in llvm_tools(v)),
    *(a.tool(name) for name, a in ALLOCATORS.items()),
    Tool("cmake", "cmake", "cmake", "MariaDB and MySQL builds"),
    Tool("ninja", "ninja", "ninja-build", "MariaDB and MySQL builds"),
    Tool("make", "make", "make", "PostgreSQL builds"),
    Tool("bison", "bison", "bison", "server parsers"),
    Tool("flex", "flex", "flex", "PostgreSQL scanner"),
    Tool("ccache", "ccache", "ccache", "faster rebuilds (optional)"),
    Tool("apt-get", "apt-get", "apt", "pgolab source"),
    Tool("dpkg-source", "dpkg-source", "dpkg-dev", "pgolab source (unpacking)"),
    Tool("sysbench", "sysbench", "sysbench", "training and benchmarks"),
    Tool("mariadbd (Debian)", "mariadbd", "mariadb-server", "reference server, lifecycle tests"),
    Tool("mariadb client", "mariadb", "mariadb-client", "queries and clean shutdown"),
    Tool("psql", "psql", "postgresql-client-15", "PostgreSQL queries"),
    Tool("valgrind", "valgrind", "valgrind", "deterministic instruction counts"),
)


def tool(name: str) -> Tool:
    for t in TOOLS:
        if t.name == name:
            return t
    raise KeyError(name)


def require(name: str) -> str:
    """The path of a tool, or an error naming the package to install."""
    t = tool(name)
    path = t.path()
    if not path:
        raise PgolabError(f"{t.program} not found (needed for {t.needed_for})",
                          hint=f"apt-get install {t.package}   (or run scripts/setup-system.sh)")
    return path


@dataclass(frozen=True)
class Toolchain:
    """The programs one compiler family uses for every step."""

    compiler: str  # gcc | clang: the key of its CompilerFamily
    cc: str
    cxx: str
    ar: str
    ranlib: str
    nm: str
    profdata: str | None  # llvm-profdata for clang; None for gcc (libgcov merges itself)

    @property
    def family(self) -> "CompilerFamily":
        return compiler_family(self.compiler)

    @property
    def profile(self):
        """The PGO profile tool of this compiler (profiles.ProfileTool)."""
        return self.family.profile_tool(self)

    def versions(self) -> dict[str, str | None]:
        return {n: tool(n).version() for n in self.family.version_tools}

    def native_avx512(self) -> list[str]:
        """The AVX-512 extensions `-march=native` turns on here (none on a CPU without them): code the
        compiler may then emit unguarded, which valgrind's callgrind cannot run."""
        runner = home_runner("toolchains")
        argv = self.family.native_features_argv(self)
        return sorted(self.family.avx512_of(runner.run(argv, check=False, what="what -march=native enables").output))


class CompilerFamily(Protocol):
    """What differs between compilers: programs, LTO, linking, BOLT needs and profile tool."""

    name: str
    version_tools: tuple[str, ...]
    lto_flags: tuple[str, ...]
    link_flags: tuple[str, ...]
    bolt_flags: tuple[str, ...]    # compile flags a binary BOLT rewrites needs
    partial_training_flags: tuple[str, ...]   # the `_partial` axis (only gcc has one)
    cs_generate_flag: str | None              # the `_cs` axis's second instrumentation (only clang)
    # The profile-driven layout axes (variants.py); empty where the toolchain has no such switch.
    temporal_profile_flags: tuple[str, ...]   # `_order`: the instrumented build's
    split_flags: tuple[str, ...]              # `_split`
    hotcold_link_flags: tuple[str, ...]       # `_hotcold`
    split_absent: str                         # why a family without `_split` needs none
    hotcold_absent: str                       # why a family without `_hotcold` needs none
    # Debug information valgrind 3.19 reads, should a build (or a part of it) turn -g on: clang's
    # DWARF 5 has forms it cannot read (seen: 0x23, 0x25), and cost mode would die on the binary.
    debug_version_flags: tuple[str, ...]
    llvm_version: str             # the LLVM release of its BOLT (and, for clang, of everything)
    links_with_lld: bool
    extra_build_cost: float       # a build's cost beyond gcc's, in plain gcc builds (matrix scheduling)

    def toolchain(self) -> Toolchain: ...
    def placeholder(self) -> Toolchain: ...
    def native_features_argv(self, toolchain: Toolchain) -> list[str]: ...
    def avx512_of(self, output: str) -> set[str]: ...
    def tool_overrides(self, toolchain: Toolchain, lto: bool) -> dict[str, str]: ...
    def profile_tool(self, toolchain: Toolchain): ...
    # A build replicate's other code layout (replicates.py): what it is, its link flags, and what
    # must exist in `folder` before the link.
    layout_seed_method: str
    def layout_seed_flags(self, seed: int, folder: Path) -> list[str]: ...
    def layout_seed_env(self, folder: Path) -> dict[str, str]: ...
    def prepare_layout_seed(self, seed: int, folder: Path) -> None: ...
    def check_layout_seed(self, folder: Path) -> None: ...


class Gcc:
    name = "gcc"
    version_tools = ("gcc", "g++")
    lto_flags = ("-flto=auto",)
    link_flags = ()
    # gcc splits hot and cold code into .text.hot/.text.unlikely parts itself; BOLT must see whole
    # functions to lay them out (its documentation asks for this flag on gcc builds).
    bolt_flags = ("-fno-reorder-blocks-and-partition",)
    # Functions the training never ran keep their normal optimization instead of being optimized
    # for size (gcc 10+); +5 % on MySQL read-only in a published test.
    partial_training_flags = ("-fprofile-partial-training",)
    cs_generate_flag = None
    temporal_profile_flags = ()
    split_flags = ()
    hotcold_link_flags = ()
    split_absent = "gcc splits a profiled function's cold blocks out itself (-freorder-blocks-and-partition, on at -O2)"
    hotcold_absent = "GNU ld's default script already groups .text.hot and .text.unlikely"
    debug_version_flags = ()
    llvm_version = LLVM_VERSION
    links_with_lld = False
    extra_build_cost = 0.0

    def toolchain(self) -> Toolchain:
        return Toolchain("gcc", require("gcc"), require("g++"), require("gcc-ar"),
                         require("gcc-ranlib"), shutil.which("gcc-nm") or "gcc-nm", None)

    def placeholder(self) -> Toolchain:
        return Toolchain("gcc", "gcc", "g++", "gcc-ar", "gcc-ranlib", "gcc-nm", None)

    def tool_overrides(self, toolchain: Toolchain, lto: bool) -> dict[str, str]:
        # Static libraries of LTO objects need the plugin-aware archiver.
        return dict(AR=toolchain.ar, RANLIB=toolchain.ranlib, NM=toolchain.nm) if lto else {}

    def profile_tool(self, toolchain: Toolchain):
        return GccProfile()


    def native_features_argv(self, toolchain: Toolchain) -> list[str]:
        return [toolchain.cc, "-march=native", "-Q", "--help=target"]

    # GNU ld has no shuffle of its own: gcc's collect2 finds a wrapper that permutes the link's
    # object files first on COMPILER_PATH (an environment, so nothing of it is recorded in the binary).
    layout_seed_method = ("link-order shuffle of each link's object files (seeded wrappers of ld, ld.bfd, ld.gold "
                          "and ld.lld, found by gcc through COMPILER_PATH)")

    def layout_seed_flags(self, seed: int, folder: Path) -> list[str]:
        return []

    def layout_seed_env(self, folder: Path) -> dict[str, str]:
        return {"COMPILER_PATH": str(folder)}

    def prepare_layout_seed(self, seed: int, folder: Path) -> None:
        replicates.write_link_order_wrappers(folder, seed)

    def check_layout_seed(self, folder: Path) -> None:
        if not replicates.links_made(folder):
            raise PgolabError(f"this build linked without the layout seed's linker wrappers in {folder}",
                              hint="the build chose a linker gcc does not look up on COMPILER_PATH; rebuild without "
                                   "--replicates, or configure it to link with gcc's default ld")

    def avx512_of(self, output: str) -> set[str]:
        """`  -mavx512f   [enabled]` lines of gcc's --help=target."""
        return set(re.findall(r"^\s+-m(avx512\w*)\s+\[enabled\]", output, re.M))


class Clang:
    """clang of one LLVM release, with that release's linker, archiver and profile tools."""

    lto_flags = ("-flto=thin",)
    link_flags = ("-fuse-ld=lld",)
    bolt_flags = ()
    partial_training_flags = ()   # no such switch: variants.parse refuses `_partial` with clang
    # Instruments again after the first profile's inlining, so the counts are per calling context;
    # with LTO the driver also hands it (and -fprofile-use) to the link's code generation.
    cs_generate_flag = "-fcs-profile-generate"
    # Cold blocks of profiled functions into .text.split.* (with LTO the driver passes it to the link).
    split_flags = ("-fsplit-machine-functions",)
    # lld merges every .text.* into .text in input order unless told to keep these prefixes apart.
    hotcold_link_flags = ("-Wl,-z,keep-text-section-prefix",)
    split_absent = hotcold_absent = ""     # (it has both)
    debug_version_flags = ("-fdebug-default-version=4",)    # no debug information by itself
    links_with_lld = True
    extra_build_cost = 0.1

    def __init__(self, llvm_version: str = LLVM_VERSION):
        self.llvm_version = llvm_version
        # The variant token: `_clang` for the default release, `_clang19` for LLVM 19.
        self.name = "clang" if llvm_version == LLVM_VERSION else f"clang{llvm_version}"
        self.version_tools = tuple(llvm_tool(n, llvm_version) for n in ("clang", "clang++", "lld", "llvm-profdata"))
        # Each function's first run, recorded beside its counters (LLVM 17+), for `llvm-profdata order`.
        self.temporal_profile_flags = ("-mllvm=-pgo-temporal-instrumentation",) if int(llvm_version) >= 17 else ()

    def _tool(self, name: str) -> str:
        return require(llvm_tool(name, self.llvm_version))

    def toolchain(self) -> Toolchain:
        v = self.llvm_version
        cc, cxx = self._tool("clang"), self._tool("clang++")   # the compiler first: the likeliest missing
        self._tool("lld")
        self._tool("clang profile runtime")
        return Toolchain(self.name, cc, cxx, self._tool("llvm-ar"),
                         shutil.which(f"llvm-ranlib-{v}") or f"llvm-ranlib-{v}",
                         shutil.which(f"llvm-nm-{v}") or f"llvm-nm-{v}", self._tool("llvm-profdata"))

    def placeholder(self) -> Toolchain:
        v = self.llvm_version
        return Toolchain(self.name, f"clang-{v}", f"clang++-{v}", f"llvm-ar-{v}", f"llvm-ranlib-{v}",
                         f"llvm-nm-{v}", f"llvm-profdata-{v}")

    def tool_overrides(self, toolchain: Toolchain, lto: bool) -> dict[str, str]:
        # One LLVM for compiler, linker, archiver and profile tools.
        return dict(AR=toolchain.ar, RANLIB=toolchain.ranlib, NM=toolchain.nm)

    def profile_tool(self, toolchain: Toolchain):
        return ClangProfile(toolchain.profdata)


    def native_features_argv(self, toolchain: Toolchain) -> list[str]:
        return [toolchain.cc, "-march=native", "-###", "-x", "c", "-c", "/dev/null", "-o", "/dev/null"]

    # lld permutes the input sections of .text (one per object, or per function where the build
    # compiles with -ffunction-sections) with the seed.
    layout_seed_method = "lld's --shuffle-sections of the .text input sections"

    def layout_seed_flags(self, seed: int, folder: Path) -> list[str]:
        return [f"-Wl,--shuffle-sections=.text*={seed}"]

    def layout_seed_env(self, folder: Path) -> dict[str, str]:
        return {}

    def prepare_layout_seed(self, seed: int, folder: Path) -> None:
        pass

    def check_layout_seed(self, folder: Path) -> None:
        pass     # the flag is on every link line of the build

    def avx512_of(self, output: str) -> set[str]:
        """`"-target-feature" "+avx512f"` in the driver's -### line."""
        return set(re.findall(r'"\+(avx512\w*)"', output))


COMPILER_FAMILIES: dict[str, CompilerFamily] = {f.name: f for f in (Gcc(), *(Clang(v) for v in LLVM_VERSIONS))}


def compiler_family(name: str) -> CompilerFamily:
    try:
        return COMPILER_FAMILIES[name]
    except KeyError:
        raise PgolabError(f"unknown compiler {name!r}", hint=f"use {' or '.join(COMPILER_FAMILIES)}")


def toolchain(compiler: str) -> Toolchain:
    return compiler_family(compiler).toolchain()


def doctor_rows() -> list[tuple[str, str, str | None, str, str]]:
    """(tool, program, version or None, package, needed for) for every tool."""
    return [(t.name, t.program, t.version(), t.package, t.needed_for) for t in TOOLS]
