"""A real clang-16 ThinLTO program of two files, linked from a tree at a given path: the smallest build
whose file depends on the tree's path while what it runs does not (tests of "one binary")."""

import shutil
import subprocess
from pathlib import Path

import pytest

from pgolab.reproducible import prefix_map_flags

A = ("static int table[64];\nstatic __attribute__((noinline)) int helper(int x) { return table[x & 63] + x * %d; }\n"
     "int api(int x) { return helper(x) * 2; }\n")
B = "int api(int);\nint main(int argc, char **argv) { (void)argv; return api(argc); }\n"


def link_thinlto(tree: Path, factor: int = 7) -> Path:
    """tree/prog, compiled from tree/src with the build's prefix maps; `factor` changes the code."""
    if shutil.which("clang-16") is None or shutil.which("ld.lld-16") is None:
        pytest.skip("no clang-16 and lld-16 (scripts/setup.sh installs them)")
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.c").write_text(A % factor)
    (tree / "src" / "b.c").write_text(B)
    cc = ["clang-16", "-O2", "-flto=thin", *prefix_map_flags(tree / "src", tree)]
    for name in ("a", "b"):
        subprocess.run([*cc, "-c", str(tree / "src" / f"{name}.c"), "-o", str(tree / f"{name}.o")], check=True)
    subprocess.run([*cc, "-fuse-ld=lld", str(tree / "a.o"), str(tree / "b.o"), "-o", str(tree / "prog")], check=True)
    return tree / "prog"
