"""The _hugetext object with real compilers: linked into a program with 6 MiB of code, the program
runs on an anonymous copy of its code, on huge pages where the kernel's transparent huge pages allow;
it stays as linked when asked to, under valgrind, and where the object is in a shared library."""

import subprocess
from pathlib import Path

import pytest

from pgolab.stages.compile import object_compiles
from pgolab.toolchains import Toolchain
from pgolab.variants import FlagSet, HUGETEXT_SOURCE

from conftest import need, thp_enabled

# 6 MiB of no-ops between two functions, so that the code holds at least two whole 2 MiB pages; the
# program calls both and reports the KiB of its executable mappings on huge pages (as smoke.py reads).
PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) int before(int x) { return x * 3 + 1; }
__asm__(".text\n.p2align 4\npadding:\n.skip 6291456, 0x90\n");
__attribute__((noinline)) int after(int x) { return x * 5 + 2; }
int main(void) {
    long sum = 0, huge = 0;
    for (int i = 0; i < 1000; i++) sum += before(i) + after(i);
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512], perms[8];
    int exec = 0;
    unsigned long lo, hi;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) exec = strchr(perms, 'x') != NULL;
        else if (exec && strncmp(line, "AnonHugePages:", 14) == 0) huge += atol(line + 14);
    }
    printf("%ld %ld\n", sum, huge);
    return 0;
}
"""
SUM = sum(3 * i + 1 + 5 * i + 2 for i in range(1000))
TOOLCHAINS = [Toolchain("gcc", "gcc", "g++", "gcc-ar", "gcc-ranlib", "gcc-nm", None),
              Toolchain("clang", "clang-16", "clang++-16", "llvm-ar-16", "llvm-ranlib-16", "llvm-nm-16",
                        "llvm-profdata-16")]


def hugetext_object(toolchain: Toolchain, tmp_path: Path) -> Path:
    """The object as a build's configure compiles it (stages.compile.object_compiles)."""
    obj = tmp_path / f"hugetext-{toolchain.compiler}.o"
    [cmd] = object_compiles(FlagSet(objects={str(obj): HUGETEXT_SOURCE}), toolchain)
    subprocess.run(cmd.argv, cwd=cmd.cwd, check=True)
    return obj


def run(argv, **env) -> tuple[int, int]:
    out = subprocess.run(argv, capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    total, huge = map(int, out.stdout.split()[-2:])
    return total, huge


@pytest.mark.parametrize("toolchain", TOOLCHAINS, ids=lambda t: t.compiler)
def test_a_program_runs_on_a_huge_page_copy_of_its_code_unless_told_not_to(toolchain, tmp_path):
    need(toolchain.cc)
    obj = hugetext_object(toolchain, tmp_path)
    # Its file symbol is the source's bare name: no folder of this machine reaches a server's binary.
    symbols = subprocess.run(["readelf", "-sW", str(obj)], capture_output=True, text=True, check=True).stdout
    assert any(line.split()[-1] == HUGETEXT_SOURCE for line in symbols.splitlines() if " FILE " in line)
    source = tmp_path / "program.c"
    source.write_text(PROGRAM)
    program = tmp_path / "program"
    subprocess.run([toolchain.cc, "-O2", str(source), f"-Wl,{obj}", "-o", str(program)], check=True)
    total, huge = run([str(program)])
    assert total == SUM
    # Two whole 2 MiB pages at least, where the kernel gives anonymous memory huge pages.
    assert huge >= 4096 if thp_enabled() else huge == 0
    assert run([str(program)], PGOLAB_HUGETEXT="0") == (SUM, 0)
    # Linked into a shared library instead, it leaves the program alone.
    library = tmp_path / "libwithhugetext.so"
    lib_source = tmp_path / "lib.c"
    lib_source.write_text("int in_library(int x) { return x + 1; }\n")
    subprocess.run([toolchain.cc, "-O2", "-fPIC", "-shared", str(lib_source), str(obj), "-o", str(library)], check=True)
    plain = tmp_path / "program-with-library"
    subprocess.run([toolchain.cc, "-O2", str(source), "-Wl,--no-as-needed", str(library),
                    f"-Wl,-rpath,{tmp_path}", "-o", str(plain)], check=True)
    assert run([str(plain)]) == (SUM, 0)


def test_under_valgrind_the_program_keeps_its_code_where_it_was_linked(tmp_path):
    """Cost mode runs the server under valgrind, which simulates no TLB: the copy would change what it
    counts (a constructor's memcpy) and nothing it can see, so the object stands aside there."""
    need("valgrind")
    obj = hugetext_object(TOOLCHAINS[0], tmp_path)
    source = tmp_path / "program.c"
    source.write_text(PROGRAM)
    program = tmp_path / "program"
    subprocess.run(["gcc", "-O2", str(source), f"-Wl,{obj}", "-o", str(program)], check=True)
    assert run(["valgrind", "--tool=none", "-q", str(program)]) == (SUM, 0)


def test_the_copy_moves_the_code_that_makes_it_and_the_program_goes_on(tmp_path):
    """The constructor may lie inside the range it moves (gcc puts it in .text.startup, ahead of the
    code; lld keeps input order): linked between two 3 MiB pads, at fixed addresses (no PIE), it does."""
    need("clang-16")
    clang = TOOLCHAINS[1]
    obj = hugetext_object(clang, tmp_path)
    pads = []
    for k in (1, 2):
        pad = tmp_path / f"pad{k}.s"
        pad.write_text(f".text\npad{k}:\n.skip 3145728, 0x90\n")
        pads.append(pad)
    source = tmp_path / "program.c"
    source.write_text(PROGRAM.replace('__asm__(".text\\n.p2align 4\\npadding:\\n.skip 6291456, 0x90\\n");', ""))
    program = tmp_path / "program"
    subprocess.run(["clang-16", "-O2", "-fuse-ld=lld", "-no-pie", str(pads[0]), str(obj), str(pads[1]), str(source),
                    "-o", str(program)], check=True)
    segments = subprocess.run(["readelf", "-lW", str(program)], capture_output=True, text=True, check=True).stdout
    [text] = [line.split() for line in segments.splitlines() if line.split()[:1] == ["LOAD"] and "E" in line.split()[6:-1]]
    start, size = int(text[2], 16), int(text[5], 16)
    lo, hi = -(-start // (2 << 20)) * (2 << 20), (start + size) // (2 << 20) * (2 << 20)
    symbols = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    constructor = next(int(line.split()[0], 16) for line in symbols.splitlines() if line.endswith(" pgolab_hugetext"))
    assert lo <= constructor < hi, (hex(lo), hex(constructor), hex(hi))
    total, huge = run([str(program)])
    assert total == SUM and (huge >= 2048 if thp_enabled() else huge == 0)
