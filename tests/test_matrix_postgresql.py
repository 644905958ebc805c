"""`pgolab matrix` on PostgreSQL: a subset that covers every axis, killed during its benchmark and run
again; the clang PGO pipeline inside it, context-sensitive and under BOLT, end to end. Its own file, so
that it runs beside the gcc pipeline (test_pipeline_postgresql.py) on the other pytest-xdist worker."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from postgresql_pipeline import (TRAIN_SECONDS, assert_pipeline_record, pg_tree, pgolab,  # noqa: F401 (fixture)
                                 wait_until_gone)


# The matrix subset CI runs covers every axis in two builds: gcc and -O3 in the base, and clang with
# -O2 -fno-omit-frame-pointer, -march=native, LTO, PGO (context-sensitive) and BOLT in the other.
MATRIX_BASE = "rel"
MATRIX_VARIANT = "rel_o2nofp_native_lto_pgo_use_cs_clang_bolt"


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
def test_matrix_covers_every_axis_survives_sigkill_mid_benchmark_and_bolts_a_clang_pgo_build(pg_tree, tmp_path):
    store = tmp_path / "matrix.sqlite"
    cmd = pgolab("matrix", str(pg_tree.path), "--variants", MATRIX_VARIANT, "--base", MATRIX_BASE,
                 "--train-seconds", str(TRAIN_SECONDS), "--suite", "quick", "--seconds", "1", "--instances", "1",
                 "--blocks", "2", "--table-size", "5000", "--store", str(store), "--run", "ci-matrix-{binaries}",
                 "--out", str(tmp_path / "report"))
    # SIGKILL in the middle of the benchmark: no server may outlive pgolab, no step may be lost or doubled.
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline and proc.poll() is None and stored_samples(store) < 4:
        time.sleep(0.2)
    assert proc.poll() is None, "the matrix ended before its benchmark stored 4 samples"
    proc.kill()
    proc.wait()
    from pgolab import paths
    run_dirs = list(paths.runs_dir().glob("ci-matrix-*"))
    assert len(run_dirs) == 1 and "{" not in run_dirs[0].name   # named after the two builds' binaries
    assert wait_until_gone(run_dirs[0]) == [], "a benchmark server outlived pgolab"
    kept = stored_samples(store)
    assert kept >= 4

    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    output = rerun.stdout + rerun.stderr
    assert rerun.returncode == 0, output
    assert "matrix 2/2 builds" in output.replace("\n", " ")
    for label in (MATRIX_BASE, MATRIX_VARIANT):
        assert f"{label}: up to date" in output, label          # nothing was built twice
    assert stored_samples(store) > kept
    import sqlite3

    from pgolab import suite
    with sqlite3.connect(store) as db:
        keys = db.execute("SELECT micro, instance, block, label FROM samples WHERE mode = 'qps'").fetchall()
        excluded = db.execute("SELECT count(*) FROM excluded").fetchone()[0]
    assert len(keys) == len(set(keys)), "no step stored twice"
    assert len(keys) == len(suite.QUICK) * 1 * 2 * 2 + 2 * excluded, "no step lost"
    assert not list((Path(os.environ["PGOLAB_HOME"]) / "scratch").glob("*")), "no scratch folder is left"

    from pgolab import report
    from pgolab.record import BuildRecord
    from pgolab.store import Store
    assert [r["name"] for r in Store(store).runs()] == [run_dirs[0].name], "the same binaries continue their run"
    timing = (tmp_path / "report" / "matrix-timing.jsonl").read_text().splitlines()
    assert len(timing) == 1 and json.loads(timing[0])["built_now"] == 0   # the killed invocation logged none
    data = report.compute(Store(store), run_dirs[0].name)
    assert [r["build"] for r in data.table("builds").rows] == [MATRIX_VARIANT]
    assert {r["build"] for r in data.table("groups").rows} == {MATRIX_VARIANT}
    cost = {r["build"]: r for r in data.table("build_cost").rows}
    assert cost[MATRIX_VARIANT]["wall_min"] > 0 and cost[MATRIX_BASE]["code_mib"] > 1
    assert "re-laid out" in cost[MATRIX_VARIANT]["bolt"]

    # The clang PGO pipeline, context-sensitive, under the BOLT layout: its profile was used and holds
    # context-sensitive counts from the second instrumented build, BOLT re-laid out functions with a
    # matching profile, and the BOLTed server answered.
    record = BuildRecord.find(MATRIX_VARIANT, pg_tree.path)
    assert_pipeline_record(record.as_dict(), "clang")
    assert record.profile["merge"]["cs_functions"] > 100
    assert {"csgen-train", "csgen-check-profile", "csgen-gen-build"} <= set(record.phases)
    assert any(f.startswith("-fcs-profile-generate=") for f in record.flags["gen"]["compile"])
    assert record.toolchain["clang"].startswith("16")
    stats = record.bolt["bolt-optimize"]["stats"]
    assert stats["reordered"] > 100 and stats["matched_share"] > 0.9 and stats["stale"] == 0
    assert "-Wl,--emit-relocs" in record.flags["final"]["link"]
    assert record.bolt["bolt-merge"]["branch_count"] > 0
