"""What every server recipe provides: build commands and a runnable installation."""

from __future__ import annotations

import fnmatch
import os
import pwd
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import PgolabError
from ..variants import FlagSet


@dataclass
class Cmd:
    """One external command of a build phase."""

    argv: list[str]
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    what: str = ""


def cmake_flags_include(flags: FlagSet) -> str:
    """A CMake project-include that *appends* pgolab's flags after the build type's.

    CMAKE_PROJECT_INCLUDE runs right after project() has filled in the build
    type's defaults (-O3 -DNDEBUG for Release), so appending here keeps them and
    lets a later -O2 win; replacing CMAKE_<LANG>_FLAGS_<TYPE> would drop -DNDEBUG.
    """
    compile_flags = " ".join(flags.compile)
    link_flags = " ".join(flags.link)
    return f"""# Written by pgolab: adds flags after the build type's own; replaces nothing.
include_guard(GLOBAL)
string(TOUPPER "${{CMAKE_BUILD_TYPE}}" _pgolab_bt)
foreach(_pgolab_lang C CXX)
  string(APPEND CMAKE_${{_pgolab_lang}}_FLAGS_${{_pgolab_bt}} " {compile_flags}")
endforeach()
foreach(_pgolab_kind EXE SHARED MODULE)
  string(APPEND CMAKE_${{_pgolab_kind}}_LINKER_FLAGS_${{_pgolab_bt}} " {link_flags}")
endforeach()
message(STATUS "pgolab: added compile flags: {compile_flags}")
message(STATUS "pgolab: added link flags: {link_flags}")
"""


def cmake_tool_args(flags: FlagSet) -> list[str]:
    mapping = {"AR": "CMAKE_AR", "RANLIB": "CMAKE_RANLIB", "NM": "CMAKE_NM"}
    args = []
    for key, var in mapping.items():
        if key in flags.tools:
            args.append(f"-D{var}={flags.tools[key]}")
            # CMake uses these for static libraries when it knows it compiles with LTO.
            args += [f"-DCMAKE_C_COMPILER_{key}={flags.tools[key]}",
                     f"-DCMAKE_CXX_COMPILER_{key}={flags.tools[key]}"] if key != "NM" else []
    return args


def cmake_build_folder(binary: Path, relative: str) -> Path | None:
    """The CMake build folder `binary` was built in, where it sits at `relative` in one."""
    parts = len(Path(relative).parts)
    folder = binary.parents[parts - 1] if len(binary.parents) >= parts else None
    if folder is None or folder / relative != binary or not (folder / "CMakeCache.txt").is_file():
        return None
    return folder


def cmake_source_folder(build: Path) -> Path:
    """The source tree a CMake build folder configures, as its cache records it."""
    found = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", (build / "CMakeCache.txt").read_text(errors="replace"),
                      re.MULTILINE)
    if found is None:
        raise PgolabError(f"{build / 'CMakeCache.txt'} names no source folder", hint="configure the build folder again")
    return Path(found.group(1))


def unprivileged_user() -> str | None:
    """The user a server that refuses root runs as, or None when not root."""
    if os.geteuid() != 0:
        return None
    name = os.environ.get("PGOLAB_SERVER_USER", "pgolab")
    try:
        pwd.getpwnam(name)
    except KeyError:
        raise PgolabError(f"running as root, and user {name!r} (for servers that refuse root) does not exist",
                          hint="run scripts/setup-system.sh (creates it) or `useradd --system pgolab`, "
                               "or set PGOLAB_SERVER_USER")
    return name


@dataclass(frozen=True)
class PluginEngine:
    """A storage engine a server's default build leaves out and builds, when asked, as a loadable
    plugin (`pgolab build --engine NAME`)."""
    name: str                  # as --engine names it
    cmake_option: str          # configured with -D<option>=DYNAMIC
    build_target: str          # the build target that makes the plugin
    library: str               # the plugin file, relative to the build folder
    table_engine: str          # as ENGINE= names it: the training mix gives it tables of its own
    # The training server's options for it: the mix switches binary-log formats, which an engine may
    # refuse by default.
    training_options: tuple[str, ...] = ()

    @property
    def file_name(self) -> str:
        return Path(self.library).name

    @property
    def load_option(self) -> str:
        """What a server starts with to load it from its plugin folder."""
        return f"--plugin-load-add={self.file_name}"


def engines_suffix(engines) -> str:
    """How a build's name says which engine plugins it has: +rocksdb."""
    return "".join(f"+{e}" for e in engines)


def plugin_engines(known: dict[str, PluginEngine], names, server: str) -> tuple[PluginEngine, ...]:
    """The plugin engines a build asks for, refused by name when the server builds no such plugin."""
    for name in names:
        if name not in known:
            offered = ", ".join(known) or "none"
            raise PgolabError(f"{server} builds no storage-engine plugin {name!r}",
                              hint=f"--engine takes a plugin engine of {server}: {offered}; its built-in engines "
                                   "need no --engine at build time")
    return tuple(known[n] for n in dict.fromkeys(names))


@dataclass(frozen=True)
class CostEntry:
    """A function collection is toggled on in, as callgrind's pattern (`*` and `?`, matching the
    whole name). The pattern must name one function: callgrind toggles on entry to each match, so a
    pattern that also matches a split-off part (gcc's `[clone .cold]`, entered by a jump from the
    hot part) switches collection off inside the function and leaves it inverted afterwards."""
    toggle: str

    def matches(self, names: set[str]) -> set[str]:
        return {n for n in names if fnmatch.fnmatchcase(n, self.toggle)}
