"""Each kind of phase runs from a small context of its own, built here without a Pipeline: fake
recipe, fake servers, fake llvm-bolt, real runners, phase engine and profile tools (fast)."""

import ast
from pathlib import Path

import pytest

from pgolab.errors import PgolabError
from pgolab.layout import BuildLayout
from pgolab.phases import PhaseEngine, PhaseState
from pgolab.profiles import GccProfile, sealed_digest
from pgolab.profiles.bolt import BoltProfile
from pgolab.stages.bolt import BoltContext, BoltSteps, bolt_phases
from pgolab.stages.compile import CompileContext, compile_phases
from pgolab.stages.context import Runners
from pgolab.stages.pgo import PgoContext, pgo_phases
from pgolab.stages.smoke import SmokeContext, smoke_phase
from pgolab.targets.base import Cmd
from pgolab.toolchains import Gcc
from pgolab.variants import FlagSet, parse
from pgolab.workloads import parse_train

STAGES = Path(__file__).parent.parent / "src" / "pgolab" / "stages"


class Reporter:
    def __init__(self):
        self.messages, self.progressed = [], []

    def phase_started(self, name, description): pass
    def phase_skipped(self, name, description): pass
    def phase_finished(self, name, seconds): pass

    def progress(self, done, total):
        self.progressed.append((done, total))

    def message(self, text):
        self.messages.append(text)


class FakeTarget:
    """A recipe whose commands are shell one-liners; install writes the server binary."""

    def configure(self, tree, build_dir, toolchain, flags, variant, extra_args, use_ccache, profile_dir, like_distribution=False):
        return [Cmd(["sh", "-c", f"mkdir -p {build_dir} && echo configured {' '.join(flags.compile)}"],
                    what="configure")]

    def build(self, build_dir, jobs, flags):
        return [Cmd(["sh", "-c", "echo '[1/2] cc a.c' && touch a.o && echo '[2/2] link server'"], cwd=build_dir,
                    what="build")]

    def install(self, tree, build_dir, install_dir, runner, flags):
        self.server_binary(install_dir).parent.mkdir(parents=True, exist_ok=True)
        self.server_binary(install_dir).write_bytes(b"linked server")

    def server_binary(self, install_dir):
        return install_dir / "bin" / "server"


class FakeInstallation:
    run_as = None

    def version_sql(self):
        return "SELECT version()"


class FakeServer:
    """Started and stopped by `with`; an instrumented one writes its counters where env sends them."""

    def __init__(self, env):
        self.env, self.installation = env or {}, FakeInstallation()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if "GCOV_PREFIX" in self.env:
            Path(self.env["GCOV_PREFIX"], "a.gcda").write_bytes(b"counters")

    def query(self, sql, database=None, what=""):
        return "fake 1.0"

    def check_alive(self):
        pass


class FakeServers:
    def __init__(self):
        self.served, self.discarded = [], []

    def installation(self, stage):
        return FakeInstallation()

    def serve(self, stage, purpose, runner, env=None, server_binary=None):
        self.served.append((stage, purpose, server_binary))
        return FakeServer(env)

    def discard(self, server, purpose):
        self.discarded.append(purpose)
        return Path("/nonexistent/error.log")


def compile_context(tmp_path, reporter, variant="rel_o2nofp") -> CompileContext:
    layout = BuildLayout(tmp_path / "build")
    return CompileContext(target=FakeTarget(), source=tmp_path / "src", variant=parse(variant),
                          toolchain=Gcc().placeholder(), flags=FlagSet(compile=["-O2"]),
                          build_dir=layout.build_dir, install_dir=layout.install_dir,
                          profile_dir=layout.profile_dir, runner=Runners(layout.logs), reporter=reporter, jobs=2)


def test_the_compile_stage_runs_from_its_context(tmp_path):
    reporter = Reporter()
    ctx = compile_context(tmp_path, reporter)
    phases = compile_phases(ctx, "optimized", profile_digest=lambda: "profile-digest")
    assert [p.name for p in phases] == ["configure", "build", "install"]
    assert phases[0].inputs() == {"flags": ctx.flags.as_dict(), "profile": "profile-digest"}
    state = PhaseState(tmp_path / "state.json")
    PhaseEngine(state, reporter).run(phases, "start")
    assert list(state.phases) == ["configure", "build", "install"]
    assert state.phases["install"]["binary_bytes"] == len(b"linked server")
    assert reporter.progressed == [(1, 2), (2, 2)]
    assert "configured -O2" in (tmp_path / "build" / "logs" / "configure.log").read_text()
    # A compile knows nothing of BOLT: a _bolt variant's install leaves no BOLT folder.
    bolt = compile_context(tmp_path / "b", reporter, "rel_o2nofp_bolt")
    PhaseEngine(PhaseState(tmp_path / "b.json")).run(compile_phases(bolt), "start")
    assert not (tmp_path / "b" / "build" / "final" / "bolt").exists()


