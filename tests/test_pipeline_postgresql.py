"""The whole PGO pipeline on PostgreSQL, with gcc and with clang, end to end.

Instrumented build, training run (sysbench through the pgsql driver), profile
merge, optimized build, proof that the profile was used, and a query against
the optimized server. The gcc run is first interrupted during training, to
show that nothing is left running and that the re-run continues. The clang
pipeline runs inside `pgolab matrix`, under BOLT, interrupted during its benchmark.
"""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pgolab import profiles, sources
from pgolab.build import BuildRequest, variant_dir
from pgolab.quality import profile_check
from pgolab.runner import Runner
from pgolab.variants import parse
from pgolab.workloads import parse_train

from conftest import need

TRAIN_SECONDS = 20


@pytest.fixture(scope="module")
def pg_tree(tmp_path_factory):
    need("apt-get")
    need("sysbench")
    return sources.fetch_debian("postgresql", None, Runner(tmp_path_factory.mktemp("src") / "source.log"))


def pgolab(*args: str) -> list[str]:
    return [sys.executable, "-m", "pgolab", *args]


def postgres_processes(under: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "postgres"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if str(under) in line]


def assert_pipeline_record(record: dict, compiler: str) -> None:
    merge = record["profile"]["merge"]
    assert merge["raw_files"] > 0 and merge["raw_bytes"] > 0, "the training run wrote profile files"
    check = record["profile"]["check-profile"]
    assert check["objects"] > 100
    # The backend's objects (the bulk of the tree) must have used the profile.
    assert check["with_profile"] > check["objects"] // 3, check
    if compiler == "clang":
        assert merge["functions"] > 1000 and merge["max_function_count"] > 0
    assert record["smoke"] and "PostgreSQL 15" in record["smoke"]
    assert Path(record["server_binary"]).exists()


@pytest.mark.slow
def test_gcc_pipeline_survives_an_interrupt_and_uses_its_profile(pg_tree):
    variant = parse("rel_pgo_use")
    vdir = variant_dir(pg_tree, variant.name, sources.tree_digest(pg_tree.path))
    cmd = pgolab("build", str(pg_tree.path), "--variant", variant.name, "--train-seconds", str(TRAIN_SECONDS))
    # A shell started in the background (nohup ... &) hands its children SIGINT ignored, and
    # Python then installs no KeyboardInterrupt handler: restore it, as a terminal would have it.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    train_log = vdir / "logs" / "train.log"
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline and proc.poll() is None:
        if train_log.exists() and "training mix" in train_log.read_text(errors="replace"):
            break
        time.sleep(1)
    assert proc.poll() is None, proc.stdout.read()
    time.sleep(3)
    proc.send_signal(signal.SIGINT)
    output = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130, output
    assert "interrupted" in output
    assert postgres_processes(vdir) == [], "no server left running after Ctrl-C"
    gen_state = json.loads((vdir.parent / "rel_pgo_gen" / "state.json").read_text())
    assert "build" in gen_state["phases"], "the instrumented build finished before the interrupt"
    state = json.loads((vdir / "state.json").read_text())
    assert "train" not in state["phases"]

    rerun = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=3000)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "gen-build: compile instrumented build (up to date, skipped)" in rerun.stderr.replace("\n", " ") \
        or "gen-build" in rerun.stderr and "skipped" in rerun.stderr
    record = json.loads(rerun.stdout)[0]
    assert_pipeline_record(record, "gcc")
    assert postgres_processes(vdir) == []

    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "up to date" in again.stderr

    # A second training of the same variant, under its own label, reuses the instrumented build
    # and writes its own profile.
    other = subprocess.run(pgolab("build", str(pg_tree.path), "--variant", variant.name, "--label", "noselect",
                                  "--train", "mix-noselect", "--train-seconds", str(TRAIN_SECONDS), "--json"),
                           capture_output=True, text=True, timeout=3000)
    assert other.returncode == 0, other.stdout + other.stderr
    assert re.search(r"gen-build: compile instrumented build\s+\(up to date, skipped\)", other.stderr), other.stderr
    other_record = json.loads(other.stdout)[0]
    assert_pipeline_record(other_record, "gcc")
    assert other_record["training"] == "mix-noselect" and other_record["label"] == "noselect"
    noselect_profile = vdir.parent / "noselect" / "profile"
    gcc = profiles.GccProfile()
    assert gcc.digest(noselect_profile) != gcc.digest(vdir / "profile")
    assert not list((vdir.parent / "rel_pgo_gen" / "profile").glob("*.gcda")), \
        "trainings write to their own folders, not the directory compiled into the instrumented build"

    # How well the training profile covers the benchmark suite, from the same instrumented build.
    check = profile_check(BuildRequest(pg_tree, variant, parse_train("mix", TRAIN_SECONDS)),
                          suite="quick", seconds=2)
    assert 0.05 < check.overlap <= 1.0
    assert check.functions_benchmark > 100 and check.functions_training > 100
    record = json.loads((vdir / "build.json").read_text())
    # The build's record, which bench reports describe a target from, states the figure.
    assert record["profile_check"]["overlap"] == check.overlap
    assert json.loads((vdir / "profile-check.json").read_text())["training"] == "mix"


