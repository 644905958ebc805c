"""Section headers of ELF64 little-endian files (x86-64 objects and binaries): enough to tell
which sections a compiler wrote, how large a binary's code is and which shared libraries it
needs, without binutils."""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    name: str
    size: int
    executable: bool
    offset: int = 0
    loaded: bool = False     # SHF_ALLOC: part of the running image (not .symtab, .strtab, debug info)
    has_bytes: bool = True   # not SHT_NOBITS (.bss holds a size, no bytes)
    address: int = 0         # sh_addr
    kind: int = 0            # sh_type
    flags: int = 0           # sh_flags


SHF_ALLOC = 0x2
SHF_EXECINSTR = 0x4
SHT_NOBITS = 8


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
        name_off, kind = struct.unpack_from("<II", table, entry)
        flags, = struct.unpack_from("<Q", table, entry + 0x08)
        address, offset, size = struct.unpack_from("<QQQ", table, entry + 0x10)
        name = names[name_off:names.index(b"\0", name_off)].decode(errors="replace")
        out.append(Section(name, size, bool(flags & SHF_EXECINSTR), offset, bool(flags & SHF_ALLOC), kind != SHT_NOBITS,
                           address, kind, flags))
    return out


def section_names(path: Path) -> list[str]:
    return [s.name for s in sections(path)]


def code_bytes(path: Path) -> int:
    """Bytes of executable sections (.text, .text.hot, .plt, BOLT's .text.cold, ...)."""
    return sum(s.size for s in sections(path) if s.executable)


# The linker's hash of the whole output, symbol names included: not part of what the code is.
BUILD_ID_NOTE = ".note.gnu.build-id"


def loaded_digest(path: Path) -> str | None:
    """sha256 of what a binary runs: its entry point, its program headers and every section loaded into
    memory (name, address, type, flags, size, bytes), the build ID left out; None for a file with no
    loaded section pgolab can read. Two binaries with one such digest and two file digests differ in
    their symbol table, debug information or build ID alone: clang's ThinLTO names the hidden local
    functions it promotes after a hash of their module, whose source file path it keeps whatever
    -ffile-prefix-map says, so a tree at another path gives other names (and another build ID) around
    the same code. (Exported names are in .dynsym, which is loaded, so they count.)"""
    loaded = [s for s in sections(path) if s.loaded and s.name != BUILD_ID_NOTE]
    if not loaded:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        head = f.read(64)
        entry, phoff = struct.unpack_from("<QQ", head, 0x18)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        digest.update(struct.pack("<Q", entry) + f.read(phentsize * phnum))
        for s in loaded:
            digest.update(f"{s.name}\0{s.address}\0{s.kind}\0{s.flags}\0{s.size}\0".encode())
            if s.has_bytes:
                f.seek(s.offset)
                digest.update(f.read(s.size))
    return digest.hexdigest()


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
