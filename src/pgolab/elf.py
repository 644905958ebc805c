"""Section headers of ELF64 little-endian files (x86-64 objects and binaries): enough to tell
which sections a compiler wrote, how large a binary's code is and which shared libraries it
needs, without binutils."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    executable: bool
    offset: int = 0


SHF_EXECINSTR = 0x4


def sections(path: Path) -> list[Section]:
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return []
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        if not shoff or shstrndx >= shnum:
            return []
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        str_off, str_size = struct.unpack_from("<QQ", table, shstrndx * shentsize + 0x18)
        f.seek(str_off)
        names = f.read(str_size)
    out = []
    for i in range(shnum):
        entry = i * shentsize
        name_off, = struct.unpack_from("<I", table, entry)
        flags, = struct.unpack_from("<Q", table, entry + 0x08)
        offset, size = struct.unpack_from("<QQ", table, entry + 0x18)
        name = names[name_off:names.index(b"\0", name_off)].decode(errors="replace")
        out.append(Section(name, size, bool(flags & SHF_EXECINSTR), offset))
    return out


def section_names(path: Path) -> list[str]:
    return [s.name for s in sections(path)]


def code_bytes(path: Path) -> int:
    """Bytes of executable sections (.text, .text.hot, .plt, BOLT's .text.cold, ...)."""
    return sum(s.size for s in sections(path) if s.executable)


DT_NEEDED = 1


def needed_libraries(path: Path) -> list[str]:
    """The shared libraries the binary names (DT_NEEDED of .dynamic, in order): what the loader maps."""
    by_name = {s.name: s for s in sections(path)}
    dynamic, strings = by_name.get(".dynamic"), by_name.get(".dynstr")
    if dynamic is None or strings is None:
        return []
    with open(path, "rb") as f:
        f.seek(dynamic.offset)
        entries = f.read(dynamic.size)
        f.seek(strings.offset)
        names = f.read(strings.size)
    out = []
    for i in range(0, len(entries) - 15, 16):
        tag, value = struct.unpack_from("<qQ", entries, i)
        if tag == 0:
            break
        if tag == DT_NEEDED:
            out.append(names[value:names.index(b"\0", value)].decode(errors="replace"))
    return out


def comment(path: Path) -> str:
    """The .comment section (the compilers and their versions, NUL-separated), as text."""
    return section_text(path, ".comment")


def section_text(path: Path, name: str) -> str:
    """A section's bytes as text, NULs as line breaks ("" when the binary has no such section):
    .comment, or the command line llvm-bolt leaves in .note.bolt_info."""
    found = next((s for s in sections(path) if s.name == name), None)
    if found is None:
        return ""
    with open(path, "rb") as f:
        f.seek(found.offset)
        return f.read(found.size).replace(b"\0", b"\n").decode(errors="replace")
