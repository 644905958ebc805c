"""A clang profile moved to another source tree: its static functions are named by their file.

clang names a function of internal linkage `<file>:<function>` in its profile, `<file>` spelled as
the compiler was given the translation unit: absolute in PostgreSQL's build, relative to the build
folder in CMake's. A profile trained on a tree at one path, read by a build of a tree at another
(a stale profile, or one exported on a machine whose pgolab home differs), finds none of those
functions: no warning, no counts. Measured on PostgreSQL 15.18: 4,630 of the profile's 14,459
functions are named so.

The pure part is here: which prefix of the names is the training tree, what it becomes, and which
names point at files the new tree lacks. The profile tool applies it to the profile's text form.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Relocation:
    """How a profile's file-qualified names map onto a build's tree."""
    old: str = ""          # the training tree as the names spell it ("" when no name has a file)
    new: str = ""          # what that prefix becomes; equal to old when nothing moves
    names: int = 0         # file-qualified names (functions of internal linkage)
    absent: int = 0        # of them under `old`, in a file the new tree lacks, or (C) no longer in it

    @property
    def moves(self) -> bool:
        return bool(self.old) and self.old != self.new

    def describe(self) -> str:
        if not self.names:
            return "no function named by its file"
        moved = f"{self.names} names by file moved from {self.old} to {self.new}" if self.moves else \
            f"{self.names} names by file, in place"
        return moved + (f"; {self.absent} are no longer in this tree" if self.absent else "")

    def as_dict(self) -> dict:
        return asdict(self)


def file_of(name: str) -> str | None:
    """The file part of a profile name `<file>:<function>` (a C or mangled C++ name has no ':')."""
    path, sep, _ = name.rpartition(":")
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


def _respelled(old: str, tree: Path) -> str:
    """What prefix `old` becomes for `tree`: an absolute one is the tree's path; a relative one
    (from the build folder) keeps its way up and changes only its last folder, which holds when both
    trees sit in one folder of the same name, as pgolab's own sources do; otherwise it stays."""
    if PurePosixPath(old).is_absolute():
        return str(tree)
    parts = PurePosixPath(old).parts
    if len(parts) >= 2 and parts[-2] == tree.parent.name:
        return str(PurePosixPath(*parts[:-1], tree.name))
    return old


def plan(names: list[str], tree: Path, recorded_root: str = "") -> Relocation:
    """Where the training tree is in `names` (the recorded root when the names start with it, else
    the prefix under which most of their files exist in `tree`), and what it becomes."""
    qualified = [n for n in names if file_of(n)]
    files = sorted({file_of(n) for n in qualified})
    if not files:
        return Relocation()
    if recorded_root and any(f.startswith(recorded_root.rstrip("/") + "/") for f in files):
        old = recorded_root.rstrip("/")
    else:
        votes = Counter()
        for f in files:
            found = _candidates(f, tree)
            if found:
                votes[found[0][0]] += 1
        if not votes:
            return Relocation(names=len(qualified))
        old = votes.most_common(1)[0][0]
    if not old:      # the names are already relative to the tree's root
        return Relocation(names=len(qualified))
    inside = old + "/"
    words: dict[str, set[str] | None] = {}
    header_words: set[str] = set()

    def present(name: str) -> bool:
        """Its file is in the tree and, for a C function, its name is still spelled there or in one of
        the tree's headers (a static inline function of a header is named by each file that uses it).
        A name made by a macro is not found: counted absent (43 of 14,459 on PostgreSQL 15's own tree)."""
        rest = file_of(name)[len(inside):]
        if rest not in words:
            path = tree / rest
            words[rest] = set(_IDENTIFIER.findall(path.read_text(errors="replace"))) if path.is_file() else None
        if words[rest] is None:
            return False
        function = name[len(file_of(name)) + 1:]
        # A mangled C++ name does not appear as written; only a C identifier is looked for.
        if function.startswith("_Z") or not _IDENTIFIER.fullmatch(function) or function in words[rest]:
            return True
        if not header_words:
            for header in tree.rglob("*.h"):
                header_words.update(_IDENTIFIER.findall(header.read_text(errors="replace")))
        return function in header_words

    absent = sum(1 for n in qualified if file_of(n).startswith(inside) and not present(n))
    return Relocation(old, _respelled(old, tree), len(qualified), absent)


def rewrite(text: str, relocation: Relocation) -> str:
    """A profile's text form with every name under the old prefix (a function's, or an indirect
    call target's `<name>:<count>`) moved to the new one; counters and comments are untouched."""
    if not relocation.moves:
        return text
    old = relocation.old + "/"
    new = relocation.new + "/"
    return "\n".join(new + line[len(old):] if line.startswith(old) else line for line in text.split("\n"))
