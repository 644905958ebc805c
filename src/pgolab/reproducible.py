"""What makes a build the same wherever it is built: no path of this machine, no clock.

A build's source tree and build directory live under pgolab's home, which differs between
machines and users; the compilers write both into the binary (debug information, `__FILE__` in
assertions and error locations). Every compile maps them to fixed stand-ins. `SOURCE_DATE_EPOCH`
fixes what `__DATE__` and `__TIME__` (and build scripts that honour it) would take from the clock.
An install prefix a server compiles in is the recipe's: PostgreSQL configures a fixed prefix and
installs through DESTDIR (targets/postgresql.py); MariaDB and MySQL keep CMake's fixed default and
copy their programs.
"""

from __future__ import annotations

import email.utils
import re
from pathlib import Path

SOURCE_STANDIN = "/pgolab/source"
BUILD_STANDIN = "/pgolab/build"
BUILDS_STANDIN = "/pgolab/builds"  # a tree's builds folder, where a recipe's recorded flags would name it


def prefix_map_flags(source: Path, build_dir: Path) -> list[str]:
    """gcc and clang: -ffile-prefix-map covers debug information, macros (`__FILE__`) and coverage
    paths. gcc leaves these options out of the switches it records in the binary."""
    return [f"-ffile-prefix-map={source.absolute()}={SOURCE_STANDIN}",
            f"-ffile-prefix-map={build_dir.absolute()}={BUILD_STANDIN}"]


# gcc records its command line in the debug information (DW_AT_producer), leaving the prefix maps
# out but not a PGO build's profile folder (-fprofile-use=DIR, -fprofile-prefix-path=DIR): a build
# whose flags name a folder of this machine records no switches.
NO_RECORDED_SWITCHES = "-gno-record-gcc-switches"


def changelog_epoch(text: str) -> int | None:
    """The date of a Debian changelog's newest entry (its first trailer line), as Debian's own
    builds set SOURCE_DATE_EPOCH."""
    match = re.search(r"^ -- .+?<[^>]*>\s+(.+)$", text, re.M)
    if not match:
        return None
    try:
        return int(email.utils.parsedate_to_datetime(match.group(1).strip()).timestamp())
    except (TypeError, ValueError):
        return None


def source_date_epoch(tree: Path) -> int:
    """From the tree's debian/changelog where it has one (a Debian source package), else the newest
    modification time of its top-level files, which a tarball carries; never the clock."""
    changelog = tree / "debian" / "changelog"
    if changelog.is_file():
        epoch = changelog_epoch(changelog.read_text(errors="replace"))
        if epoch is not None:
            return epoch
    try:
        times = [int(p.stat().st_mtime) for p in tree.iterdir() if p.is_file()]
    except OSError:     # no tree (yet): a plan can be made before the source is there
        times = []
    return max(times, default=0)


def build_env(tree: Path) -> dict[str, str]:
    return {"SOURCE_DATE_EPOCH": str(source_date_epoch(tree))}
