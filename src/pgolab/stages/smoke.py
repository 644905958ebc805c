"""Start the built server, ask it its version, stop it cleanly."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..phases import Phase

if TYPE_CHECKING:
    from ..build import Pipeline


def smoke_phase(p: "Pipeline") -> Phase:
    return Phase("smoke", "start the server, query it, stop it cleanly", None, lambda: smoke(p))


def smoke(p: "Pipeline") -> dict:
    server = p.serve("final", "smoke", p.runner("smoke"))
    try:
        with server:
            version = server.query(server.installation.version_sql(), what="version query")
    finally:
        p.discard(server, "smoke")
    p.reporter.message(f"server answered: {version}")
    return {"version": version}
