"""What a killed pgolab leaves behind is found and handled by the next run (fast parts)."""

import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from pgolab import processes, profiles, scratch
from pgolab.errors import PgolabError
from pgolab.variants import parse
from pgolab.runner import Runner
from pgolab.server import stop_leftovers
from pgolab.host import Host
from pgolab.measurement import BenchOptions

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]


@pytest.fixture
def short_home(monkeypatch):
    """A pgolab home short enough for sockets in its scratch folders (pytest's tmp_path is not)."""
    home = Path(tempfile.mkdtemp(prefix="pgh-", dir="/tmp"))
    monkeypatch.setenv("PGOLAB_HOME", str(home))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def dead_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()


def test_scratch_folders_of_dead_processes_are_swept_and_live_ones_kept(short_home):
    mine = scratch.make("train")
    assert mine.parent == short_home / "scratch" and mine.name.startswith(f"{os.getpid()}-train-")
    orphan = short_home / "scratch" / f"{dead_pid()}-bench-abcdef"
    orphan.mkdir()
    (orphan / "server.pid").write_text("1")
    assert orphan in scratch.sweep()
    assert mine.exists() and not orphan.exists()


def test_a_folder_a_live_server_uses_is_not_swept(short_home):
    folder = short_home / "scratch" / f"{dead_pid()}-train-abcdef"
    folder.mkdir(parents=True)
    # A stand-in server whose command line names a file in the folder, as --socket=DIR/mysqld.sock does.
    server = subprocess.Popen([*SLEEPER, f"--socket={folder}/mysqld.sock"])
    time.sleep(0.2)
    try:
        assert processes.servers_using(folder) == [server.pid]
        assert folder not in scratch.sweep() and folder.exists()
    finally:
        server.kill()
        server.wait()
    assert folder in scratch.sweep()


def test_a_sibling_path_is_not_mistaken_for_the_data_directory(tmp_path):
    other = subprocess.Popen([*SLEEPER, f"{tmp_path}/data2"])
    try:
        assert processes.servers_using(tmp_path / "data") == []
    finally:
        other.kill()
        other.wait()


def test_a_server_left_on_a_data_directory_is_stopped_before_it_is_touched(tmp_path):
    datadir = tmp_path / "data"
    datadir.mkdir()
    # Stands in for an orphaned server: exits on SIGTERM, as both servers' clean shutdown does.
    orphan = subprocess.Popen([*SLEEPER, f"--datadir={datadir}"])
    time.sleep(0.2)
    runner = Runner(tmp_path / "log.txt")
    stop_leftovers(datadir, runner, timeout=20)
    assert orphan.poll() is not None
    assert "left running" in (tmp_path / "log.txt").read_text()


def test_a_server_that_ignores_sigterm_is_reported_with_its_pid(tmp_path):
    datadir = tmp_path / "data"
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                                 "signal.SIG_IGN); print('ready', flush=True); time.sleep(60)", "-D", str(datadir)],
                                stdout=subprocess.PIPE, text=True)
    stubborn.stdout.readline()
    try:
        with pytest.raises(PgolabError, match=str(stubborn.pid)) as err:
            stop_leftovers(datadir, Runner(tmp_path / "log.txt"), timeout=1)
        assert f"kill {stubborn.pid}" in err.value.hint
    finally:
        stubborn.kill()
        stubborn.wait()


def test_counters_written_after_the_merge_are_refused(tmp_path):
    gcc = profiles.GccProfile()
    (tmp_path / "a.gcda").write_bytes(b"counts")
    profiles.seal(tmp_path, gcc)
    profiles.require_sealed(tmp_path, gcc)            # unchanged: accepted
    time.sleep(0.01)
    (tmp_path / "a.gcda").write_bytes(b"counts and more")
    with pytest.raises(PgolabError, match="after its profile was merged"):
        profiles.require_sealed(tmp_path, gcc)
    (tmp_path / "a.gcda").write_bytes(b"counts")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.gcda").write_bytes(b"x")   # a new file counts too
    with pytest.raises(PgolabError, match="after its profile was merged"):
        profiles.require_sealed(tmp_path, gcc)


def test_a_profile_merged_before_seals_existed_is_sealed_as_it_is(tmp_path):
    clang = profiles.ClangProfile(None)
    (tmp_path / "raw-1.profraw").write_bytes(b"x")
    profiles.require_sealed(tmp_path, clang)
    assert (tmp_path / profiles.SEAL).exists()


def test_commands_left_working_in_a_build_are_found_but_not_this_process(tmp_path):
    build = tmp_path / "build"
    (build / "src").mkdir(parents=True)
    left = subprocess.Popen(SLEEPER, cwd=build / "src")      # e.g. a make a killed pgolab started
    elsewhere = subprocess.Popen(SLEEPER, cwd=tmp_path)
    try:
        time.sleep(0.2)
        assert processes.processes_under(build) == [left.pid]
        os.chdir(build)
        assert os.getpid() not in processes.processes_under(build)
    finally:
        os.chdir("/")
        for proc in (left, elsewhere):
            proc.kill()
            proc.wait()


