"""When stored targets are one binary: the rule `pgolab machines` and `pgolab merge` share.

One file sha256 is one binary. Two files are one binary when they run the same code: the sha256 of
what they load (elf.loaded_digest, recorded in build.json since record version 9) is one, and each
is vouched for by a build record of the very file that was measured (StoredTarget.code_digest). A
clang ThinLTO build of one tree at two paths is such a pair: it differs in symbol names and build ID
alone. A target without a digest (a store from before digests were kept) is one binary with nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import StoredTarget


@dataclass(frozen=True)
class OneBinary:
    files: tuple[str, ...]      # the distinct file sha256s, sorted
    code: str | None            # the loaded-code sha256 that makes several files one binary

    @property
    def by_code(self) -> bool:
        return len(self.files) > 1

    def describe(self) -> str:
        if not self.by_code:
            return f"sha256 {self.files[0][:12]}"
        return (f"loaded sha256 {self.code[:12]} (file sha256 {', '.join(d[:12] for d in self.files)}: "
                f"they differ in their symbol table, debug information or build ID alone)")


def same_binary(targets: list[StoredTarget]) -> OneBinary | None:
    """How the targets are one binary; None when they are not, or one of them has no digest."""
    files = tuple(sorted({t.binary_digest for t in targets}))
    if "" in files:
        return None
    if len(files) == 1:
        return OneBinary(files, None)
    codes = {t.code_digest for t in targets}
    if len(codes) == 1 and None not in codes:
        return OneBinary(files, codes.pop())
    return None


def digest_listing(named: list[tuple[str, StoredTarget]]) -> str:
    """Which binary each named target is, for a refusal: its file digest and, if vouched for, its code's."""
    return ", ".join(f"{name}: {t.binary_digest[:12] or 'no digest'}"
                     + (f" (loaded {t.code_digest[:12]})" if t.code_digest else "") for name, t in named)


def measured_apart(cost: list[StoredTarget], clock: list[StoredTarget]) -> list[str]:
    """Each label whose wall-clock figures were measured on a binary that none of its cost targets (one
    per shard: each measured its own base) is, with the digests side by side: a build made again
    elsewhere (a PGO build trains anew; a -march=native build is another CPU's) is another binary
    than the one the cost figures hold. A label without a digest on either side is left out."""
    by_label: dict[str, list[StoredTarget]] = {}
    for t in cost:
        by_label.setdefault(t.label, []).append(t)
    apart = []
    for t in clock:
        measured = [c for c in by_label.get(t.label, []) if c.binary_digest]
        if t.binary_digest and measured and not any(same_binary([c, t]) for c in measured):
            distinct = list({c.binary_digest: c for c in measured}.values())
            apart.append(f"{t.label} ({digest_listing([*(('cost', c) for c in distinct), ('wall-clock', t)])})")
    return apart
