"""Issue 11 on MariaDB: the training phase of a gcc PGO build, which holds the most state (an
instrumented server with a data directory, a binary log, a socket and a profile folder).

Three interruptions, each in the middle of the training mix, each followed by the same command:
SIGKILL of pgolab, SIGKILL of the instrumented mariadbd, and the finished re-run. Two MariaDB builds
(instrumented and optimized, about 12 min each here with two cores) do not fit CI's budget beside the
PostgreSQL pipeline tests, so this runs on request: PGOLAB_LONG_TESTS=1. With PGOLAB_TEST_HOME
pointing at a home whose instrumented build of the same tree is up to date, only the optimized
build is compiled.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgolab import debian, scratch, sources
from pgolab.build import variant_dir
from pgolab.runner import Runner

from conftest import long_test, need

pytestmark = [
    pytest.mark.slow,
    long_test("builds MariaDB twice (about 25 min here)"),
]

LABEL = "killtest"
TRAIN_SECONDS = 60
# Written by the training mix once its statements run (after initialise, start and the first query).
MARKER = "training mix:"


def mariadbd_processes(under: Path) -> list[tuple[int, str]]:
    out = subprocess.run(["pgrep", "-af", "mariadbd"], capture_output=True, text=True).stdout
    rows = [line.split(" ", 1) for line in out.splitlines()]
    return [(int(pid), cmd) for pid, cmd in rows if str(under) in cmd and "pgrep" not in cmd]


def wait_until_gone(under: Path, seconds: float = 120) -> list[tuple[int, str]]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and mariadbd_processes(under):
        time.sleep(0.5)
    return mariadbd_processes(under)


def start_and_wait_for_training(cmd: list[str], folder: Path) -> subprocess.Popen:
    """Start the command; return once this attempt's training mix is running (from its own log)."""
    log = folder / "logs" / "train.log"
    offset = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 3600   # the instrumented build, when it is not up to date
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.stat().st_size > offset:
            with log.open(errors="replace") as f:
                f.seek(offset)
                if MARKER in f.read():
                    # Some seconds into the mix: tables, binary log and counters exist.
                    time.sleep(10)
                    break
        time.sleep(0.2)
    assert proc.poll() is None, f"pgolab ended before the training ran: {proc.communicate()}"
    return proc


def phases_done(folder: Path) -> dict:
    return json.loads((folder / "state.json").read_text())["phases"]


def scratch_of(pids: list[int]) -> list[Path]:
    folders = list(scratch.root().glob("*")) if scratch.root().is_dir() else []
    return [f for f in folders if any(f.name.startswith(f"{pid}-") for pid in pids)]


@pytest.fixture(scope="module")
def mariadb_tree(tmp_path_factory):
    need("apt-get")
    need("sysbench")
    return debian.fetch("mariadb", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


def test_mariadb_training_survives_sigkill_of_pgolab_and_of_its_server(mariadb_tree):
    vdir = variant_dir(mariadb_tree, LABEL, sources.tree_digest(mariadb_tree.path))
    cmd = [sys.executable, "-m", "pgolab", "build", str(mariadb_tree.path), "--variant", "rel_pgo_use",
           "--label", LABEL, "--train", "mix", "--train-seconds", str(TRAIN_SECONDS)]
    launched = []

    # 1. pgolab is SIGKILLed mid-training: its server gets SIGTERM from the kernel and shuts down
    #    cleanly (its counters land in this build's own profile folder, which the re-run empties).
    proc = start_and_wait_for_training(cmd, vdir)
    launched.append(proc.pid)
    assert mariadbd_processes(vdir), "the instrumented server runs during training"
    proc.kill()
    proc.communicate()
    assert wait_until_gone(vdir) == [], "a server outlived pgolab killed during training"
    assert "train" not in phases_done(vdir)

    # 2. The instrumented server itself is SIGKILLed mid-training: pgolab stops with the cause and
    #    the server's error log tail, leaves nothing running, and keeps what earlier phases made.
    proc = start_and_wait_for_training(cmd, vdir)
    launched.append(proc.pid)
    (pid, _), = mariadbd_processes(vdir)
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode != 0, out + err
    said = " ".join(err.split())
    assert "mariadb server died (exit -9)" in said and "error log tail:" in said, err
    assert wait_until_gone(vdir) == []
    assert "train" not in phases_done(vdir)
    kept_log = sorted((vdir / "logs").glob("*error*"))
    assert kept_log, "the crashed server's error log is kept under logs/"

    # 3. The same command finishes: trains from an empty profile folder, merges, builds and uses it.
    rerun = subprocess.Popen(cmd + ["--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    launched.append(rerun.pid)
    out, err = rerun.communicate(timeout=3600)
    assert rerun.returncode == 0, out + err
    assert re.search(r"gen-build: compile instrumented build\s+\(up to date, skipped\)", err), \
        "the instrumented build is not redone"
    record = json.loads(out)[0]
    merge = record["profile"]["merge"]
    assert merge["raw_files"] > 100 and merge["sealed"]
    check = record["profile"]["check-profile"]
    assert check["with_profile"] > check["objects"] // 3, check
    assert record["smoke"] and "MariaDB" in record["smoke"]
    train_log = (vdir / "logs" / "train.log").read_text()
    last = train_log[train_log.rindex("training mix on mariadb"):]
    counters = dict(re.findall(r"(Com_\w+)=(\d+)", last))
    assert int(counters["Com_stmt_execute"]) >= 3 * int(counters["Com_stmt_prepare"]) > 0

    assert mariadbd_processes(vdir) == []
    assert scratch_of(launched) == [], "no scratch folder of the killed or finished runs is left"
