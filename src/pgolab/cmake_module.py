"""PGO inside the user's own CMake build (MariaDB's wish, literally): `pgolab cmake-module SOURCE`
writes a CMake module into a MariaDB or MySQL tree and hooks it into the tree's top CMakeLists.txt,
so that `cmake -DWITH_PGO=ON <tree> && cmake --build . && cmake --install .` builds the server
instrumented, trains it with `pgolab train`, builds it optimized with the profile, checks it with
`pgolab verify` and installs it. The module itself is data (data/pgolab_pgo.cmake.in); this module
fills in what pgolab knows of the server and the compilers, and places the hook.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .errors import PgolabError
from .sources import SourceTree
from .targets import target_for
from .toolchains import COMPILER_FAMILIES

MODULE_FILE = "cmake/pgolab_pgo.cmake"
HOOK_BEGIN = "# pgolab: WITH_PGO hook (pgolab cmake-module) begin"
HOOK_END = "# pgolab: WITH_PGO hook end"
HOOK = f"""{HOOK_BEGIN}
INCLUDE(${{CMAKE_SOURCE_DIR}}/{MODULE_FILE})
IF(PGOLAB_PGO_DRIVER)
  RETURN()
ENDIF()
{HOOK_END}
"""


@dataclass(frozen=True)
class WrittenModule:
    module: Path
    cmakelists: Path
    hooked: bool        # False: the hook was there already (the module was rewritten)
    llvm: str           # the LLVM release the usage line names


def clang_families():
    return [f for f in COMPILER_FAMILIES.values() if f.name != "gcc"]


def render(tree: SourceTree, train_args: list[str], pgolab: list[str]) -> str:
    """The module's text for this tree: the server's binary and the targets a training needs, the
    flags of clang's profile tool, the pgolab that trains and verifies."""
    target = target_for(tree.server)
    families = clang_families()
    default = families[0]
    profile_dir = Path("${PGOLAB_PROFILE_DIR}")
    tool = default.placeholder().profile
    values = {
        "SERVER": f"{tree.server} {tree.version}",
        "SERVER_PROGRAM": target.server_program,
        "SERVER_BINARY": target.build_tree_server,
        "TRAINING_TARGETS": " ".join(target.build_targets(Path("."))),
        "GENERATE_FLAGS": " ".join(tool.generate_flags(profile_dir, profile_dir)),
        "USE_FLAGS": " ".join(tool.use_flags(profile_dir, profile_dir)),
        "LLVM": default.llvm_version,
        "LLVM_KNOWN": " or ".join(f.llvm_version for f in families),
        "LLVM_KNOWN_LIST": " ".join(f.llvm_version for f in families),
        "PGOLAB": " ".join(_cmake_quote(a) for a in pgolab),
        "TRAIN_ARGS": " ".join(_cmake_quote(a) for a in train_args),
    }
    text = resources.files("pgolab").joinpath("data/pgolab_pgo.cmake.in").read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    assert not left, f"unfilled in the CMake module: {left}"
    return text


def _cmake_quote(arg: str) -> str:
    return arg if re.fullmatch(r"[A-Za-z0-9_./:=,+-]+", arg) else '"' + arg.replace('"', '\\"') + '"'


def hooked(text: str, where: Path) -> str:
    """The top CMakeLists.txt with the hook right after its project() call: the driver needs the
    compilers project() found, and must stop before the tree's own configuration."""
    if HOOK_BEGIN in text:
        return text
    match = re.search(r"^[ \t]*project[ \t]*\(", text, re.IGNORECASE | re.MULTILINE)
    if match is None:
        raise PgolabError(f"{where} has no project() call to hook WITH_PGO after",
                          hint="give the top folder of a MariaDB or MySQL source tree")
    depth, i = 0, match.end() - 1
    while i < len(text):            # project( may span lines: the hook goes after its closing line
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            break
        i += 1
    end = text.find("\n", i)
    end = len(text) if end < 0 else end + 1
    return text[:end] + HOOK + text[end:]


def write_module(tree: SourceTree, train_args: list[str]) -> WrittenModule:
    """Write the module into the tree and hook it into the top CMakeLists.txt (once)."""
    if tree.server not in ("mariadb", "mysql"):
        raise PgolabError(f"{tree.server} {tree.version} does not build with CMake here",
                          hint="for PostgreSQL, build your way with CFLAGS=-fprofile-generate and run "
                               "pgolab train --binary PATH --profile-dir DIR")
    cmakelists = tree.path / "CMakeLists.txt"
    if not cmakelists.is_file():
        raise PgolabError(f"{tree.path} has no CMakeLists.txt", hint="give the top folder of the source tree")
    module = tree.path / MODULE_FILE
    module.parent.mkdir(parents=True, exist_ok=True)
    module.write_text(render(tree, train_args, [sys.executable, "-m", "pgolab"]))
    text = cmakelists.read_text()
    new = hooked(text, cmakelists)
    if new != text:
        cmakelists.write_text(new)
    return WrittenModule(module, cmakelists, new != text, clang_families()[0].llvm_version)


def usage(written: WrittenModule, tree: Path) -> str:
    llvm = written.llvm
    return (f"CC=clang-{llvm} CXX=clang++-{llvm} cmake -DWITH_PGO=ON {shlex.quote(str(tree))} "
            f"&& cmake --build . && cmake --install .")