# The matrix subset CI runs covers every axis in two builds: gcc, -O3 and PGO in the base (the gcc
# pipeline's build above, same training: found up to date, as CI time needs), and clang with
# -O2 -fno-omit-frame-pointer, -march=native, LTO, PGO and BOLT in the other.
MATRIX_BASE = "rel_pgo_use"
MATRIX_VARIANT = "rel_o2nofp_native_lto_pgo_use_clang_bolt"


def stored_samples(store_path: Path) -> int:
    import sqlite3
    if not store_path.exists():
        return 0
    with sqlite3.connect(store_path) as db:
        try:
            return db.execute("SELECT count(*) FROM samples").fetchone()[0]
        except sqlite3.OperationalError:
            return 0


@pytest.mark.slow
def test_matrix_covers_every_axis_survives_an_interrupt_and_bolts_a_clang_pgo_build(pg_tree, tmp_path):
    store = tmp_path / "matrix.sqlite"
    cmd = pgolab("matrix", str(pg_tree.path), "--variants", MATRIX_VARIANT, "--base", MATRIX_BASE,
                 "--train-seconds", str(TRAIN_SECONDS), "--suite", "quick", "--seconds", "1", "--instances", "1",
                 "--blocks", "2", "--table-size", "5000", "--store", str(store), "--run", "ci-matrix")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline and proc.poll() is None and stored_samples(store) < 4:
        time.sleep(2)
    assert proc.poll() is None, proc.stdout.read()
    proc.send_signal(signal.SIGINT)
    first = proc.communicate(timeout=300)[0]
    assert proc.returncode == 130 and "interrupted" in first, first
    kept = stored_samples(store)
    assert kept >= 4

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output
    assert "matrix 2/2 builds" in output.replace("\n", " ")
    for label in (MATRIX_BASE, MATRIX_VARIANT):
        assert f"{label}: up to date" in output, label          # nothing was built twice
    assert stored_samples(store) > kept

    from pgolab import report
    from pgolab.record import BuildRecord
    from pgolab.store import Store
    data = report.compute(Store(store), "ci-matrix")
    assert [r["build"] for r in data.table("builds").rows] == [MATRIX_VARIANT]
    assert {r["build"] for r in data.table("groups").rows} == {MATRIX_VARIANT}
    cost = {r["build"]: r for r in data.table("build_cost").rows}
    assert cost[MATRIX_VARIANT]["wall_min"] > 0 and cost[MATRIX_BASE]["code_mib"] > 1
    assert "re-laid out" in cost[MATRIX_VARIANT]["bolt"]

    # The clang PGO pipeline under the BOLT layout: its profile was used, BOLT re-laid out functions
    # with a matching profile, and the BOLTed server answered.
    record = BuildRecord.find(MATRIX_VARIANT, pg_tree.path)
    assert_pipeline_record(record.as_dict(), "clang")
    assert record.toolchain["clang"].startswith("16")
    stats = record.bolt["bolt-optimize"]["stats"]
    assert stats["reordered"] > 100 and stats["matched_share"] > 0.9 and stats["stale"] == 0
    assert "-Wl,--emit-relocs" in record.flags["final"]["link"]
    assert record.bolt["bolt-merge"]["branch_count"] > 0


@pytest.mark.slow
def test_cost_mode_on_postgresql_builds(pg_tree, tmp_path):
    """Cost mode on two PostgreSQL builds (the gcc PGO build and its mix-noselect twin from the test
    above). Backends are forked per connection: their counts come from the files they write as they
    exit, collected only inside the per-message handlers."""
    from pgolab import bench, report, suite
    from pgolab.store import Store
    need("valgrind")
    targets = bench.resolve_targets("rel_pgo_use", ["noselect"], [], pg_tree.path)
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", modes=("cost",), table_size=5000, cost_scale=0.25)
    run_id = bench.run_bench(store, "pg-cost", "rel_pgo_use", targets, options, "test")
    samples = store.samples(run_id, "cost")
    assert len(samples) == sum(options.cost_write_repeats if m.state_dependent else 1 for m in suite.QUICK) * 2
    assert all(s.detail["method"] == "toggle-collect on PostgresMain" for s in samples)
    point = next(s for s in samples if s.step.micro == "point-1/point-query")
    assert 5_000 < point.values["instructions"] < 500_000 and point.values["i1_misses"] > 10
    rows = report.compute(store, "pg-cost").table("builds").rows
    assert rows[0]["build"] == "noselect" and rows[0]["cycles"].value > 0
