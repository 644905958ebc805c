"""Server lifecycle on Debian's packaged mariadbd: initialise, start, query, clean stop."""

import os
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from pgolab.errors import PgolabError
from pgolab.runner import Runner
from pgolab.server import ServerProcess, initialize_datadir
from pgolab.targets import MariaDBInstallation

from conftest import need

pytestmark = pytest.mark.slow   # every test initialises and starts a real mariadbd (about 22 s in all)


@pytest.fixture
def mariadb(tmp_path):
    need("mariadbd")
    installation = MariaDBInstallation.system(Path("/usr/sbin/mariadbd"))
    runner = Runner(tmp_path / "lifecycle.log")
    datadir = tmp_path / "data"
    initialize_datadir(installation, datadir, runner)
    rundir = Path(tempfile.mkdtemp(prefix="pgolab-test-"))
    yield installation, datadir, rundir, runner


def server_pids(datadir: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-f", "--", f"--datadir={datadir}"], capture_output=True, text=True).stdout
    return out.split()


def test_initialise_start_query_clean_stop(mariadb):
    installation, datadir, rundir, runner = mariadb
    server = ServerProcess(installation, datadir, rundir, runner)
    with server:
        assert server.query("SELECT 1+1") == "2"
        version = server.query(installation.version_sql())
        assert "MariaDB" in version
        # No network listener: the server was started with --skip-networking.
        assert server.query("SELECT @@skip_networking") == "1"
    assert server.proc.returncode == 0, "a clean shutdown exits 0 (profiles are written only then)"
    assert not installation.socket(rundir).exists(), "no socket left behind"
    assert not (rundir / "server.pid").exists()
    assert server_pids(datadir) == []
    assert "Shutdown complete" in installation.error_log(rundir).read_text()


def test_initialising_twice_reuses_the_data_directory(mariadb):
    installation, datadir, rundir, runner = mariadb
    marker = datadir.parent / "data.initialized"
    stamp = marker.stat().st_mtime_ns
    initialize_datadir(installation, datadir, runner)
    assert marker.stat().st_mtime_ns == stamp


def test_a_server_that_will_not_start_reports_its_error_log(mariadb):
    installation, datadir, rundir, runner = mariadb
    server = ServerProcess(installation, datadir, rundir, runner, options=["--innodb-no-such-option=1"])
    with pytest.raises(PgolabError) as err:
        server.start(timeout=60)
    text = str(err.value)
    assert "exited during start-up" in text
    assert "innodb-no-such-option" in text, "the error log tail names the cause"
    assert server_pids(datadir) == []


def test_a_crash_is_reported_with_the_error_log_and_nothing_is_left(mariadb):
    installation, datadir, rundir, runner = mariadb
    server = ServerProcess(installation, datadir, rundir, runner)
    server.start()
    try:
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        with pytest.raises(PgolabError, match="server died") as err:
            server.query("SELECT 1")
        assert "error log tail" in str(err.value)
    finally:
        server.kill()
    assert not installation.socket(rundir).exists()
    assert server_pids(datadir) == []


def test_a_server_does_not_outlive_a_killed_pgolab(mariadb):
    """SIGKILL of the process that started the server: the kernel sends the server SIGTERM
    (PR_SET_PDEATHSIG), and it shuts down cleanly instead of running on as an orphan."""
    import sys
    import time
    installation, datadir, rundir, runner = mariadb
    script = (
        "import sys, time; from pathlib import Path; from pgolab.runner import Runner;"
        "from pgolab.server import ServerProcess; from pgolab.targets import MariaDBInstallation;"
        f"s = ServerProcess(MariaDBInstallation.system(), Path({str(datadir)!r}), Path({str(rundir)!r}),"
        f" Runner(Path({str(runner.log_path)!r}))); s.start(); print(s.proc.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    assert server_pids(datadir)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 120
    while server_pids(datadir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not server_pids(datadir), f"server {pid} outlived its killed parent"
    assert "Shutdown complete" in (rundir / "error.log").read_text()