def test_a_full_disk_and_an_unwritable_home_are_one_line_with_the_fix():
    import errno
    import sqlite3

    from pgolab.errors import from_os_error
    full = from_os_error(OSError(errno.ENOSPC, "No space left on device", "/var/cache/pgolab/builds/x.o"))
    assert "disk is full writing /var/cache/pgolab/builds/x.o" in str(full) and "df -h" in full.hint
    readonly = from_os_error(OSError(errno.EROFS, "Read-only file system", "/var/cache/pgolab/runs"))
    assert "cannot write /var/cache/pgolab/runs" in str(readonly) and "PGOLAB_HOME" in readonly.hint
    assert "disk is full" in str(from_os_error(sqlite3.OperationalError("database or disk is full")))
    assert from_os_error(OSError(errno.ENOENT, "No such file")) is None
    assert from_os_error(ValueError("x")) is None


def test_a_killed_runs_compiler_in_a_build_folder_is_stopped_before_the_rerun(tmp_path, monkeypatch):
    """Pipeline.stop_leftover_processes on a stand-in for a make a killed pgolab left in its folder."""
    from pgolab.build import Pipeline
    folder = tmp_path / "build"
    (folder / "final" / "build").mkdir(parents=True)
    left = subprocess.Popen(SLEEPER, cwd=folder / "final" / "build")
    time.sleep(0.2)
    pipeline = Pipeline.__new__(Pipeline)          # only the folder and its logs are needed here
    pipeline.dir, pipeline.logs = folder, folder / "logs"
    pipeline.variant = parse("rel_o2nofp")
    pipeline.stop_leftover_processes(grace=5)
    assert left.poll() is not None
    assert "left running" in (folder / "logs" / "leftovers.log").read_text()


@pytest.fixture
def tiny_disk(tmp_path):
    """A 2 MiB tmpfs: a real file system that fills up (needs root to mount)."""
    import subprocess
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    yield mount
    subprocess.run(["umount", "--lazy", str(mount)], check=True)


def test_a_full_disk_during_the_store_transaction_loses_nothing_stored(tiny_disk):
    """Samples are added until the disk is full: the failing one is not stored at all, every earlier
    one is intact, the error is the one-line cause and fix, and after freeing space the run goes on."""
    import sqlite3
    from pgolab.errors import from_os_error
    from pgolab.measurement import Sample, Step
    from pgolab.store import Store
    filler = tiny_disk / "filler"
    filler.write_bytes(b"x" * (1024 * 1024))
    store = Store(tiny_disk / "results.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="a", suite="quick", options=BenchOptions(), host=Host.this(),
                                           identity={"x": 1}, command="test")
    stored, failure = 0, None
    for block in range(1, 10_000):
        sample = Sample(Step("qps", "point-1/point-query", 1, block, 1, "a"), {"qps": 1000.0 + block}, 3.0,
                        output="sysbench output " * 2000)
        try:
            store.add(run_id, sample, "point-1")
            stored += 1
        except (OSError, sqlite3.OperationalError) as exc:
            failure = exc
            break
    assert failure is not None and stored > 0
    message = from_os_error(failure)
    assert message is not None and "disk is full" in str(message) and "stored results are kept" in message.hint
    store.db.close()

    filler.unlink()   # the user frees space and runs the same command again
    again = Store(tiny_disk / "results.sqlite")
    assert again.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    blocks = [s.step.block for s in again.samples(run_id, "qps")]
    assert blocks == list(range(1, stored + 1)), "a sample was lost, duplicated or half-written"
    again.add(run_id, Sample(Step("qps", "point-1/point-query", 1, stored + 1, 1, "a"), {"qps": 1.0}, 3.0), "point-1")
    assert len(again.samples(run_id, "qps")) == stored + 1
    again.db.close()


def test_the_module_that_starts_servers_loads_ctypes_before_any_child_runs():
    """The child sets its parent-death signal through ctypes after it may have dropped to the server's
    user, who cannot read this Python's library folder: the import must already be done. A fresh
    interpreter, as a pgolab command is."""
    out = subprocess.run([sys.executable, "-c", "import sys, pgolab.server; print('ctypes' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


def test_a_child_whose_starter_died_before_it_asked_for_the_death_signal_ends_instead_of_running_on():
    """The kernel sends the parent-death signal only to a child that asked before its parent died: a
    child whose parent is not the one that started it (killed between fork and prctl) must end."""
    from pgolab.server import die_with_parent
    # The child prints the signal it will get when its parent dies (PR_GET_PDEATHSIG).
    ran = [sys.executable, "-c", "import ctypes; s = ctypes.c_int(); "
                                 "ctypes.CDLL(None).prctl(2, ctypes.byref(s)); print(s.value)"]
    orphan = subprocess.run(ran, preexec_fn=functools.partial(die_with_parent, int(dead_pid())),
                            capture_output=True, text=True)
    assert (orphan.returncode, orphan.stdout) == (1, "")
    child = subprocess.run(ran, preexec_fn=functools.partial(die_with_parent, os.getpid()),
                           capture_output=True, text=True)
    assert (child.returncode, child.stdout) == (0, f"{int(signal.SIGTERM)}\n"), child.stderr
