"""Server processes: initialise a data directory, start, wait for ready, query, stop cleanly.

Profiles are written only when the server exits normally, so stopping always
goes through the server's own shutdown and waits for the process and its exit
status; a forced kill is the last resort and is reported as such.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import PgolabError
from .runner import Runner, as_user_kwargs, format_command
from .paths import chown_tree
from .processes import servers_using, signal_and_wait

LOG_TAIL_LINES = 40
_LIVE: set["ServerProcess"] = set()


# Loaded and looked up here, not in the child: the child may already run as the unprivileged server
# user, who cannot read this Python's library folder (seen: every PostgreSQL start failed "in
# preexec_fn" when ctypes was first imported there), and dlopen after fork in a process with threads
# can deadlock.
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In the child before exec: the kernel sends SIGTERM (a clean shutdown, so profiles are still
    written) when the pgolab process that started the server dies, even by SIGKILL. A parent that
    died between fork and this call sends nothing: the child, reparented by then, ends at once (seen
    in CI: a PostgreSQL server outlived a pgolab killed just after "start server")."""
    if _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"(no log at {path})"


def stop_leftovers(path: Path, runner: Runner, timeout: float = 120) -> None:
    """Servers that a killed pgolab left running on `path` (a data directory) are shut down cleanly
    before anything touches it: SIGTERM is a clean shutdown for both servers (an instrumented one
    writes its counters now, before any phase reads them); one that will not stop is reported."""
    pids = servers_using(path)
    if not pids:
        return
    runner.note(f"servers left running on {path} by an earlier run: pids {pids}; sending SIGTERM")
    alive = signal_and_wait(pids, signal.SIGTERM, timeout)
    if alive:
        raise PgolabError(f"server processes {alive} still run on {path} after SIGTERM",
                          hint=f"stop them (kill {' '.join(map(str, alive))}) and run the same command again")


def initialize_datadir(installation, datadir: Path, runner: Runner, env: dict | None = None) -> None:
    """A fresh data directory (an unfinished one from an interrupted run is replaced)."""
    datadir = datadir.absolute()
    stop_leftovers(datadir, runner)
    marker = datadir.parent / (datadir.name + ".initialized")
    if marker.exists() and datadir.is_dir():
        return
    shutil.rmtree(datadir, ignore_errors=True)
    datadir.parent.mkdir(parents=True, exist_ok=True)
    if installation.run_as:
        datadir.mkdir(mode=0o700)
        chown_tree(datadir, installation.run_as)
    # A private scratch directory: the bootstrap's temporary tables vanished from a shared /tmp
    # here once (mariadb-install-db: "Unknown table 'mysql.tmp_proxies_priv'").
    scratch = datadir.parent / (datadir.name + ".tmp")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    if installation.run_as:
        chown_tree(scratch, installation.run_as)
    for cmd in installation.init_commands(datadir, scratch):
        runner.run(cmd.argv, cwd=cmd.cwd or datadir.parent, env={**cmd.env, **(env or {})}, what=cmd.what,
                   user=installation.run_as)
    shutil.rmtree(scratch, ignore_errors=True)
    marker.touch()


