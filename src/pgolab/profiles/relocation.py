"""A clang profile moved to another source tree: its static functions are named by their file.

clang names a function of internal linkage `<file>:<function>` in its profile (LLVM 18 on:
`<file>;<function>`), `<file>` spelled as the compiler was given the translation unit: absolute in
PostgreSQL's build (whatever -ffile-prefix-map says), relative to the build folder in CMake's. A
profile trained on a tree at one path, read by a build of a tree at another (a stale profile, or one
exported on a machine whose pgolab home differs), finds none of those functions: no warning, no
counts. Measured on PostgreSQL 15.18: 4,630 of the profile's 14,459 functions are named so.

The pure part is here: which prefix of the names is the training tree, what it becomes, and which
names point at files the new tree lacks. The profile tool applies it to the profile's text form.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INCLUDED_C = re.compile(r'^\s*#\s*include\s+"([^"]+\.c)"', re.M)


@dataclass(frozen=True)
class Relocation:
    """How a profile's file-qualified names map onto a build's tree."""
    old: str = ""          # the training tree as the names spell it ("" when no name has a file)
    new: str = ""          # what that prefix becomes; equal to old when nothing moves
    names: int = 0         # names by a file under `old` (functions of internal linkage of the tree)
    absent: int = 0        # of them, in a file the new tree lacks, or (C) no longer spelled there

    @property
    def moves(self) -> bool:
        return bool(self.old) and self.old != self.new

    @property
    def unread(self) -> int:
        """Names a compile of the tree reads no counts for: all of them while they still spell another
        tree (an import that could not move them), else those no longer in the tree."""
        return self.names if self.moves else self.absent

    def describe(self) -> str:
        if not self.names:
            return "no function named by its file"
        moved = f"{self.names} names by file moved from {self.old} to {self.new}" if self.moves else \
            f"{self.names} names by file, in place"
        return moved + (f"; {self.absent} are no longer in this tree" if self.absent else "")

    def as_dict(self) -> dict:
        return asdict(self)


def file_of(name: str) -> str | None:
    """The file part of a profile name `<file>;<function>` (LLVM 18 on) or `<file>:<function>` (before):
    a C or mangled C++ name has neither."""
    path, sep, _ = name.rpartition(";") if ";" in name else name.rpartition(":")
    return path if sep and path else None


def _candidates(file: str, tree: Path) -> list[tuple[str, str]]:
    """(prefix, rest) splits of `file` whose rest is a file of `tree`, the longest rest first."""
    parts = PurePosixPath(file).parts
    found = []
    for k in range(1 if parts and parts[0] == "/" else 0, len(parts)):
        rest = PurePosixPath(*parts[k:])
        if rest.parts and ".." not in rest.parts and (tree / rest).is_file():
            found.append((str(PurePosixPath(*parts[:k])) if k else "", str(rest)))
    return found


def _respelled(old: str, tree: Path, build_dir: Path | None) -> str:
    """What prefix `old` becomes for `tree`: an absolute one is the tree's path; a relative one is the
    tree's path from the build folder (where CMake's Ninja runs the compiler), or without that folder
    its last part renamed when both trees sit in one folder of the same name; otherwise it stays."""
    if PurePosixPath(old).is_absolute():
        return str(tree)
    if build_dir is not None:
        return os.path.relpath(tree, build_dir)
    parts = PurePosixPath(old).parts
    if len(parts) >= 2 and parts[-2] == tree.parent.name:
        return str(PurePosixPath(*parts[:-1], tree.name))
    return old


class _Spelled:
    """Whether a C function is still spelled in its file of the tree, in a .c file that file includes,
    or in one of the tree's headers (a static inline function of a header is named by each file that
    uses it). Read lazily: most names are found in their own file."""

    def __init__(self, tree: Path):
        self.tree = tree
        self.files: dict[Path, tuple[set[str], list[str]] | None] = {}    # words, included .c files
        self.headers: set[str] | None = None

    def _of(self, path: Path) -> tuple[set[str], list[str]] | None:
        if path not in self.files:
            text = path.read_text(errors="replace") if path.is_file() else None
            self.files[path] = None if text is None else (set(_IDENTIFIER.findall(text)), _INCLUDED_C.findall(text))
        return self.files[path]

    def present(self, rest: str, function: str) -> bool:
        path = self.tree / rest
        read = self._of(path)
        if read is None:
            return False
        own, included_files = read
        # Mangled C++ names and what the compiler makes (__cxx_global_var_init, __tls_init) are not
        # spelled in any source: only a plain identifier is looked for.
        if function.startswith(("_Z", "__")) or not _IDENTIFIER.fullmatch(function) or function in own:
            return True
        for included in included_files:
            other = self._of(path.parent / included)
            if other is not None and function in other[0]:
                return True
        if self.headers is None:
            self.headers = set()
            for header in self.tree.rglob("*.h"):
                self.headers.update(_IDENTIFIER.findall(header.read_text(errors="replace")))
        return function in self.headers


def plan(names: list[str], tree: Path, recorded_root: str = "", build_dir: Path | None = None) -> Relocation:
    """Where the training tree is in `names` (the recorded root when the names start with it, else
    the prefix under which most of their files exist in `tree`), and what it becomes for a build of
    `tree` in `build_dir`. A name made by a macro is not found, so counted absent: 11 of the 14,459 of
    PostgreSQL 15's profile on its own tree."""
    files = sorted({f for f in map(file_of, names) if f})
    if not files:
        return Relocation()
    root = recorded_root.rstrip("/")
    if root and any(f.startswith(root + "/") for f in files):
        old = root
    else:
        votes: Counter = Counter()
        for f in files:
            found = _candidates(f, tree)
            if found:
                votes[found[0][0]] += 1
        if not votes:
            return Relocation()
        old = votes.most_common(1)[0][0]
    if not old:      # the names are already relative to the tree's root
        return Relocation()
    inside = old + "/"
    under = [(f[len(inside):], n[len(f) + 1:]) for n, f in ((n, file_of(n)) for n in names)
             if f and f.startswith(inside)]
    spelled = _Spelled(tree)
    absent = sum(1 for rest, function in under if not spelled.present(rest, function))
    return Relocation(old, _respelled(old, tree, build_dir), len(under), absent)


def rewrite(text: str, relocation: Relocation) -> str:
    """A profile's text form with every name under the old prefix (a function's, an indirect call
    target's `<name>:<count>`, or one of a temporal trace's comma-separated names) moved to the new
    one; counters and comments are untouched."""
    if not relocation.moves:
        return text
    old = relocation.old + "/"
    new = relocation.new + "/"

    def moved(name: str) -> str:
        return new + name[len(old):] if name.startswith(old) else name

    # (Mangled and file-qualified names hold no comma: a line with one is a trace.)
    return "\n".join(",".join(map(moved, line.split(","))) if "," in line and not line.startswith("#")
                     else moved(line) for line in text.split("\n"))
