"""What the PostgreSQL end-to-end tests share (test_pipeline_postgresql.py, test_matrix_postgresql.py):
the source tree, pgolab as a command, the servers left under a folder, a pipeline record's checks.
Two files, so that pytest-xdist's two workers run the two longest tests at once (scripts/test.sh)."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgolab import debian
from pgolab.runner import Runner

from conftest import need

TRAIN_SECONDS = 10


@pytest.fixture(scope="module")
def pg_tree(tmp_path_factory):
    need("apt-get")
    need("sysbench")
    return debian.fetch("postgresql", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


def pgolab(*args: str) -> list[str]:
    return [sys.executable, "-m", "pgolab", *args]


def postgres_processes(under: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "postgres"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(under) in line]


def assert_pipeline_record(record: dict, compiler: str) -> None:
    merge = record["profile"]["merge"]
    assert merge["raw_files"] > 0 and merge["raw_bytes"] > 0, "the training run wrote profile files"
    check = record["profile"]["check-profile"]
    assert check["objects"] > 100
    # The backend's objects (the bulk of the tree) must have used the profile.
    assert check["with_profile"] > check["objects"] // 3, check
    if compiler == "clang":
        assert merge["functions"] > 1000 and merge["max_function_count"] > 0
    assert record["smoke"] and "PostgreSQL 15" in record["smoke"]
    assert Path(record["server_binary"]).exists()


def wait_until_gone(under: Path, seconds: float = 120) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and postgres_processes(under):
        time.sleep(0.5)
    return postgres_processes(under)
