"""The benchmark suite on real servers: an A/A check on Debian's mariadbd, the whole
catalog once, and a short suite on PostgreSQL through sysbench's pgsql driver."""

import json
from pathlib import Path

import pytest

from pgolab import bench, report, suite
from pgolab.store import Store
from pgolab.targets import MariaDBInstallation, PostgreSQLInstallation

from conftest import need


def debian_mariadb(label):
    need("mariadbd")
    need("sysbench")
    return bench.BenchTarget(label, "binary", MariaDBInstallation.system(), {"description": "Debian mariadbd"})


@pytest.mark.slow
def test_a_a_same_binary_shows_no_difference_and_resumes(tmp_path):
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", rounds=3, seconds=2, table_size=10000, warmup_seconds=2)
    targets = [debian_mariadb("a"), debian_mariadb("b")]
    run_id = bench.run_bench(store, "aa", "a", targets, options, "pgolab bench (test)")
    rows = store.measurements(run_id)
    assert len(rows) == len(suite.QUICK) * 3 * 2
    assert all(r["qps"] > 0 and r["cpu_us_per_query"] > 0 for r in rows)
    # Interleaving: the order alternates between rounds.
    first = [r["label"] for r in rows if r["micro"] == "point-1/point-query"]
    assert first[:2] == ["a", "b"] and first[2:4] == ["b", "a"]

    data = report.compute(store, "aa")
    summary = data["summaries"]["b"]["avg"]
    assert summary.low <= 1.0 <= summary.high, f"A/A must contain 1.0: {summary.fmt()}"
    files = report.export(data, tmp_path / "out")
    assert "| b |" in files["markdown"].read_text()
    assert json.loads(files["json"].read_text())["base"] == "a"
    assert files["html"].read_text().count("data:image/png;base64") >= 4
    assert (tmp_path / "out" / "qps-point-1.png").stat().st_size > 5000

    # A re-run of the same run name stores nothing twice.
    bench.run_bench(store, "aa", "a", targets, options, "pgolab bench (test, resumed)")
    assert len(store.measurements(run_id)) == len(rows)
    assert len(json.loads(store.run("aa")["commands"])) == 2


@pytest.mark.slow
def test_every_microbenchmark_of_the_full_catalog_runs(tmp_path):
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="full", rounds=1, seconds=1, table_size=5000, warmup_seconds=1)
    run_id = bench.run_bench(store, "catalog", "a", [debian_mariadb("a")], options, "test")
    rows = store.measurements(run_id)
    assert {r["micro"] for r in rows} == {suite.key(m) for m in suite.FULL}
    assert all(r["queries"] > 0 for r in rows)


@pytest.mark.slow
def test_short_suite_on_postgresql(tmp_path):
    need("sysbench")
    pg = Path("/usr/lib/postgresql/15/bin/postgres")
    if not pg.exists():
        pytest.fail("Debian's postgresql-15 is not installed: run scripts/setup-system.sh")
    targets = [bench.BenchTarget(l, "binary", PostgreSQLInstallation.system("15"), {}) for l in ("pg-a", "pg-b")]
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", rounds=2, seconds=1, table_size=5000, warmup_seconds=1)
    run_id = bench.run_bench(store, "pg", "pg-a", targets, options, "test")
    rows = store.measurements(run_id)
    assert len(rows) == len(suite.QUICK) * 2 * 2 and all(r["qps"] > 0 for r in rows)
    # The postmaster's reaped backends carry the CPU time.
    assert all(r["cpu_us_per_query"] and r["cpu_us_per_query"] > 0 for r in rows)
    assert report.compute(store, "pg")["summaries"]["pg-b"]["avg"].rounds == 2


def test_a_base_named_by_no_target_is_a_built_variant(tmp_path, monkeypatch):
    """`--base rel_o2nofp --variant rel_pgo_use` compares the two builds: the base need not be
    repeated as a --variant."""
    need("mariadbd")
    from pgolab.errors import PgolabError
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    with pytest.raises(PgolabError, match="no finished build of variant 'rel_o2nofp'"):
        bench.resolve_targets("rel_o2nofp", [], ["distro=/usr/sbin/mariadbd"])
    targets = bench.resolve_targets("distro", [], ["distro=/usr/sbin/mariadbd", "again=/usr/sbin/mariadbd"])
    assert [t.label for t in targets] == ["distro", "again"]
