"""Start the built server, ask it its version, stop it cleanly."""

from __future__ import annotations

from dataclasses import dataclass

from ..phases import Phase, Reporter
from .context import RunnerFactory, Serving


@dataclass
class SmokeContext:
    servers: Serving
    runner: RunnerFactory
    reporter: Reporter


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
    return {"version": version}