@dataclass(eq=False)
class ServerProcess:
    installation: object
    datadir: Path
    rundir: Path
    runner: Runner
    options: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    config: Path | None = None        # the user's server config file, if any
    wrapper: list[str] = field(default_factory=list)   # runs the server under it (taskset, valgrind)
    proc: subprocess.Popen | None = None

    def __post_init__(self):
        # No environment of its own is an empty one: its start line and every command it runs read it.
        self.env = dict(self.env or {})

    @property
    def error_log(self) -> Path:
        return self.installation.error_log(self.rundir)

    def start(self, timeout: float = 180) -> None:
        self.rundir.mkdir(parents=True, exist_ok=True)
        stop_leftovers(self.datadir.absolute(), self.runner)
        self._remove_leftovers()
        if self.installation.run_as:
            chown_tree(self.rundir, self.installation.run_as)
        argv = [*self.wrapper, *self.installation.start_argv(self.datadir, self.rundir, self.options, self.config)]
        cwd = self.datadir.parent
        as_user = f" (as user {self.installation.run_as})" if self.installation.run_as else ""
        self.runner.note(f"start server{as_user}: {format_command(argv, cwd, self.env)}")
        out = open(self.rundir / "server.out", "ab")
        err = open(self.error_log, "ab") if self.installation.logs_to_stderr else subprocess.STDOUT
        self.proc = subprocess.Popen(argv, stdout=out, stderr=err,
                                     stdin=subprocess.DEVNULL, cwd=cwd,
                                     env={**os.environ, **self.env}, start_new_session=True,
                                     preexec_fn=functools.partial(die_with_parent, os.getpid()),
                                     **as_user_kwargs(self.installation.run_as))
        _LIVE.add(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                _LIVE.discard(self)
                raise PgolabError(f"{self.installation.server} server exited during start-up "
                                  f"(exit {self.proc.returncode})",
                                  detail=f"error log tail:\n{tail(self.error_log)}\n{tail(self.rundir / 'server.out', 10)}",
                                  log=self.error_log, hint="fix the cause shown in the error log and run again")
            if self.installation.socket(self.rundir).exists():
                result = self.runner.run(self.installation.client_argv(self.rundir, "SELECT 1"), check=False,
                                         what="readiness check", env=self.env,
                                         user=self.installation.run_as, cwd=self.rundir)
                if result.returncode == 0:
                    return
            time.sleep(0.5)
        self.kill()
        raise PgolabError(f"{self.installation.server} server not ready after {timeout:.0f}s",
                          detail=f"error log tail:\n{tail(self.error_log)}", log=self.error_log,
                          hint="the server was stopped; look at the error log")

    def query(self, sql: str, database: str | None = None, what: str = "query") -> str:
        self.check_alive()
        result = self.runner.run(self.installation.client_argv(self.rundir, sql, database), what=what,
                                 check=False, env=self.env, user=self.installation.run_as, cwd=self.rundir)
        if result.returncode != 0:
            self.check_alive()
            raise PgolabError(f"{what} failed: {sql[:80]}", detail=result.output[-2000:], log=self.runner.log_path)
        return result.output.strip()

    def ensure_database(self, name: str) -> None:
        if not self.query(self.installation.database_exists_sql(name), what=f"look for database {name}"):
            self.query(self.installation.create_database_sql(name), what=f"create database {name}")

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running() else None

    def check_alive(self) -> None:
        """Report a crashed server with its error log."""
        if self.proc is not None and self.proc.poll() is not None:
            code = self.proc.returncode
            _LIVE.discard(self)
            raise PgolabError(f"{self.installation.server} server died (exit {code})",
                              detail=f"error log tail:\n{tail(self.error_log)}", log=self.error_log,
                              hint="a crash in an instrumented build writes no profile; fix the cause and run again")

    def stop(self, timeout: float = 300) -> int:
        """Clean shutdown through the server's own command; returns its exit status."""
        if self.proc is None or self.proc.poll() is not None:
            _LIVE.discard(self)
            return self.proc.returncode if self.proc else 0
        argv = self.installation.shutdown_argv(self.rundir, self.datadir)
        # The same environment as the server: an instrumented client (psql, pg_ctl) then writes
        # its profile where the server's goes, not into a directory compiled into it.
        self.runner.run(argv, check=False, what="shutdown", user=self.installation.run_as, env=self.env,
                        cwd=self.rundir)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            # SIGTERM is still a normal shutdown for both servers, so profiles get written.
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise PgolabError("server did not stop; killed it (its profile is lost)",
                                  detail=tail(self.error_log), log=self.error_log)
        _LIVE.discard(self)
        self._remove_leftovers()
        if code != 0:
            raise PgolabError(f"server exited with status {code} on shutdown",
                              detail=f"error log tail:\n{tail(self.error_log)}", log=self.error_log,
                              hint="an unclean exit may not write the profile; look at the error log")
        return code

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        _LIVE.discard(self)
        self._remove_leftovers()

    def _remove_leftovers(self) -> None:
        for name in ("mysqld.sock", "mysqld.sock.lock", "server.pid"):
            (self.rundir / name).unlink(missing_ok=True)
        sock = self.installation.socket(self.rundir)
        sock.unlink(missing_ok=True)
        Path(str(sock) + ".lock").unlink(missing_ok=True)

    def __enter__(self) -> "ServerProcess":
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.stop()
            return
        # On an error or Ctrl-C, still try a clean stop (it keeps the profile), then kill.
        try:
            self.stop(timeout=60)
        except BaseException:
            self.kill()


def stop_all() -> None:
    """Leave no server behind (called on exit and on SIGTERM)."""
    for server in list(_LIVE):
        try:
            server.stop(timeout=30)
        except BaseException:
            server.kill()
