"""A stale profile (issue 33): a profile file of another tree of the same server is read when asked
(--stale-profile), and the compile says how much of it still applies. The counting is tried on real
profiles: gcc's and clang's, written by tiny programs compiled and run here, then read by a compile
of a changed source."""

import subprocess
from pathlib import Path

import pytest

from pgolab import profile_file
from pgolab.errors import PgolabError
from pgolab.profiles import ClangProfile, GccProfile, ProfileMatch
from pgolab.runner import Runner

from conftest import need
from test_profile_file import expected, trained_build

TRAINED = """
int twice(int x) { return 2 * x; }
int pick(int x) { if (x > 3) return x; return -x; }
int main(void) { int s = 0; for (int i = 0; i < 100; i++) s += pick(twice(i)); return s == 42; }
"""
# pick() changed (a branch more, one the compiler cannot fold away), twice() and main() did not.
CHANGED = TRAINED.replace("if (x > 3) return x;", "if (x > 3) return x; if (x == 2) return 0;")


def test_another_tree_s_profile_is_refused_unless_asked_and_then_only_its_source_may_differ(tmp_path):
    record = trained_build(tmp_path)
    out = tmp_path / "p.tgz"
    profile_file.export(record, "rel_pgo_gen", GccProfile(), record.dir / "profile", out)
    other_tree = expected(source_digest="ef" * 32)
    with pytest.raises(PgolabError, match="source_digest") as err:
        profile_file.unpack(out, other_tree, GccProfile(), tmp_path / "a")
    assert "--stale-profile" in err.value.hint
    assert profile_file.unpack(out, other_tree, GccProfile(), tmp_path / "b", stale=True).source_version == "15.18"
    with pytest.raises(PgolabError, match="compiler") as err:
        profile_file.unpack(out, expected(source_digest="ef" * 32, compiler={"gcc": "13"}), GccProfile(),
                            tmp_path / "c", stale=True)
    assert "--stale-profile" not in err.value.hint


def test_the_match_share_is_the_functions_that_still_apply():
    assert ProfileMatch(3, 1).share == pytest.approx(2 / 3)
    assert ProfileMatch(0, 0).share == 0.0 and ProfileMatch(2, 5).share == 0.0
    assert "66.7% of the profile's 3 functions apply (1 changed" in ProfileMatch(3, 1).describe()


