"""Runs every external command through one place and logs it so a user can replay it.

Each call appends to a phase log: the exact argv (shell-quoted), cwd, the
environment variables it changed, its whole output, exit status and duration.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import paths
from .errors import PgolabError

TAIL_LINES = 40


def format_command(argv: Sequence[str], cwd: Path | None, env_changes: Mapping[str, str]) -> str:
    """The command as a line a user can paste into a shell."""
    env_part = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(env_changes.items()))
    cmd = " ".join(shlex.quote(str(a)) for a in argv)
    prefix = f"cd {shlex.quote(str(cwd))} && " if cwd else ""
    return f"{prefix}{env_part + ' ' if env_part else ''}{cmd}"


def as_user_kwargs(user: str | None) -> dict:
    """Popen arguments that drop to `user` (uid, its group, no supplementary groups)."""
    if not user:
        return {}
    import pwd
    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


@dataclass
class CommandResult:
    argv: list[str]
    returncode: int
    output: str
    seconds: float


@dataclass
class Runner:
    """Runs commands, appending everything to `log_path`."""

    log_path: Path
    on_line: Callable[[str], None] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def note(self, text: str) -> None:
        """Add a line to the log (e.g. a server started in the background)."""
        self._header(f"\n### {time.strftime('%Y-%m-%d %H:%M:%S')} {text}\n")

    def _header(self, text: str) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "a") as log:
            log.write(text)

    def run(self, argv: Sequence[str | os.PathLike], *, cwd: Path | None = None,
            env: Mapping[str, str] | None = None, check: bool = True,
            what: str | None = None, timeout: float | None = None,
            user: str | None = None, log_output: bool = True) -> CommandResult:
        """log_output=False keeps a long answer (a symbol table) out of the log: its line count is noted."""
        argv = [str(a) for a in argv]
        env_changes = {**self.extra_env, **(env or {})}
        full_env = {**os.environ, **env_changes}
        started = time.monotonic()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        as_user = f" (as user {user})" if user else ""
        self._header(f"\n### {stamp}{as_user} $ {format_command(argv, cwd, env_changes)}\n")
        chunks: list[str] = []
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    text=True, errors="replace", bufsize=1, **as_user_kwargs(user))
        except FileNotFoundError as exc:
            self._header(f"### not found: {argv[0]}\n")
            raise PgolabError(f"{what or 'command'}: program not found: {argv[0]}",
                              hint="run `pgolab doctor` to see which package provides it",
                              log=self.log_path) from exc
        try:
            # Line-buffered so that `tail -f` on a phase log follows a long build.
            with open(self.log_path, "a", buffering=1) as log:
                assert proc.stdout is not None
                for line in proc.stdout:
                    if log_output:
                        log.write(line)
                    chunks.append(line)
                    if self.on_line:
                        self.on_line(line.rstrip("\n"))
                    if timeout and time.monotonic() - started > timeout:
                        proc.kill()
                        break
            returncode = proc.wait()
        except BaseException:
            # Ctrl-C or an error: never leave the child running behind us.
            proc.kill()
            proc.wait()
            self._header("### interrupted\n")
            raise
        seconds = time.monotonic() - started
        if not log_output:
            self._header(f"### ({len(chunks)} lines of output, not logged)\n")
        self._header(f"### exit {returncode} after {seconds:.1f}s\n")
        result = CommandResult(argv, returncode, "".join(chunks), seconds)
        if check and returncode != 0:
            raise self.failure(result, what)
        return result

    def failure(self, result: CommandResult, what: str | None = None) -> PgolabError:
        """The error for a command that failed, with its last lines."""
        tail = result.output.splitlines(keepends=True)[-TAIL_LINES:]
        return PgolabError(
            f"{what or result.argv[0]} failed (exit {result.returncode})",
            detail="last lines:\n" + "".join(tail),
            log=self.log_path,
            hint="read the log above; fix the cause and run the same pgolab command again "
                 "(finished phases are kept)")


def home_runner(name: str) -> Runner:
    """A runner for commands that belong to no build or run, logging to <pgolab home>/logs/NAME.log."""
    return Runner(paths.home() / "logs" / f"{name}.log")
