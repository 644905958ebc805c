"""Debian source packages, reached through pgolab's own apt configuration.

Newer servers live in newer suites (MariaDB 11.8 in trixie, MySQL 9.7 in sid).
An entry for those suites in the machine's /etc/apt would let the next
`apt-get upgrade` or `build-dep` pull binaries from them, so pgolab keeps its
own deb-src-only source list, package lists and apt caches under its home and
passes them to apt on every call. The machine's apt state is never touched.
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .errors import PgolabError
from .runner import Runner, home_runner
from .sources import SourceTree, detect

MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# Debian 12 (the machine's release) first: without --version a server comes from there when it has it.
HOME_SUITES = ("bookworm", "bookworm-updates")
SUITES = (*HOME_SUITES, "trixie", "sid")
LISTS_MAX_AGE_S = 24 * 3600

# Server -> the source packages that carry it.
SOURCE_PACKAGES: dict[str, tuple[str, ...]] = {
    "mariadb": ("mariadb",),
    "mysql": ("mysql-9.7", "mysql-8.4", "mysql-8.0"),
    "postgresql": ("postgresql-18", "postgresql-17", "postgresql-16", "postgresql-15"),
}


@dataclass(frozen=True)
class Listed:
    """One version of a source package in one suite."""

    package: str
    version: str   # Debian's, e.g. 1:11.8.6-0+deb13u1
    suite: str

    @property
    def upstream(self) -> str:
        return upstream_version(self.version)

    def matches(self, wanted: str) -> bool:
        """`17` matches 17.11, `11.8` matches 11.8.6, and a full Debian or upstream version itself."""
        number = re.match(r"[\d.]+", self.upstream)
        numeric = number.group(0).rstrip(".") if number else self.upstream
        return wanted in (self.version, self.upstream, numeric) or numeric.startswith(wanted + ".")


def upstream_version(debian_version: str) -> str:
    """1:10.11.18-0+deb12u1 -> 10.11.18 (no epoch, no Debian revision)."""
    v = debian_version.split(":", 1)[-1]
    return v.rsplit("-", 1)[0]


def _versions_runner() -> Runner:
    return home_runner("debian-versions")


def newest_first(listed: list[Listed], runner: Runner | None = None) -> list[Listed]:
    """Sorted by Debian's own version order (`dpkg --compare-versions`, each call logged)."""
    runner = runner or _versions_runner()

    def cmp(a: Listed, b: Listed) -> int:
        if a.version == b.version:
            return 0
        gt = runner.run(["dpkg", "--compare-versions", a.version, "gt", b.version], check=False,
                        what="dpkg --compare-versions").returncode == 0
        return -1 if gt else 1
    return sorted(listed, key=functools.cmp_to_key(cmp))


def choose(listed: list[Listed], wanted: str | None, runner: Runner | None = None) -> list[Listed]:
    """The candidates to try, in order: the asked-for version, else the machine's release's, newest first."""
    if wanted:
        listed = [entry for entry in listed if entry.matches(wanted)]
    elif home := [entry for entry in listed if entry.suite in HOME_SUITES]:
        listed = home
    return newest_first(listed, runner)


def parse_madison(text: str) -> list[Listed]:
    """`apt-cache madison` lines: `pkg | version | http://mirror suite/main Sources`."""
    found = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2].endswith("Sources"):
            suite = parts[2].split()[-2].split("/")[0]
            found.append(Listed(parts[0], parts[1], suite))
    return found


