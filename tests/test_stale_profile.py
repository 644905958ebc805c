"""A stale profile (issue 33): a profile file of another tree of the same server is read when asked
(--stale-profile), and the compile says how much of it still applies. The counting is tried on real
profiles: gcc's and clang's, written by tiny programs compiled and run here, then read by a compile
of a changed source."""

import subprocess
from pathlib import Path

import pytest

from pgolab import profile_file
from pgolab.errors import PgolabError
from pgolab.profiles import ClangProfile, GccProfile, ProfileMatch, Relocation
from pgolab.profiles.relocation import plan, rewrite
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
    assert ProfileMatch(4, 1, 1).share == 0.5 and "1 no longer in this tree" in ProfileMatch(4, 1, 1).describe()


def a_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_names_by_file_are_found_under_the_trained_tree_and_moved_to_the_build_s(tmp_path):
    new = a_tree(tmp_path / "sources" / "pg-upstream", {
        "src/a.c": 'static int f(void);\n#include "scan.c"\n', "src/scan.c": "static int yylex(void);",
        "src/b.c": "int g;", "src/inc/h.h": "static inline int inl(void);"})
    names = ["/old/home/sources/pg-debian/src/a.c:f",         # a static function: moved
             "/old/home/sources/pg-debian/src/a.c:inl",       # a header's static inline, named by its user
             "/old/home/sources/pg-debian/src/a.c:yylex",     # in a .c file a.c includes
             "/old/home/sources/pg-debian/src/a.c:gone",      # no longer in a.c, its includes or a header
             "/old/home/sources/pg-debian/src/c.c:h",         # its file is gone
             "/old/home/sources/pg-debian/src/b.c:_ZN1X1gEv",  # C++: not looked for by name
             "/old/home/sources/pg-debian/src/b.c:__cxx_global_var_init",   # made by the compiler
             "external_function", "shmem.c:local"]            # not by file; relative to the build folder
    moved = plan(names, new)
    assert moved == Relocation("/old/home/sources/pg-debian", str(new), 7, 2) and moved.moves
    # The recorded root wins over the inference (here the two disagree: the names' tree sits in src/).
    nested = [f"/t/src/{n.split('/src/', 1)[1]}" for n in names if "/src/" in n]
    assert plan(nested, new).old == "/t" and plan(nested, new, "/t/src/").old == "/t/src"
    text = "\n".join(["/old/home/sources/pg-debian/src/a.c:f", "# Func Hash:", "1", "# Num Counters:", "1",
                      "# Counter Values:", "5", "/old/home/sources/pg-debian/src/b.c:g:5", "shmem.c:local"])
    rewritten = rewrite(text, moved)
    assert rewritten.split("\n")[0] == f"{new}/src/a.c:f" and f"{new}/src/b.c:g:5" in rewritten
    assert rewritten.split("\n")[1:7] == text.split("\n")[1:7] and rewritten.endswith("\nshmem.c:local")
    # In place (every name already spells the tree): nothing moves, the absent are still counted.
    in_place = plan([n.replace("/old/home/sources/pg-debian", str(new)) for n in names], new)
    assert in_place == Relocation(str(new), str(new), 7, 2) and not in_place.moves
    # A relative spelling (CMake's, from the build folder) becomes the tree's path from the build's folder;
    # without one, its last folder is renamed when both trees sit in one folder of the same name.
    relative = plan(["../../../sources/pg-debian/src/a.c:f"], new, build_dir=tmp_path / "build")
    assert (relative.old, relative.new) == ("../../../sources/pg-debian", "../sources/pg-upstream")
    assert plan(["../../../sources/pg-debian/src/a.c:f"], new).new == "../../../sources/pg-upstream"
    assert plan(["/x/src/q.c:f"], new) == Relocation()      # no file of the tree: nothing to say
    # LLVM 18 on separates the file with ';' (and a value site's count with ':').
    llvm19 = [n.replace(".c:", ".c;") for n in names]
    assert plan(llvm19, new) == moved
    assert rewrite(f"{llvm19[0]}\n{llvm19[0]}:5", moved) == f"{new}/src/a.c;f\n{new}/src/a.c;f:5"
    # A temporal profile's trace (an _order build's) names its functions on one line, comma-separated.
    trace = f"# Weight:\n1\nmain,{llvm19[0]},shmem.c;local,{llvm19[1]},"
    assert rewrite(trace, moved).split("\n")[2] == f"main,{new}/src/a.c;f,shmem.c;local,{new}/src/a.c;inl,"


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
        return SimpleNamespace(tool=tool, compile=SimpleNamespace(build_dir=build, source=build), profile_dir=profile,
                               build_log=tmp_path / "build.log", reporter=QuietReporter(), stale_min_match=min_match,
                               runner=lambda purpose: Runner(tmp_path / f"{purpose}.log"))
    assert pgo.check(ctx(0.5))["match"] == {"functions": 3, "mismatched": 1, "absent": 0, "share": 0.6667}
    with pytest.raises(PgolabError, match=r"66.7% of the profile's 3 functions apply \(1 changed since it was "
                                          r"trained\); below --min-profile-match 90%") as err:
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


