"""Section headers of ELF64 little-endian files (x86-64 objects and binaries): enough to tell
which sections a compiler wrote and how large a binary's code is, without binutils."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    executable: bool


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
        size, = struct.unpack_from("<Q", table, entry + 0x20)
        name = names[name_off:names.index(b"\0", name_off)].decode(errors="replace")
        out.append(Section(name, size, bool(flags & SHF_EXECINSTR)))
    return out


def section_names(path: Path) -> list[str]:
    return [s.name for s in sections(path)]


def code_bytes(path: Path) -> int:
    """Bytes of executable sections (.text, .text.hot, .plt, BOLT's .text.cold, ...)."""
    return sum(s.size for s in sections(path) if s.executable)
