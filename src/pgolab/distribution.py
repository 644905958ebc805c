"""The distribution's own build of a server: what a drop-in replacement is configured like.

A build that replaces the server binary of a distribution package (`pgolab package`) must find that
package's files where the package put them and have the features its configuration expects (ssl=on
in Debian's postgresql.conf needs OpenSSL). The package's own configure options give both. Each
server's recipe reads them from the package (targets/*: `distribution_build`), keeps what shapes the
server and says why it drops the rest; this module holds the result and Debian's version facts.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import PgolabError
from .runner import Runner

# A build configured like the distribution's lives beside the plain one under this suffix: the two
# differ in every object, and sharing a folder would rebuild one over the other.
SUFFIX = "+debian"


@dataclass(frozen=True)
class DroppedOption:
    option: str
    why: str


@dataclass(frozen=True)
class DistributionBuild:
    """A server built like its Debian package: that package, its server binary's path, the configure
    options taken from it and those left out (each with why)."""

    package: str                 # the binary package whose server binary is replaced, e.g. postgresql-15
    version: str                 # the Debian version of the source tree: a package depends on exactly it
    server_path: str             # where that package installs the server binary
    configure_args: tuple[str, ...]
    dropped: tuple[DroppedOption, ...]
    read_from: str               # the command and package version the options were read from

    @property
    def suffix(self) -> str:
        return SUFFIX

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "DistributionBuild":
        return cls(data["package"], data["version"], data["server_path"], tuple(data["configure_args"]),
                   tuple(DroppedOption(**d) for d in data["dropped"]), data["read_from"])


def tree_debian_version(tree: Path) -> str:
    """The Debian version a source tree was unpacked from: the first line of its debian/changelog."""
    changelog = tree / "debian" / "changelog"
    first = changelog.read_text(errors="replace").split("\n", 1)[0] if changelog.is_file() else ""
    found = re.match(r"\S+ \(([^)]+)\)", first)
    if not found:
        raise PgolabError(f"{tree} has no debian/changelog naming its Debian version",
                          hint="a drop-in build is made from Debian's source package: "
                               "pgolab source SERVER fetches one")
    return found.group(1)


def installed_version(package: str, runner: Runner) -> str | None:
    """The version of an installed Debian package, or None."""
    done = runner.run(["dpkg-query", "-W", "-f=${Status} ${Version}", package], check=False,
                      what=f"dpkg-query {package}")
    words = done.output.split()
    return words[-1] if done.returncode == 0 and "installed" in words[:3] else None


def require_packages(needed: dict[str, str], runner: Runner, what: str) -> None:
    """Refuse, naming every missing package at once: `needed` maps a file to the package that has it."""
    missing = sorted({package for file, package in needed.items() if not Path(file).exists()})
    if missing:
        raise PgolabError(f"{what} needs {', '.join(missing)}",
                          hint=f"apt-get install {' '.join(missing)} (scripts/setup-system.sh installs them)")
