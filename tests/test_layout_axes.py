"""The profile-driven layout axes on a small program, with LLVM 19's real compiler, linker and profile
tools: the flags a variant adds, the profile merge and function order pgolab runs, and what lands in
the binary. (The server pipelines run them end to end: tests/test_pipeline_postgresql.py builds
_split and _hotcold under BOLT's _hugify; PostgreSQL refuses _order, which forks.)"""

import re
import subprocess
from pathlib import Path

import pytest

from conftest import need
from pgolab import variants
from pgolab.errors import PgolabError
from pgolab.profiles import require_raw_profiles
from pgolab.runner import Runner

# Functions first run in an order unlike their order in the file; one with a rarely taken branch that
# -fsplit-machine-functions moves out; one never run (cold).
PROGRAM = r"""
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
__attribute__((noinline)) int third(int x) { return x * 7; }
__attribute__((noinline)) int second(int x) { return x + 3; }
__attribute__((noinline)) int never(int x) { return x * 5; }
__attribute__((noinline)) int first(int x) {
    if (x == 123456789) { for (int i = 0; i < x; i++) if (i % 7 == 3) printf("%d\n", i); return -1; }
    return x + 1;
}
int main(int argc, char **argv) {
    long s = 0;
    for (int i = 0; i < 3000000; i++) s += first(i);
    for (int i = 0; i < 300000; i++) s += second(i);
    for (int i = 0; i < 30000; i++) s += third(i);
    if (argc > 5) s += never(argc);
    if (argc > 1) { pid_t p = fork(); if (p == 0) return second(1) > 0 ? 0 : 1; waitpid(p, 0, 0); }
    printf("%ld\n", s);
    return 0;
}
"""


def build(tmp: Path, name: str, profile_dir: Path, out: str) -> Path:
    from pgolab.toolchains import toolchain
    tc = toolchain("clang19")
    flags = variants.flags_for(variants.parse(name), tc, profile_dir=profile_dir, build_dir=tmp)
    source = tmp / "program.c"
    source.write_text(PROGRAM)
    binary = tmp / out
    subprocess.run([tc.cc, "-O2", *flags.compile, *flags.link, str(source), "-o", str(binary)], check=True,
                   capture_output=True, text=True)
    return binary


def symbols_by_address(binary: Path) -> list[str]:
    out = subprocess.run(["nm", "-n", "--defined-only", str(binary)], capture_output=True, text=True, check=True).stdout
    return [line.split()[2] for line in out.splitlines() if line.split()[1] in "tT"]


def instrumented_order_build(tmp: Path):
    """LLVM 19's profile tool, an empty profile folder, and the program built as an _order build's
    instrumented build (temporal profiling)."""
    for program in ("clang-19", "ld.lld-19", "llvm-profdata-19"):
        need(program)
    from pgolab.toolchains import toolchain
    profile_dir = tmp / "profile"
    profile_dir.mkdir()
    return toolchain("clang19").profile, profile_dir, build(tmp, "rel_pgo_gen_order_clang19", profile_dir, "gen")


def test_function_order_split_and_hot_cold_sections_land_in_the_binary(tmp_path):
    tool, profile_dir, gen = instrumented_order_build(tmp_path)
    env = tool.redirect_env(profile_dir, profile_dir)
    subprocess.run([str(gen)], env=env, check=True, capture_output=True)
    runner = Runner(tmp_path / "profile.log")
    tool.merge(profile_dir, runner)
    order = tool.write_function_order(profile_dir, profile_dir / variants.FUNCTION_ORDER, runner)
    assert order.traces_seen == 1 and order.functions >= 4, order
    listed = [n for n in (profile_dir / variants.FUNCTION_ORDER).read_text().splitlines() if not n.startswith("#")]
    assert listed.index("first") < listed.index("second") < listed.index("third")   # first run first

    ordered = build(tmp_path, "rel_pgo_use_order_clang19", profile_dir, "ordered")
    assert subprocess.run([str(ordered)], capture_output=True).returncode == 0
    in_binary = [s for s in symbols_by_address(ordered) if s in listed]
    assert len(in_binary) >= 4 and in_binary == [n for n in listed if n in in_binary], "the link follows the order"
    # With _hotcold the order holds within each of the hot, plain and unlikely sections, which lld
    # places apart; _split moves the rarely taken branch out.
    optimized = build(tmp_path, "rel_pgo_use_order_split_hotcold_clang19", profile_dir, "optimized")
    assert subprocess.run([str(optimized)], capture_output=True).returncode == 0
    sections = subprocess.run(["readelf", "-SW", str(optimized)], capture_output=True, text=True).stdout
    assert re.search(r"\.text\.split\b", sections) and re.search(r"\.text\.hot\b", sections), sections
    assert "first.cold" in symbols_by_address(optimized), "the rarely taken branch was split off"

    # Without the layout axes: one .text, no split part (and no function order is asked for).
    plain = build(tmp_path, "rel_pgo_use_clang19", profile_dir, "plain")
    assert ".text.split" not in subprocess.run(["readelf", "-SW", str(plain)], capture_output=True, text=True).stdout
    assert not any(s.endswith(".cold") for s in symbols_by_address(plain))