@pytest.mark.parametrize("llvm", ["16", "19"])      # LLVM 19 names them `<file>;<function>`
def test_clang_reads_a_static_function_s_counts_only_once_its_name_is_moved_to_the_build_s_tree(tmp_path, llvm):
    """The same file compiled by absolute path in two trees: the trained tree's profile gives the other
    tree's static function no counts until the profile's names are moved (ClangProfile.relocate); the
    build's check then counts the function whose file the other tree lacks as absent."""
    from types import SimpleNamespace
    from pgolab.phases import QuietReporter
    from pgolab.stages import pgo
    need(f"clang-{llvm}")
    need(f"llvm-profdata-{llvm}")
    program = "__attribute__((noinline)) static int pick(int x) { if (x > 3) return x; return -x; }\n" + \
        "int helper(int);\n" + \
        "int main(void) { int s = 0; for (int i = 0; i < 100; i++) s += pick(i) + helper(i); return s == 42; }\n"
    helper = "__attribute__((noinline)) static int twice(int x) { return 2 * x; }\n" + \
        "int helper(int x) { return twice(x); }\n"
    trained = a_tree(tmp_path / "sources" / "debian", {"src/prog.c": program, "src/helper.c": helper})
    other = a_tree(tmp_path / "sources" / "upstream" / "tree", {"src/prog.c": program})   # helper.c is gone
    tool, profile, runner = ClangProfile(f"llvm-profdata-{llvm}"), tmp_path / "profile", Runner(tmp_path / "log")
    build = tmp_path / "build"
    build.mkdir()
    profile.mkdir()
    subprocess.run([f"clang-{llvm}", "-O2", "-fprofile-generate", str(trained / "src/prog.c"),
                    str(trained / "src/helper.c"), "-o", tmp_path / "prog"], check=True)
    subprocess.run([tmp_path / "prog"], env={"LLVM_PROFILE_FILE": str(profile / "raw-%p.profraw")})
    tool.merge(profile, runner)

    def compile_other_tree() -> str:
        done = subprocess.run([f"clang-{llvm}", "-O2", "-c", *tool.use_flags(profile, other), "-mllvm",
                               "-pgo-warn-missing-function", str(other / "src/prog.c"), "-o", build / "prog.o"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        (tmp_path / "build.log").write_text(done.stderr)
        return done.stderr

    def check(min_match):
        return pgo.check(SimpleNamespace(
            tool=tool, compile=SimpleNamespace(build_dir=build, source=other), profile_dir=profile,
            build_log=tmp_path / "build.log", reporter=QuietReporter(), stale_min_match=min_match,
            runner=lambda purpose: Runner(tmp_path / f"{purpose}.log")))

    assert "no profile data available for function pick" in compile_other_tree()
    functions = tool.profile_functions(profile, runner)      # main, helper, pick, twice
    # Not moved, the build's names by file read nothing: both count as absent.
    assert check(0.1)["match"] == {"functions": functions, "mismatched": 0, "absent": 2,
                                   "share": round(1 - 2 / functions, 4)}
    moved = tool.relocate(profile, other, str(trained), runner, build)
    assert moved == Relocation(str(trained), str(other), 2, 1)     # pick moved; twice's file is gone
    assert "no profile data" not in compile_other_tree()
    assert tool.relocate(profile, other, "", runner, build, write=False) == Relocation(str(other), str(other), 2, 1)
    assert check(0.1)["match"]["absent"] == 1
    with pytest.raises(PgolabError, match=r"1 no longer in this tree\); below --min-profile-match 90%"):
        check(0.9)
    assert GccProfile().relocate(profile, other, str(trained), runner, build) == Relocation()
