"""Start the built server, ask it its version, stop it cleanly; a build with another malloc must
name that library for the loader; a build that asks for its code on huge pages (`_hugify`,
`_hugetext`) says how much of its running code the kernel put on them."""

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
    huge_pages: bool = False        # measure the running server's code on huge pages


def smoke_phase(ctx: SmokeContext) -> Phase:
    # (No input unless it measures huge pages: the smoke phases of builds made before keep their digests.)
    return Phase("smoke", "start the server, query it, stop it cleanly", {"huge_code": True} if ctx.huge_pages else None,
                 lambda: smoke(ctx))


def smoke(ctx: SmokeContext) -> dict:
    server = ctx.servers.serve("final", "smoke", ctx.runner("smoke"))
    try:
        with server:
            version = server.query(server.installation.version_sql(), what="version query")
            huge = huge_code_kib(Path(f"/proc/{server.pid}/smaps").read_text()) if ctx.huge_pages else None
    finally:
        ctx.servers.discard(server, "smoke")
    ctx.reporter.message(f"server answered: {version}")
    result: dict = {"version": version}
    if huge is not None:
        # Whether the kernel gives huge pages is the kernel's: file-backed text (BOLT's -hugify) needs
        # CONFIG_READ_ONLY_THP_FOR_FS, an anonymous copy (_hugetext) transparent huge pages not "never".
        ctx.reporter.message(f"code on huge pages: {huge} KiB" if huge else
                             "code on huge pages: none (this kernel put none of the server's code on huge "
                             "pages: file text needs CONFIG_READ_ONLY_THP_FOR_FS, an anonymous copy "
                             "transparent huge pages on, see /sys/kernel/mm/transparent_hugepage/enabled)")
        result["huge_code_kib"] = huge
    if ctx.allocator is None:
        return result
    needed = elf.needed_libraries(ctx.binary)
    linked = [n for n in needed if n.startswith(f"lib{ctx.allocator}.so")]
    if not linked:
        raise PgolabError(f"{ctx.binary} does not need lib{ctx.allocator} (it needs {', '.join(needed)})",
                          hint="the link dropped the allocator; see the build log's link line")
    ctx.reporter.message(f"malloc from {linked[0]}")
    return {**result, "allocator": linked[0]}


def huge_code_kib(smaps: str) -> int:
    """KiB of executable mappings on huge pages, from /proc/PID/smaps: file text mapped by a PMD
    (FilePmdMapped) or copied to anonymous huge pages (AnonHugePages)."""
    total, executable = 0, False
    for line in smaps.splitlines():
        fields = line.split()
        if len(fields) >= 2 and "-" in fields[0] and len(fields[1]) == 4:    # a mapping's header line
            executable = "x" in fields[1]
        elif executable and fields and fields[0] in ("FilePmdMapped:", "AnonHugePages:"):
            total += int(fields[1])
    return total
