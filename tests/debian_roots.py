"""Throwaway Debian 12 roots for the package tests: made with mmdebstrap (never this machine's own
system), cached per package version and recipe, unpacked per test, and scripts run in them in
namespaces of their own."""

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import need

MIRROR = "http://deb.debian.org/debian"
# The root is made once per machine and package version (about a minute), then unpacked per test.
ROOTS = Path(os.environ.get("PGOLAB_TEST_ROOTS", "/var/cache/pgolab-test-roots"))


def pgolab(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pgolab", *args], capture_output=True, text=True, **kwargs)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def answers(output: str) -> dict[str, str]:
    """A script's `key=value` lines."""
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def debian_root(package: str, version: str, into: Path) -> Path:
    """A minimal Debian 12 root with `package` (= version) installed and its apt lists kept."""
    need("mmdebstrap")
    ROOTS.mkdir(parents=True, exist_ok=True)
    # Documentation left out, but for pgolab's packages: the test reads the build record they carry.
    argv = ["mmdebstrap", "--variant=minbase", f"--include={package}={version}", "--skip=cleanup/apt/lists",
            "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/pgolab-*",
            "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/locale/*", "bookworm"]
    recipe = hashlib.sha256(" ".join(argv).encode()).hexdigest()[:10]
    cached = ROOTS / f"bookworm-{package}_{version.replace(':', '_')}-{recipe}.tar"
    if not cached.exists():
        partial = cached.with_suffix(".partial.tar")
        made = subprocess.run([*argv, str(partial), MIRROR], capture_output=True, text=True, timeout=1200)
        assert made.returncode == 0, made.stderr[-3000:]
        partial.rename(cached)
    into.mkdir(parents=True)
    with tarfile.open(cached) as tar:
        tar.extractall(into, filter="fully_trusted")
    return into


def in_root(root: Path, script: str, check: bool = True, network: bool = False) -> subprocess.CompletedProcess:
    """One shell script in the root, in namespaces of its own (mounts, processes and, unless it needs
    Debian's mirror, a network with only loopback up): whatever it starts ends with it, and this
    machine's /proc and ports are untouched."""
    if network:
        shutil.copy("/etc/resolv.conf", root / "etc" / "resolv.conf")
    isolated = [] if network else ["--net"]
    up = "" if network else "ip link set lo up && "
    # POSIX shared memory (PostgreSQL's dynamic segments) needs a world-writable /dev/shm, a tmpfs as
    # on a booted system; mounted in this namespace, it goes with it.
    argv = ["unshare", "--mount", "--pid", *isolated, "--fork", f"--mount-proc={root / 'proc'}",
            "sh", "-c", f"{up}mount -t tmpfs -o mode=1777 tmpfs {root / 'dev/shm'} && exec chroot {root} /bin/sh -ec \"$0\"",
            script]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=900,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"})
    if check:
        assert done.returncode == 0, f"{script}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    return done
