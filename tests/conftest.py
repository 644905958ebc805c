import os
import shutil
import tempfile
from pathlib import Path

import pytest


def pytest_configure(config):
    """One pgolab home for the session (sources are fetched once), outside ~ so that the
    unprivileged user PostgreSQL runs as can reach it. PGOLAB_TEST_HOME picks another."""
    home = os.environ.get("PGOLAB_TEST_HOME")
    if not home:
        home = tempfile.mkdtemp(prefix="pgolab-test-home-")
        os.chmod(home, 0o755)
        config._pgolab_temp_home = home
    Path(home).mkdir(parents=True, exist_ok=True)
    os.environ["PGOLAB_HOME"] = home


def need(program: str) -> None:
    if not shutil.which(program):
        pytest.fail(f"{program} is not installed: run scripts/setup-system.sh")


def write_empty_clang_profile(target: Path) -> None:
    """A real, empty merged clang profile: what a clang -fprofile-use configure needs to exist."""
    import subprocess
    target.parent.mkdir(parents=True, exist_ok=True)
    text = target.with_suffix(".proftext")
    text.write_text("# IR level Instrumentation Flag\n:ir\n")
    subprocess.run(["llvm-profdata-16", "merge", "-o", str(target), str(text)], check=True)


def pytest_unconfigure(config):
    home = getattr(config, "_pgolab_temp_home", None)
    if home:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def server_tmp(request):
    """A scratch directory that the unprivileged server user can reach (pytest's tmp_path
    is private to root)."""
    import re
    path = Path(os.environ["PGOLAB_HOME"]) / "test-scratch" / re.sub(r"\W", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    path.chmod(0o755)
    return path
