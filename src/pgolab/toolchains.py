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

from .errors import PgolabError
from .profiles.clang import ClangProfile
from .profiles.gcc import GccProfile
from .runner import home_runner

LLVM_VERSION = "16"


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


L = LLVM_VERSION
TOOLS: tuple[Tool, ...] = (
    Tool("gcc", "gcc", "gcc", "gcc variants"),
    Tool("g++", "g++", "g++", "gcc variants"),
    Tool("gcc-ar", "gcc-ar", "gcc", "gcc LTO (static libraries)"),
    Tool("gcc-ranlib", "gcc-ranlib", "gcc", "gcc LTO (static libraries)"),
    Tool("gcov-tool", "gcov-tool", "gcc", "gcc profile overlap"),
    Tool("clang", f"clang-{L}", f"clang-{L}", "clang variants"),
    Tool("clang++", f"clang++-{L}", f"clang-{L}", "clang variants"),
    Tool("lld", f"ld.lld-{L}", f"lld-{L}", "clang linking and LTO"),
    Tool("llvm-ar", f"llvm-ar-{L}", f"llvm-{L}", "clang LTO (static libraries)"),
    # llvm-profdata 16 answers a bare --version with "Unknown command!"; its subcommands know it.
    Tool("llvm-profdata", f"llvm-profdata-{L}", f"llvm-{L}", "clang PGO profile merge", ("merge", "--version")),
    Tool("clang profile runtime", f"/usr/lib/llvm-{L}/lib/clang/{L}/lib/linux/libclang_rt.profile-x86_64.a",
         f"libclang-rt-{L}-dev", "clang PGO instrumented builds"),
    Tool("llvm-bolt", f"llvm-bolt-{L}", f"bolt-{L}", "BOLT post-link layout"),
    Tool("merge-fdata", f"merge-fdata-{L}", f"bolt-{L}", "BOLT profile merge"),
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

    def toolchain(self) -> Toolchain: ...
    def placeholder(self) -> Toolchain: ...
    def native_features_argv(self, toolchain: Toolchain) -> list[str]: ...
    def avx512_of(self, output: str) -> set[str]: ...
    def tool_overrides(self, toolchain: Toolchain, lto: bool) -> dict[str, str]: ...
    def profile_tool(self, toolchain: Toolchain): ...


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

    def avx512_of(self, output: str) -> set[str]:
        """`  -mavx512f   [enabled]` lines of gcc's --help=target."""
        return set(re.findall(r"^\s+-m(avx512\w*)\s+\[enabled\]", output, re.M))


class Clang:
    name = "clang"
    version_tools = ("clang", "clang++", "lld", "llvm-profdata")
    lto_flags = ("-flto=thin",)
    link_flags = ("-fuse-ld=lld",)
    bolt_flags = ()
    partial_training_flags = ()   # no such switch: variants.parse refuses `_partial` with clang
    # Instruments again after the first profile's inlining, so the counts are per calling context;
    # with LTO the driver also hands it (and -fprofile-use) to the link's code generation.
    cs_generate_flag = "-fcs-profile-generate"

    def toolchain(self) -> Toolchain:
        require("lld")
        require("clang profile runtime")
        return Toolchain("clang", require("clang"), require("clang++"), require("llvm-ar"),
                         shutil.which(f"llvm-ranlib-{L}") or f"llvm-ranlib-{L}",
                         shutil.which(f"llvm-nm-{L}") or f"llvm-nm-{L}", require("llvm-profdata"))

    def placeholder(self) -> Toolchain:
        return Toolchain("clang", f"clang-{L}", f"clang++-{L}", f"llvm-ar-{L}", f"llvm-ranlib-{L}",
                         f"llvm-nm-{L}", f"llvm-profdata-{L}")

    def tool_overrides(self, toolchain: Toolchain, lto: bool) -> dict[str, str]:
        # One LLVM for compiler, linker, archiver and profile tools.
        return dict(AR=toolchain.ar, RANLIB=toolchain.ranlib, NM=toolchain.nm)

    def profile_tool(self, toolchain: Toolchain):
        return ClangProfile(toolchain.profdata)

    def native_features_argv(self, toolchain: Toolchain) -> list[str]:
        return [toolchain.cc, "-march=native", "-###", "-x", "c", "-c", "/dev/null", "-o", "/dev/null"]

    def avx512_of(self, output: str) -> set[str]:
        """`"-target-feature" "+avx512f"` in the driver's -### line."""
        return set(re.findall(r'"\+(avx512\w*)"', output))


COMPILER_FAMILIES: dict[str, CompilerFamily] = {"gcc": Gcc(), "clang": Clang()}


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