def test_the_pgo_stage_trains_merges_and_checks_from_its_context(tmp_path):
    reporter, servers = Reporter(), FakeServers()
    layout = BuildLayout(tmp_path / "build")
    gen_profile = tmp_path / "gen" / "profile"
    state = PhaseState(tmp_path / "state.json")
    tool = GccProfile()
    ctx = PgoContext(compile=compile_context(tmp_path, reporter, "rel_pgo_use"), tool=tool,
                     profile_dir=layout.profile_dir, instrumented_profile_dir=gen_profile, first_profile=None,
                     trains=True, retrain_from="train", sealed_digest=lambda d, t, r: sealed_digest(d, t, state, r),
                     build_log=layout.log("build"), train=parse_train("none", 1), runner=Runners(layout.logs),
                     servers=servers, reporter=reporter)
    phases = pgo_phases(ctx)
    assert [p.name for p in phases] == ["train", "merge", "configure", "build", "install", "check-profile"]
    PhaseEngine(state, reporter).run(phases, "start")
    # The training's counters went to this build's profile folder (redirected from the gen build's),
    # the merge sealed them, and the compile's object a.o is matched to its .gcda file.
    assert (layout.profile_dir / "a.gcda").read_bytes() == b"counters"
    assert state.phases["merge"]["sealed"]
    assert servers.served == [("gen", "train", None)] and servers.discarded == ["train"]
    assert state.phases["check-profile"]["with_profile"] == 1
    assert "profile used: 1 of 1 objects" in reporter.messages[-1]
    # A _bolt build reads its twin's profile: no training of its own.
    ctx.trains = False
    assert [p.name for p in pgo_phases(ctx)][:2] == ["configure", "build"]


def test_the_smoke_stage_serves_queries_and_discards(tmp_path):
    reporter, servers = Reporter(), FakeServers()
    phase = smoke_phase(SmokeContext(servers, Runners(tmp_path / "logs"), reporter))
    assert phase.action() == {"version": "fake 1.0"}
    assert servers.served == [("final", "smoke", None)] and servers.discarded == ["smoke"]


FAKE_BOLT = """#!/bin/sh
# llvm-bolt's shape: <input> -o <output> [options]; the output is the input, rewritten.
{ cat "$1"; echo " bolted"; } > "$3"
chmod 777 "$3"
echo "ARGS: $*"
echo "BOLT-INFO: 10 out of 20 functions in the binary (50.0%) have non-empty execution profile"
echo "BOLT-INFO: basic block reordering modified layout of 5 functions"
"""


def test_bolt_copies_the_compiles_binary_first_and_keeps_it_across_its_own_install(tmp_path):
    """bolt-instrument starts by copying the installed server; bolt-optimize installs its output over
    it. An instrument phase run again alone (a new llvm-bolt) keeps the compile's copy; one run again
    after a new install (the phases chain) takes the new binary."""
    fake = tmp_path / "llvm-bolt"
    fake.write_text(FAKE_BOLT)
    fake.chmod(0o755)
    layout = BuildLayout(tmp_path / "build")
    installed = FakeTarget().server_binary(layout.install_dir)
    installed.parent.mkdir(parents=True)
    installed.write_bytes(b"linked server")
    installed.chmod(0o755)
    reporter, servers = Reporter(), FakeServers()
    ctx = BoltContext(dir=layout.bolt_dir, installed=installed, tool=BoltProfile(str(fake), "merge-fdata"),
                      sealed_digest=lambda d, t, r: "digest", state_file=layout.state_file,
                      train=parse_train("none", 1), runner=Runners(layout.logs), servers=servers,
                      reporter=reporter)
    assert [p.name for p in bolt_phases(ctx)] == ["bolt-instrument", "bolt-train", "bolt-merge", "bolt-optimize"]
    steps = BoltSteps(ctx)
    steps.instrument()
    assert steps.input.read_bytes() == b"linked server"
    assert steps.instrumented.read_bytes() == b"linked server bolted\n"
    assert steps.optimize()["stats"]["reordered"] == 5
    # llvm-bolt writes its command line into the server: no path of this build's home in it
    args = [line for line in (layout.logs / "bolt-optimize.log").read_text().splitlines() if line.startswith("ARGS:")]
    assert args and str(tmp_path) not in args[-1] and "-data=profile/" in args[-1], args
    assert installed.read_bytes() == b"linked server bolted\n"
    assert installed.stat().st_mode & 0o777 == 0o755, "the installed server keeps the compile's mode"
    steps.instrument()                                   # again alone: the input is still the compile's
    assert steps.input.read_bytes() == b"linked server"
    installed.write_bytes(b"linked server, compiled again")   # a new install: the input follows it
    steps.instrument()
    assert steps.input.read_bytes() == b"linked server, compiled again"
    # The installed binary is BOLT's and the copy is lost: refused, with the way out.
    steps.optimize()
    steps.input.unlink()
    with pytest.raises(PgolabError, match="the binary BOLT starts from"):
        steps.instrument()


