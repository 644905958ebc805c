"""Build replicates: independent builds of one variant, so that a claim about the variant can include
how much its figures move from one build to the next, not only within one run of one binary.

Replicate 1 is the build itself (its usual label and binary). Replicate k > 1 is labelled
`LABEL+rK`; a PGO build trains with the training seed moved by k - 1 (another statement sequence,
another profile), and every build links with layout seed k, which each compiler family turns into
its own way of moving code (toolchains.CompilerFamily.layout_seed_flags). So two replicates are two
binaries of the same variant, source and toolchain.
"""

from __future__ import annotations

import re
import shutil
import sys
from dataclasses import replace
from pathlib import Path

from .errors import PgolabError

SUFFIX = "+r"
MAX = 9
_LABEL = re.compile(r"^(?P<build>.+)\+r(?P<k>[2-9])$")


def label(build_label: str, k: int) -> str:
    """Replicate k's label: the build's own for k = 1, `LABEL+rK` after it."""
    return build_label if k == 1 else f"{build_label}{SUFFIX}{k}"


def labels(build_label: str, count: int) -> list[str]:
    return [label(build_label, k) for k in range(1, count + 1)]


def split(target_label: str) -> tuple[str, int]:
    """(the label every replicate shares, which replicate): ("rel_pgo_use", 2) for rel_pgo_use+r2."""
    found = _LABEL.match(target_label)
    return (found.group("build"), int(found.group("k"))) if found else (target_label, 1)


def check_count(count: int) -> int:
    if not 1 <= count <= MAX:
        raise PgolabError(f"--replicates {count}: give 1 to {MAX}",
                          hint="2 or 3 replicates show the build-to-build spread; 1 builds the variant once")
    return count


def training(spec, k: int):
    """Replicate k's training (a workloads.TrainingSpec): the same loads, the seed moved by k - 1."""
    return spec if k == 1 else replace(spec, seed=spec.seed + k - 1)


# -- a link-order shuffle, for linkers without a shuffle of their own (GNU ld) -------------------
WRAPPER = """#!{python}
# pgolab: replicate {seed}'s link-order shuffle. The object files of this link (never the C runtime's
# crt*.o, whose order makes .init and .fini) trade places, as a seeded permutation; archives,
# libraries and options stay where they were. Then the real linker runs.
import os, random, shlex, sys, tempfile
SEED, REAL = {seed}, {real!r}

def expanded(args):
    out = []
    for a in args:
        if a.startswith("@") and os.path.isfile(a[1:]):
            with open(a[1:]) as f:
                out += expanded(shlex.split(f.read()))
        else:
            out.append(a)
    return out

args = expanded(sys.argv[1:])
if "-r" not in args and "--relocatable" not in args:
    after_o = {{i + 1 for i, a in enumerate(args) if a == "-o"}}
    movable = [i for i, a in enumerate(args) if i not in after_o and a.endswith(".o")
               and not a.startswith("-") and not os.path.basename(a).startswith("crt")]
    chosen = [args[i] for i in movable]
    random.Random(SEED).shuffle(chosen)
    for i, a in zip(movable, chosen):
        args[i] = a
with tempfile.NamedTemporaryFile("w", suffix=".rsp", delete=False) as f:
    f.write(" ".join(shlex.quote(a) for a in args))
try:
    sys.exit(os.spawnv(os.P_WAIT, REAL, [REAL, "@" + f.name]))
finally:
    os.unlink(f.name)
"""


def write_link_order_wrapper(folder: Path, seed: int) -> Path:
    """An `ld` in `folder` that shuffles the link's object files with `seed` and runs the real ld
    (gcc finds it through -B folder/)."""
    real = shutil.which("ld")
    if real is None:
        raise PgolabError("no ld on PATH for a replicate's link", hint="apt-get install binutils")
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "ld"
    text = WRAPPER.format(python=sys.executable, seed=seed, real=real)
    if not wrapper.exists() or wrapper.read_text() != text:
        wrapper.write_text(text)
        wrapper.chmod(0o755)
    return wrapper
