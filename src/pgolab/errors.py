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
