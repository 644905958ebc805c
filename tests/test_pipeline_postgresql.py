"""The whole PGO pipeline on PostgreSQL, with gcc and with clang, end to end.

Instrumented build, training run (sysbench through the pgsql driver), profile
merge, optimized build, proof that the profile was used, and a query against
the optimized server. The gcc run is first killed (SIGKILL) once in each phase,
to show that no server outlives pgolab and that the re-run continues. The clang
pipeline, context-sensitive and under BOLT, runs inside `pgolab matrix` (test_matrix_postgresql.py).
"""

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from pgolab import profiles, sources
from pgolab.build import BuildRequest, variant_dir
from pgolab.quality import profile_check
from pgolab.variants import parse
from pgolab.workloads import parse_train

from conftest import need
from postgresql_pipeline import (TRAIN_SECONDS, assert_pipeline_record, pg_tree, pgolab,  # noqa: F401 (fixture)
                                 postgres_processes, wait_until_gone)


# Where a SIGKILL lands: (build folder, phase, log the phase writes, text that shows it is under way).
# gcc's merge phase runs no command (libgcov merged the counters as they were written): no moment to hit.
KILL_POINTS = [
    ("rel_pgo_gen", "configure", "configure.log", "checking"),
    ("rel_pgo_gen", "build", "build.log", "make"),
    ("rel_pgo_use", "train", "train.log", "training mix"),
    ("rel_pgo_use", "configure", "configure.log", "checking"),
    ("rel_pgo_use", "build", "build.log", "make"),
    ("rel_pgo_use", "smoke", "smoke.log", "start server"),
]


def kill_during(cmd: list[str], folder: Path, phase: str, log_name: str, marker: str) -> None:
    """Start the command, SIGKILL pgolab once `phase` has written `marker` to its log in this attempt."""
    log = folder / "logs" / log_name
    offset = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 2400
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.stat().st_size > offset:
            with log.open(errors="replace") as f:
                f.seek(offset)
                if marker in f.read():
                    break
        time.sleep(0.2)
    assert proc.poll() is None, f"pgolab ended before {folder.name} {phase} started"
    proc.kill()
    proc.wait()
    state = json.loads((folder / "state.json").read_text())
    assert phase not in state["phases"], f"{phase} had finished before the kill"


@pytest.mark.slow
def test_gcc_pipeline_survives_sigkill_in_every_phase_and_uses_its_profile(pg_tree):
    variant = parse("rel_pgo_use")
    vdir = variant_dir(pg_tree, variant.name, sources.tree_digest(pg_tree.path))
    cmd = pgolab("build", str(pg_tree.path), "--variant", variant.name, "--train-seconds", str(TRAIN_SECONDS))
    for folder, phase, log_name, marker in KILL_POINTS:
        kill_during(cmd, vdir.parent / folder, phase, log_name, marker)
        # The server a killed pgolab started gets SIGTERM from the kernel (PR_SET_PDEATHSIG): clean exit.
        assert wait_until_gone(vdir.parent) == [], f"a server outlived pgolab killed in {folder} {phase}"

    rerun = subprocess.run(cmd + ["--json"], capture_output=True, text=True, timeout=3000)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert re.search(r"gen-build: compile instrumented build\s+\(up to date, skipped\)", rerun.stderr)
    record = json.loads(rerun.stdout)[0]
    assert_pipeline_record(record, "gcc")
    assert postgres_processes(vdir) == []
    home = Path(os.environ["PGOLAB_HOME"])
    assert not list((home / "scratch").glob("*")), "no scratch folder is left"

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
    options = bench.BenchOptions(suite="quick", modes=("cost",), table_size=5000, cost_scale=0.25, cost_jobs=2)
    run_id = bench.run_bench(store, "pg-cost", "rel_pgo_use", targets, options, "test")
    samples = store.samples(run_id, "cost")
    assert len(samples) == sum(options.cost_write_repeats if m.state_dependent else 1 for m in suite.QUICK) * 2
    assert all(s.detail["method"] == "toggle-collect on PostgresMain" for s in samples)
    point = next(s for s in samples if s.step.micro == "point-1/point-query")
    assert 5_000 < point.values["instructions"] < 500_000 and point.values["i1_misses"] > 10
    rows = report.compute(store, "pg-cost").table("builds").rows
    assert rows[0]["build"] == "noselect" and rows[0]["cycles"].value > 0