def bolt_context(tmp_path, fake: Path):
    """A build folder with an installed server and the BOLT phases' context around the fake llvm-bolt."""
    fake.chmod(0o755)
    layout = BuildLayout(tmp_path / "build")
    installed = FakeTarget().server_binary(layout.install_dir)
    installed.parent.mkdir(parents=True)
    installed.write_bytes(b"linked server")
    reporter = Reporter()
    ctx = BoltContext(dir=layout.bolt_dir, installed=installed, tool=BoltProfile(str(fake), "merge-fdata"),
                      sealed_digest=lambda d, t, r: "digest", state_file=layout.state_file,
                      train=parse_train("none", 1), runner=Runners(layout.logs), servers=FakeServers(),
                      reporter=reporter)
    return layout, installed, reporter, ctx


def test_a_crashed_llvm_bolt_runs_again_once_and_a_second_crash_is_reported_as_bolts_fault(tmp_path):
    """llvm-bolt 16 died of SIGSEGV now and then on a MariaDB server: one crash runs it again; two end
    the phase with BOLT's fault named and the way out."""
    crashes = tmp_path / "crashes-left"
    fake = tmp_path / "llvm-bolt"
    fake.write_text(FAKE_BOLT.replace("# llvm-bolt's shape", f"""n=$(cat {crashes}); if [ "$n" -gt 0 ]; then
  echo $((n - 1)) > {crashes}; echo "Stack dump:"; kill -SEGV $$; fi
# llvm-bolt's shape"""))
    layout, installed, reporter, ctx = bolt_context(tmp_path, fake)
    crashes.write_text("1")
    assert BoltSteps(ctx).instrument()["instrumented_bytes"] > 0
    assert any("killed by signal 11" in m for m in reporter.messages), reporter.messages
    crashes.write_text("2")
    with pytest.raises(PgolabError, match=r"exit -11") as failed:
        BoltSteps(ctx).instrument()
    assert "crashed 2 times" in failed.value.hint and "_clang19" in failed.value.hint
    assert (layout.logs / "bolt-instrument.log").read_text().count("Stack dump:") >= 3


def test_no_stage_imports_the_build_nor_names_the_pipeline():
    for path in STAGES.glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
        assert not any(m and (m == "build" or m.endswith(".build")) for m in imported), path
        # Neither in code nor in a (string) annotation; docstrings may speak of it.
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and len(n.value) < 80}
        assert not any("Pipeline" in name for name in names), path


def test_an_emission_failure_runs_bolt_again_keeping_unreachable_code_and_a_function_it_asks_to_skip_is_left(tmp_path):
    """BOLT 19 could not write one clang-19 build after removing unreachable code: the instrument step
    runs again with the elimination off, the optimize step starts with it, and both still leave a
    function BOLT then asks to skip."""
    fake = tmp_path / "llvm-bolt"
    fake.write_text(FAKE_BOLT.replace("# llvm-bolt's shape", """case "$*" in
  *--eliminate-unreachable=false*) ;;
  *) echo "<unknown>:0: error: Undefined temporary symbol .Ltmp141231"; echo "BOLT-ERROR: Emission failed."; exit 1;;
esac
case "$*" in
  *--skip-funcs=ExecInterpExpr/1*) ;;
  *) echo "BOLT-ERROR: unable to get new address corresponding to input address 0x874ba0 in function \\
ExecInterpExpr/1(*2). Consider adding this function to --skip-funcs=..."; exit 1;;
esac
# llvm-bolt's shape"""))
    layout, installed, reporter, ctx = bolt_context(tmp_path, fake)
    steps = BoltSteps(ctx)
    instrumented = steps.instrument()
    assert (instrumented["added_options"], instrumented["skipped_functions"]) == (
        ["--eliminate-unreachable=false"], ["ExecInterpExpr/1"])
    optimized = steps.optimize()
    assert (optimized["added_options"], optimized["skipped_functions"]) == (
        ["--eliminate-unreachable=false"], ["ExecInterpExpr/1"])
    assert installed.read_bytes() == b"linked server bolted\n"
    assert sum("again with --eliminate-unreachable=false" in m for m in reporter.messages) == 1, \
        "the optimize step starts with what the instrument step needed"
    assert (layout.logs / "bolt-optimize.log").read_text().count("### exit") == 1
    # An output failure the option does not mend is reported, not run again for ever.
    fake.write_text(FAKE_BOLT.replace("# llvm-bolt's shape", """echo "<unknown>:0: error: Undefined temporary symbol .Ltmp1"
echo "BOLT-ERROR: Emission failed."; exit 1
# llvm-bolt's shape"""))
    with pytest.raises(PgolabError, match=r"llvm-bolt -instrument failed \(exit 1\)"):
        BoltSteps(ctx).instrument()
