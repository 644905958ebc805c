"""Finding compilers and their companion tools, their versions, and install hints."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import PgolabError

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
        try:
            out = subprocess.run([path, *self.version_args], capture_output=True, text=True,
                                 timeout=20, errors="replace")
        except (OSError, subprocess.TimeoutExpired):
            return "?"
        text = (out.stdout or out.stderr).strip().splitlines()
        return _short_version(text[0]) if text else "?"


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
    Tool("llvm-profdata", f"llvm-profdata-{L}", f"llvm-{L}", "clang PGO profile merge"),
    Tool("clang profile runtime", f"/usr/lib/llvm-{L}/lib/clang/{L}/lib/linux/libclang_rt.profile-x86_64.a",
         f"libclang-rt-{L}-dev", "clang PGO instrumented builds"),
    Tool("llvm-bolt", f"llvm-bolt-{L}", f"bolt-{L}", "BOLT post-link layout"),
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

    compiler: str  # gcc | clang
    cc: str
    cxx: str
    ar: str
    ranlib: str
    nm: str
    profdata: str | None  # llvm-profdata for clang; None for gcc (libgcov merges itself)

    def versions(self) -> dict[str, str | None]:
        names = ["gcc", "g++"] if self.compiler == "gcc" else ["clang", "clang++", "lld", "llvm-profdata"]
        return {n: tool(n).version() for n in names}


def toolchain(compiler: str) -> Toolchain:
    if compiler == "gcc":
        return Toolchain("gcc", require("gcc"), require("g++"), require("gcc-ar"),
                         require("gcc-ranlib"), shutil.which("gcc-nm") or "gcc-nm", None)
    if compiler == "clang":
        require("lld")
        require("clang profile runtime")
        return Toolchain("clang", require("clang"), require("clang++"), require("llvm-ar"),
                         shutil.which(f"llvm-ranlib-{L}") or f"llvm-ranlib-{L}",
                         shutil.which(f"llvm-nm-{L}") or f"llvm-nm-{L}", require("llvm-profdata"))
    raise PgolabError(f"unknown compiler {compiler!r}", hint="use gcc or clang")


def doctor_rows() -> list[tuple[str, str, str | None, str, str]]:
    """(tool, program, version or None, package, needed for) for every tool."""
    return [(t.name, t.program, t.version(), t.package, t.needed_for) for t in TOOLS]