def test_a_forked_process_whose_temporal_profile_cannot_be_merged_fails_the_training(tmp_path):
    """Why PostgreSQL refuses _order: a forked child shares its parent's profile file (%m merges them),
    and LLVM's runtime refuses to merge temporal profiles. pgolab reads the runtime's error in the
    server's log instead of taking the surviving file for the whole profile."""
    tool, profile_dir, gen = instrumented_order_build(tmp_path)
    error_log = tmp_path / "server-error.log"
    with open(error_log, "w") as log:
        subprocess.run([str(gen), "fork"], env=tool.redirect_env(profile_dir, profile_dir), check=True,
                       stdout=subprocess.DEVNULL, stderr=log)
    assert list(profile_dir.glob("*.profraw")), "one process's file is there"
    with pytest.raises(PgolabError) as err:
        require_raw_profiles(profile_dir, tool, error_log)
    assert "profile runtime reported errors" in str(err.value) and err.value.log == error_log
    # The same program without temporal profiling merges both processes' counters.
    plain_dir = tmp_path / "plain"
    plain_dir.mkdir()
    plain = build(tmp_path, "rel_pgo_gen_clang19", plain_dir, "plain-gen")
    with open(error_log, "w") as log:
        subprocess.run([str(plain), "fork"], env=tool.redirect_env(plain_dir, plain_dir), check=True,
                       stdout=subprocess.DEVNULL, stderr=log)
    assert require_raw_profiles(plain_dir, tool, error_log).files == 1


def test_huge_code_is_read_from_the_executable_mappings_of_smaps():
    from pgolab.stages.smoke import huge_code_kib
    smaps = """55cefa600000-55cefa800000 r-xp 00a00000 fe:00 2564823   /x/bin/postgres
Rss:                 444 kB
AnonHugePages:         0 kB
FilePmdMapped:      2048 kB
55cefa800000-55cefa9fe000 rw-p 00c00000 fe:00 2564823   /x/bin/postgres
AnonHugePages:      2048 kB
FilePmdMapped:         0 kB
7f0000000000-7f0000200000 r-xp 00000000 00:00 0
AnonHugePages:      2048 kB
"""
    assert huge_code_kib(smaps) == 4096          # the data mapping's huge page is not code
    assert huge_code_kib(smaps.replace("2048 kB", "0 kB")) == 0


def test_postgresql_refuses_order_before_anything_is_built_and_best_leaves_it_out():
    from pgolab.build import order_refusal, require_buildable
    with pytest.raises(PgolabError) as err:
        require_buildable(variants.parse("rel_lto_pgo_use_order_clang19"), "postgresql")
    assert "forks a process per connection" in str(err.value) and "mariadb, mysql" in err.value.hint
    require_buildable(variants.parse("rel_lto_pgo_use_order_clang19"), "mariadb")
    require_buildable(variants.parse("rel_lto_pgo_use_split_hotcold_clang19"), "postgresql")
    assert order_refusal(variants.parse("rel_lto_pgo_use_clang19"), "postgresql") is None
    # A profile file holds a build's own training: a layout twin's is refused, naming the twin.
    from pgolab.profile_file import require_own_profile
    with pytest.raises(PgolabError) as err:
        require_own_profile(variants.parse("rel_lto_pgo_use_split_clang19"), "x", lambda n: n)
    assert "rel_lto_pgo_use_clang19" in str(err.value)
    # pgolab best's real executor leaves out what the server refuses, and what cost mode cannot see.
    from types import SimpleNamespace

    from pgolab.best import MatrixRounds
    rounds = MatrixRounds(SimpleNamespace(sources=[SimpleNamespace(server="postgresql")]), None, None, "")
    assert "forks" in rounds.unmeasurable(variants.parse("rel_lto_pgo_use_order_clang19"))
    assert "TLB" in rounds.unmeasurable(variants.parse("rel_lto_pgo_use_clang19_bolt_hugify"))
    assert "QPS confirmation" in rounds.unmeasurable(variants.parse("rel_lto_pgo_use_clang19_hugetext"))
    assert rounds.unmeasurable(variants.parse("rel_lto_pgo_use_split_clang19")) is None