@dataclass(frozen=True)
class PrivateApt:
    """apt with pgolab's own source list, lists and caches; deb-src entries only."""

    root: Path

    @classmethod
    def default(cls) -> "PrivateApt":
        return cls(paths.home() / "apt")

    @property
    def source_parts(self) -> Path:
        return self.root / "sources.list.d"

    def sources_text(self) -> str:
        return (f"# Written by pgolab: source packages only, for `pgolab source`.\n"
                f"Types: deb-src\nURIs: {MIRROR}\nSuites: {' '.join(SUITES)}\nComponents: main\n"
                f"Signed-By: {KEYRING}\n")

    def options(self) -> list[str]:
        settings = {"Dir::Etc::SourceList": "/dev/null",   # not the machine's list
                    "Dir::Etc::SourceParts": self.source_parts,
                    "Dir::State::Lists": self.root / "lists",
                    "Dir::Cache": self.root / "cache"}
        return [arg for key, value in settings.items() for arg in ("-o", f"{key}={value}")]

    def refresh(self, runner: Runner) -> None:
        """`apt-get update` on the private lists when they are missing, stale or for other suites."""
        listing = self.source_parts / "pgolab.sources"
        stamp = self.root / "updated"
        text = self.sources_text()
        fresh = (stamp.exists() and listing.exists() and listing.read_text() == text
                 and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE_S)
        if fresh:
            return
        for sub in (self.source_parts, self.root / "lists" / "partial", self.root / "cache" / "archives" / "partial"):
            sub.mkdir(parents=True, exist_ok=True)
        listing.write_text(text)
        runner.run(["apt-get", *self.options(), "update"], what="apt-get update (pgolab's own source lists)")
        stamp.touch()

    def listed(self, packages: tuple[str, ...], runner: Runner) -> list[Listed]:
        out = runner.run(["apt-cache", *self.options(), "madison", *packages], check=False,
                         what="apt-cache madison").output
        return parse_madison(out)

    def download(self, entry: Listed, into: Path, runner: Runner) -> Path | None:
        """The .dsc of one version, or None when the mirror does not serve its files."""
        into.mkdir(parents=True, exist_ok=True)
        result = runner.run(["apt-get", *self.options(), "source", "--download-only",
                             f"{entry.package}={entry.version}"],
                            cwd=into, check=False, what="apt-get source")
        dscs = list(into.glob("*.dsc"))
        return dscs[0] if result.returncode == 0 and dscs else None


ORIGIN_FILE = ".pgolab-debian-version"   # line 1: Debian version; line 2: suite


def resolve(spec: str, runner: Runner) -> SourceTree:
    """What a user names as SOURCE: a source directory, a tarball, or a server to fetch from Debian
    (`mysql`, `mariadb=11.8.6`)."""
    server, _, version = spec.partition("=")
    if server in SOURCE_PACKAGES and not Path(spec).exists():
        return fetch(server, version or None, runner)
    return detect(Path(spec))


def fetch(server: str, version: str | None, runner: Runner, apt: PrivateApt | None = None) -> SourceTree:
    """Download and unpack a server's source package, falling back through the listed versions."""
    if server not in SOURCE_PACKAGES:
        raise PgolabError(f"pgolab cannot fetch {server!r} sources from Debian",
                          hint=f"fetch one of {', '.join(SOURCE_PACKAGES)}, or bring the tree yourself: "
                               f"a directory or a tarball")
    apt = apt or PrivateApt.default()
    apt.refresh(runner)
    listed = apt.listed(SOURCE_PACKAGES[server], runner)
    if not listed:
        raise PgolabError(f"no suite of {', '.join(SUITES)} lists {server}", log=runner.log_path,
                          hint="check that deb.debian.org is reachable, then run the same command again")
    candidates = choose(listed, version, runner)
    if not candidates:
        shown = ", ".join(f"{e.upstream} ({e.suite})" for e in newest_first(listed, runner))
        raise PgolabError(f"version {version} of {server} is not listed", hint=f"listed: {shown}")
    failed = []
    for entry in candidates:
        dest = paths.sources_dir() / f"{entry.package}_{entry.upstream}"
        done = dest / ORIGIN_FILE
        if done.exists() and done.read_text().split("\n")[0].strip() == entry.version:
            return _with_origin(detect(dest), done)
        dsc = apt.download(entry, paths.sources_dir() / "downloads" / f"{entry.package}_{entry.version.replace(':', '_')}",
                           runner)
        if dsc is None:
            # Listed but not served (a security update, or a version newer than the mirror's files).
            failed.append(f"{entry.package} {entry.version} ({entry.suite}): download failed")
            continue
        partial = dest.with_name(dest.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        runner.run(["dpkg-source", "--no-check", "-x", dsc, partial], what="dpkg-source -x")
        (partial / ORIGIN_FILE).write_text(f"{entry.version}\n{entry.suite}\n")
        shutil.rmtree(dest, ignore_errors=True)
        partial.rename(dest)
        return _with_origin(detect(dest), done)
    raise PgolabError(f"no listed version of {server} could be downloaded", detail="\n".join(failed),
                      log=runner.log_path, hint="try another --version, or bring a tree with --source")


def _with_origin(tree: SourceTree, origin_file: Path) -> SourceTree:
    lines = origin_file.read_text().split("\n")
    # Trees fetched before pgolab recorded the suite came from the machine's own (Debian 12) sources.
    suite = lines[1].strip() if len(lines) > 1 and lines[1].strip() else "12"
    return SourceTree(tree.path, tree.server, tree.version,
                      origin=f"Debian {suite}, source package version {lines[0].strip()}")
