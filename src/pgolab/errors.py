"""The one error type shown to users: what went wrong, where the log is, what to try."""

from __future__ import annotations

from pathlib import Path


class PgolabError(Exception):
    def __init__(self, message: str, *, hint: str | None = None, log: Path | None = None,
                 detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.log = log
        self.detail = detail

    def __str__(self) -> str:
        parts = [self.message]
        if self.detail:
            parts.append(self.detail.rstrip())
        if self.log:
            parts.append(f"log: {self.log}")
        if self.hint:
            parts.append(f"next: {self.hint}")
        return "\n".join(parts)


def from_os_error(exc: BaseException) -> PgolabError | None:
    """A full disk or an unwritable folder, anywhere in pgolab, as one line with the fix; None for
    anything else. Finished phases and stored samples are kept: each is written whole or not at all."""
    import errno
    import sqlite3
    if isinstance(exc, sqlite3.OperationalError) and "disk is full" in str(exc):
        return PgolabError("the disk is full (the result store could not be written)",
                           hint="free space, then run the same command again: stored results are kept")
    if not isinstance(exc, OSError):
        return None
    where = f" writing {exc.filename}" if exc.filename else ""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return PgolabError(f"the disk is full{where}",
                           hint="free space (df -h shows where), then run the same command again: "
                                "finished phases and stored results are kept")
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return PgolabError(f"cannot write {exc.filename or 'a file'}: {exc.strerror}",
                           hint="make pgolab's home writable, or point PGOLAB_HOME at a writable folder")
    return None
