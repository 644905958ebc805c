"""Start the built server, ask it its version, stop it cleanly; a build with another malloc must
name that library for the loader."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import elf
from ..errors import PgolabError
from ..phases import Phase, Reporter
from .context import RunnerFactory, Serving


@dataclass
class SmokeContext:
    servers: Serving
    runner: RunnerFactory
    reporter: Reporter
    binary: Path | None = None
    allocator: str | None = None    # the library the binary must need (the allocator axis)


def smoke_phase(ctx: SmokeContext) -> Phase:
    return Phase("smoke", "start the server, query it, stop it cleanly", None, lambda: smoke(ctx))


def smoke(ctx: SmokeContext) -> dict:
    server = ctx.servers.serve("final", "smoke", ctx.runner("smoke"))
    try:
        with server:
            version = server.query(server.installation.version_sql(), what="version query")
    finally:
        ctx.servers.discard(server, "smoke")
    ctx.reporter.message(f"server answered: {version}")
    if ctx.allocator is None:
        return {"version": version}
    needed = elf.needed_libraries(ctx.binary)
    linked = [n for n in needed if n.startswith(f"lib{ctx.allocator}.so")]
    if not linked:
        raise PgolabError(f"{ctx.binary} does not need lib{ctx.allocator} (it needs {', '.join(needed)})",
                          hint="the link dropped the allocator; see the build log's link line")
    ctx.reporter.message(f"malloc from {linked[0]}")
    return {"version": version, "allocator": linked[0]}