def gcc_stale_compile(tmp_path: Path) -> tuple[GccProfile, Path, Path, str]:
    """TRAINED compiled by gcc with pgolab's instrumentation flags and run once, then CHANGED compiled
    with its profile: the tool, build folder, profile folder and the compile's warnings."""
    tool, build, profile = GccProfile(), tmp_path / "build", tmp_path / "profile"
    build.mkdir()
    (build / "prog.c").write_text(TRAINED)
    subprocess.run(["gcc", "-O2", "-c", *tool.generate_flags(profile, build), "prog.c", "-o", "prog.o"], cwd=build,
                   check=True)
    subprocess.run(["gcc", "-fprofile-generate", "prog.o", "-o", "prog"], cwd=build, check=True)
    subprocess.run(["./prog"], cwd=build)
    (build / "prog.c").write_text(CHANGED)
    done = subprocess.run(["gcc", "-O2", "-c", *tool.use_flags(profile, build), "prog.c", "-o", "prog.o"], cwd=build,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return tool, build, profile, done.stderr


def test_gcc_counts_a_stale_profile_s_functions_and_the_changed_one(tmp_path):
    need("gcc")
    tool, build, profile, warnings = gcc_stale_compile(tmp_path)
    runner = Runner(tmp_path / "log")
    assert tool.profile_functions(profile, runner) == 3
    (tmp_path / "build.log").write_text(warnings)
    check = tool.check_used(build, profile, tmp_path / "build.log")
    # gcc warned twice for pick() (its arcs and its time profiler counters): one function.
    assert warnings.count("[-Wcoverage-mismatch]") == 2 and check.with_profile == 1 and check.mismatched == 1
    assert ProfileMatch(tool.profile_functions(profile, runner), check.mismatched).share == pytest.approx(2 / 3)


def test_clang_counts_a_stale_profile_s_functions_and_the_changed_one(tmp_path):
    need("clang-16")
    need("llvm-profdata-16")
    tool, build, profile = ClangProfile("llvm-profdata-16"), tmp_path / "build", tmp_path / "profile"
    build.mkdir()
    profile.mkdir()
    (build / "prog.c").write_text(TRAINED)
    subprocess.run(["clang-16", "-O2", "-fprofile-generate", "prog.c", "-o", "prog"], cwd=build, check=True)
    subprocess.run(["./prog"], cwd=build, env={"LLVM_PROFILE_FILE": str(profile / "raw-%p.profraw")})
    runner = Runner(tmp_path / "log")
    tool.merge(profile, runner)
    assert tool.profile_functions(profile, runner) == 3
    (build / "prog.c").write_text(CHANGED)
    done = subprocess.run(["clang-16", "-O2", "-c", *tool.use_flags(profile, build), "prog.c", "-o", "prog.o"],
                          cwd=build, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tmp_path / "build.log").write_text(done.stderr)
    check = tool.check_used(build, profile, tmp_path / "build.log")
    # clang instruments after inlining pick() into main(): both changed for it.
    assert check.mismatched == 2 and "mismatch) pick" in done.stderr and "mismatch) main" in done.stderr, done.stderr
    assert ProfileMatch(tool.profile_functions(profile, runner), check.mismatched).share == pytest.approx(1 / 3)


def test_the_build_s_profile_check_refuses_a_stale_profile_below_the_threshold_and_records_its_share(tmp_path):
    """stages.pgo.check on the gcc compile above: 2 of 3 functions apply."""
    from types import SimpleNamespace
    from pgolab.phases import QuietReporter
    from pgolab.stages import pgo
    need("gcc")
    tool, build, profile, warnings = gcc_stale_compile(tmp_path)
    (tmp_path / "build.log").write_text(warnings)

    def ctx(min_match):
        return SimpleNamespace(tool=tool, compile=SimpleNamespace(build_dir=build), profile_dir=profile,
                               build_log=tmp_path / "build.log", reporter=QuietReporter(), stale_min_match=min_match,
                               runner=lambda purpose: Runner(tmp_path / f"{purpose}.log"))
    assert pgo.check(ctx(0.5))["match"] == {"functions": 3, "mismatched": 1, "share": 0.6667}
    with pytest.raises(PgolabError, match=r"applies to 66.7% of its functions \(1 of 3 changed\), below "
                                          r"--min-profile-match 90%") as err:
        pgo.check(ctx(0.9))
    assert "lower --min-profile-match" in err.value.hint
    assert "match" not in pgo.check(ctx(None))      # a fresh profile is not matched against anything


def test_gcc_counts_each_compiled_copy_of_a_changed_function_once_by_its_arcs_warning():
    from pgolab.profiles.gcc import mismatched_functions
    log = "\n".join([
        "a.c:1:5: warning: number of counters in profile data for function ‘f’ does not match its profile data "
        "(counter ‘arcs’, expected 2 and have 3) [-Wcoverage-mismatch]",
        "a.c:1:5: warning: the control flow of function ‘f’ does not match its profile data (counter "
        "‘time_profiler’) [-Wcoverage-mismatch]",
        "../b.c:1:5: warning: the control flow of function 'f' does not match its profile data (counter 'arcs') "
        "[-Wcoverage-mismatch]",
        "c.c:9:5: warning: source locations for function ‘g’ have changed, the profile data may be out of date "
        "[-Wcoverage-mismatch]"])
    assert mismatched_functions(log) == 2      # f in a.c and in b.c; g keeps its counts
