"""A finished build as something to install: a drop-in .deb over the distribution's own server
binary, or a relocatable binary tarball. Both carry the build record and what was measured of it.

The .deb replaces one file, the server binary of the package the build was configured like
(`pgolab build --distribution-options`), through dpkg-divert: Debian's configuration, service
files, extensions and clients stay, removal puts Debian's binary back. It depends on exactly the
package version whose source it was built from, and on the libraries the new binary needs
(dpkg-shlibdeps). The features check compares what the two server binaries offer.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tarfile
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

from . import elf, report, scratch
from .distribution import DistributionBuild, installed_version
from .errors import PgolabError
from .record import BuildRecord
from .render import MarkdownRenderer
from .runner import Runner
from .sources import file_digest
from .store import Store
from .targets import target_for
from .toolchains import require

FORMATS = ("deb", "tar")
PACKAGE_PREFIX = "pgolab-"
# The name Debian's binary gets beside the diverted path while the package is installed.
DIVERTED_SUFFIX = ".distrib"


@dataclass(frozen=True)
class FeatureCheck:
    """What the two server binaries offer, compared, as the server's recipe reads it (PostgreSQL: its
    configuration parameters; MariaDB: its options and variables). A name only the distribution's
    binary has is looked up in the built source tree: absent there, the two binaries come from
    different releases of it."""
    what: str
    distribution_binary: str           # which binary, of which package version
    only_distribution: tuple[str, ...]
    only_build: tuple[str, ...]
    not_in_source: tuple[str, ...]     # of only_distribution: names the built tree never defines
    compared: int

    @property
    def same(self) -> bool:
        return not self.only_distribution and not self.only_build

    def markdown(self) -> str:
        lines = ["## Features against the distribution's binary", "",
                 f"{self.what}, against {self.distribution_binary}: {self.compared} compared; "
                 + ("the same." if self.same else "they differ:")]
        lines += [f"- only in the distribution's binary: `{n}`"
                  + (" (not defined in the built source tree)" if n in self.not_in_source else "")
                  for n in self.only_distribution]
        lines += [f"- only in this build: `{n}`" for n in self.only_build]
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Package:
    path: Path
    format: str
    features: FeatureCheck | None
    binary_digest: str | None = None    # sha256 of the server binary as packaged (.deb: debug info stripped)


def package_name(distribution: DistributionBuild) -> str:
    return PACKAGE_PREFIX + distribution.package


def package_version(record: BuildRecord, distribution: DistributionBuild) -> str:
    """The version it replaces, and which build this is (its binary's digest): two builds of one
    version are two package versions, and one does not overwrite the other's file."""
    return f"{distribution.version}+pgolab.{(record.binary_digest or 'unknown')[:10]}"


def control_file(record: BuildRecord, distribution: DistributionBuild, depends: list[str], arch: str) -> str:
    name = package_name(distribution)
    about = (f"Replaces {distribution.server_path} of {distribution.package} {distribution.version} (kept as "
             f"{distribution.server_path}{DIVERTED_SUFFIX} through dpkg-divert) with pgolab's build of the same "
             f"source: {record.description}. Removing this package puts the distribution's binary back.")
    return "\n".join([
        f"Package: {name}",
        f"Version: {package_version(record, distribution)}",
        f"Architecture: {arch}",
        "Maintainer: pgolab <pgolab@localhost>",
        "Section: database",
        "Priority: optional",
        "Depends: " + ", ".join([f"{distribution.package} (= {distribution.version})", *depends]),
        f"Description: {distribution.package}'s server binary, built by pgolab as {record.variant}",
        *(" " + line for line in textwrap.wrap(about, 78)),
    ]) + "\n"


def maintainer_scripts(distribution: DistributionBuild) -> dict[str, str]:
    """preinst diverts the distribution's binary aside before dpkg unpacks ours over its path; postrm
    takes the diversion back, renaming the binary home, on removal or an aborted install."""
    divert = (f"dpkg-divert --package {package_name(distribution)} --rename "
              f"--divert {distribution.server_path}{DIVERTED_SUFFIX}")
    return {
        "preinst": ("#!/bin/sh\nset -e\nif [ \"$1\" = install ] || [ \"$1\" = upgrade ]; then\n"
                    f"  {divert} --add {distribution.server_path}\nfi\n"),
        "postrm": ("#!/bin/sh\nset -e\nif [ \"$1\" = remove ] || [ \"$1\" = abort-install ] || "
                   "[ \"$1\" = disappear ]; then\n"
                   f"  {divert} --remove {distribution.server_path}\nfi\n"),
    }


def shlib_depends(binary: Path, runner: Runner) -> list[str]:
    """The packages (with minimum versions) of the shared libraries the binary needs, as Debian's own
    packaging computes them (dpkg-shlibdeps)."""
    work = scratch.make("shlibdeps")
    try:
        (work / "debian").mkdir()
        (work / "debian" / "control").write_text("Source: pgolab\n\nPackage: pgolab\nArchitecture: any\n")
        done = runner.run([require("dpkg-shlibdeps"), "-O", str(binary)], cwd=work, what="dpkg-shlibdeps")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for line in done.output.splitlines():
        if line.startswith("shlibs:Depends="):
            return [d.strip() for d in line.split("=", 1)[1].split(",") if d.strip()]
    return []


def features(record: BuildRecord, distribution: DistributionBuild, runner: Runner) -> FeatureCheck | None:
    """What both binaries offer (the server's recipe says what that is and reads it), when the
    distribution's binary is on this machine (its package installed); None when it is not."""
    theirs = Path(distribution.server_path)
    if not theirs.exists():
        return None
    target, installation = target_for(record.server), record.installation()
    names = [target.feature_names(binary, installation, runner) for binary in (theirs, Path(record.server_binary))]
    only_theirs = tuple(sorted(names[0] - names[1]))
    installed = installed_version(distribution.package, runner) or "version unknown"
    return FeatureCheck(target.features_compared,
                        f"{theirs} of {distribution.package} {installed} (built: {distribution.version})",
                        only_theirs, tuple(sorted(names[1] - names[0])),
                        tuple(sorted(target.undefined_in_source(record.source_path, set(only_theirs)))),
                        len(names[0] | names[1]))


def readme(record: BuildRecord, distribution: DistributionBuild | None, check: FeatureCheck | None,
           gain: str | None, packaged_digest: str | None = None, usage: list[str] | None = None) -> str:
    lines = [f"# {record.label}: {record.server} {record.version} built by pgolab", "", *(usage or []),
             f"- variant: `{record.variant}` ({record.description})",
             f"- training: {record.training or 'none'}",
             "- toolchain: " + ", ".join(f"{k} {v}" for k, v in sorted(record.toolchain.items())),
             f"- server binary sha256: `{record.binary_digest}` as built"
             + (f"; `{packaged_digest}` as packaged (debug info stripped)" if packaged_digest and packaged_digest != record.binary_digest else ""),
             f"- built in {record.build_seconds / 60:.1f} min ({record.build_cpu_seconds / 60:.1f} CPU min)", ""]
    if distribution:
        lines += [f"Configured like Debian's {distribution.package} {distribution.version} "
                  f"(options read from {distribution.read_from}); left out:", ""]
        lines += [f"- `{d.option}`: {d.why}" for d in distribution.dropped] + [""]
    lines += ["## Measured gain", "", gain or "Not given: `pgolab package --store FILE --run NAME` adds the "
              "headline of a stored run that measured this build against its base.", ""]
    if check:
        lines += [check.markdown()]
    lines += ["The whole build record is build.json beside this file."]
    return "\n".join(lines) + "\n"


def make_deb(record: BuildRecord, out_dir: Path, runner: Runner, gain: str | None = None) -> Package:
    distribution = record.distribution_build
    if distribution is None:
        raise PgolabError(f"{record.label} was configured pgolab's way, not like the distribution's package",
                          hint=f"build it with --distribution-options (labelled {record.variant}+debian), "
                               f"then package that build")
    binary = Path(record.server_binary)
    check = features(record, distribution, runner)
    name = package_name(distribution)
    arch = runner.run(["dpkg", "--print-architecture"], what="dpkg --print-architecture").output.strip()
    root = scratch.make("deb")
    try:
        # Debug info stripped, as Debian's packages ship their servers (its -dbgsym packages hold it);
        # the symbol table stays, so that perf still names functions.
        packaged = root / distribution.server_path.lstrip("/")
        packaged.parent.mkdir(parents=True)
        runner.run([require("objcopy"), "--strip-debug", str(binary), str(packaged)], what="objcopy --strip-debug")
        packaged.chmod(0o755)
        digest = file_digest(packaged)
        docs = root / "usr" / "share" / "doc" / name
        docs.mkdir(parents=True)
        (docs / "build.json").write_text(json.dumps(record.as_dict(), indent=2) + "\n")
        (docs / "README.md").write_text(readme(record, distribution, check, gain, digest))
        control = root / "DEBIAN"
        control.mkdir()
        (control / "control").write_text(control_file(record, distribution, shlib_depends(binary, runner), arch))
        for script, text in maintainer_scripts(distribution).items():
            (control / script).write_text(text)
            (control / script).chmod(0o755)
        out_dir.mkdir(parents=True, exist_ok=True)
        # Debian's file names leave out the version's epoch (MariaDB's is 1:).
        deb = out_dir / f"{name}_{package_version(record, distribution).split(':', 1)[-1]}_{arch}.deb"
        runner.run([require("dpkg-deb"), "--root-owner-group", "--build", str(root), str(deb)], what="dpkg-deb --build")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return Package(deb, "deb", check, digest)


def make_tar(record: BuildRecord, out_dir: Path, runner: Runner, gain: str | None = None) -> Package:
    """The installed tree as it is (the binaries find their files relative to where they are), with a
    data-directory setup script and a README at its top. Programs that load libpq find the tarball's
    own copy ($ORIGIN), not the folder they were built for."""
    tree = target_for(record.server).installed_tree(Path(record.install_dir))
    top = f"{record.server}-{record.version}-{record.label.replace('+', '-')}"
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = scratch.make("tar")
    try:
        shutil.copytree(tree, staging / top, symlinks=True)
        bindir = Path(record.server_binary).resolve().parent.relative_to(tree.resolve())
        libpq = sorted((staging / top).glob("**/libpq.so.*"))
        for program in (staging / top / bindir).iterdir():
            if libpq and program.is_file() and not program.is_symlink() and \
                    any(n.startswith("libpq") for n in elf.needed_libraries(program)):
                rpath = "$ORIGIN/" + os.path.relpath(libpq[0].parent, program.parent)
                runner.run([require("patchelf"), "--set-rpath", rpath, str(program)], what="patchelf --set-rpath")
        setup = staging / top / "setup-datadir"
        script, usage = target_for(record.server).tarball_setup(setup.name, bindir)
        setup.write_text(script)
        setup.chmod(setup.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        (staging / top / "README.md").write_text(readme(record, record.distribution_build, None, gain, usage=usage))
        (staging / top / "build.json").write_text(json.dumps(record.as_dict(), indent=2) + "\n")
        path = out_dir / f"{top}.tar.gz"
        with tarfile.open(path, "w:gz", compresslevel=6) as tar:
            tar.add(staging / top, arcname=top)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Package(path, "tar", None, record.binary_digest)


def measured_gain(record: BuildRecord, store: Store, run_ref: str | None) -> str:
    """This build's row of a stored run's headline table (every figure against the run's base), with
    the facts that say what was measured where."""
    run_report = report.compute(store, run_ref)
    builds = next(t for t in run_report.tables if t.key == "builds")
    rows = [r for r in builds.rows if r["build"] == record.label]
    if not rows:
        raise PgolabError(f"{run_report.title} measured no build {record.label!r} against its base",
                          hint="its builds: " + ", ".join(r["build"] for r in builds.rows)
                               + "; package one of them, or give the run that measured this one")
    renderer = MarkdownRenderer()
    return "\n".join([renderer.paragraph(f) for f in run_report.facts[:3]] +
                     [renderer.table(replace(builds, title=f"{run_report.title}: headline", rows=rows))])


def package(label: str, fmt: str, out_dir: Path, runner: Runner, store: Store | None = None,
            run_ref: str | None = None) -> Package:
    """`pgolab package`: the newest finished build of that label, as a .deb or a tarball."""
    if fmt not in FORMATS:
        raise PgolabError(f"unknown package format {fmt!r}", hint=f"give --format {' or '.join(FORMATS)}")
    record = BuildRecord.find(label)
    if fmt == "tar" and target_for(record.server).tarball_setup is None:
        raise PgolabError(f"a {record.server} build is packaged as a .deb only so far: pgolab's build installs the "
                          "server and the tools a benchmark needs, not the whole tree a binary tarball holds",
                          hint="give --format deb (of a build made with --distribution-options)")
    binary = Path(record.server_binary)
    if not binary.is_file() or file_digest(binary) != record.binary_digest:
        raise PgolabError(f"{binary} is not the binary {record.label}'s build record describes",
                          hint="a later build of it stopped before its record was written: build it again "
                               "to the end, then package it")
    gain = measured_gain(record, store, run_ref) if store else None
    return (make_deb if fmt == "deb" else make_tar)(record, out_dir, runner, gain)
