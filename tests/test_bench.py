"""The benchmark on real servers: cost mode on Debian's mariadbd, QPS slices with resume, the whole
catalog once, PostgreSQL through sysbench's pgsql driver, and a resume refused after a binary changed.
These check that measuring works and is stored exactly once; the statistics are tested on synthetic
data (test_stats.py), never by asserting a live A/A outcome."""

import shutil
from pathlib import Path

import pytest

from pgolab import bench, report, suite
from pgolab.targets.base import CostEntry
from pgolab.errors import PgolabError
from pgolab.render import export
from pgolab.record import BinaryInfo
from pgolab.store import Store
from pgolab.targets import MariaDBInstallation, PostgreSQLInstallation

from conftest import need


def debian_mariadb(label, binary=None):
    need("mariadbd")
    need("sysbench")
    inst = MariaDBInstallation.system()
    if binary:
        inst.server_binary = binary
    return bench.BenchTarget(label, "binary", inst, BinaryInfo(str(binary), "", "Debian mariadbd"))


def stored_commands(store, run_id) -> dict[str, str]:
    """Each stored sample's sysbench command line, by microbenchmark key."""
    return dict(store.db.execute("SELECT micro, command FROM samples WHERE run_id = ?", (run_id,)).fetchall())


@pytest.mark.slow
def test_cost_mode_counts_statement_execution_reproducibly(tmp_path):
    need("valgrind")
    store = Store(tmp_path / "results.sqlite")
    # Both servers measured at once (--cost-jobs 2): simulated counts must not notice.
    options = bench.BenchOptions(suite="quick", modes=("cost",), table_size=10000, cost_scale=0.5, cost_jobs=2)
    # As in a clang LTO+PGO build, where dispatch_command is inlined into do_command: b's first candidate
    # exists but a query never enters it. The probe finds that, and both targets count do_command.
    b = debian_mariadb("b")
    b.installation.cost_entry_points = (CostEntry("mysql_rm_db(*)"),
                                        *b.installation.cost_entry_points[1:])
    run_id = bench.run_bench(store, "cost", "a", [debian_mariadb("a"), b], options, "test")
    samples = store.samples(run_id, "cost")
    # One measurement of each read-only test; writes, and reads after them, depend on InnoDB's
    # background threads and repeat.
    assert len(samples) == sum(options.cost_write_repeats if m.state_dependent else 1 for m in suite.QUICK) * 2
    # Debian's mariadbd is stripped but exports its command functions: only statement execution is counted.
    assert {s.detail["method"] for s in samples} == {"toggle-collect on do_command(*)"}
    by = {(s.step.micro, s.step.label): s.values for s in samples}
    point = by[("point-1/point-query", "a")]
    assert 20_000 < point["instructions"] < 120_000 and point["i1_misses"] > 100
    # The same binary on the same statements, measured side by side: read-only figures agree within
    # 0.5 % (instructions) and 1 % (I1 misses).
    for m in suite.QUICK:
        if m.state_dependent:
            continue
        a, b = by[(suite.key(m), "a")], by[(suite.key(m), "b")]
        assert abs(a["instructions"] / b["instructions"] - 1) < 0.005, (m.name, a, b)
        assert abs(a["i1_misses"] / b["i1_misses"] - 1) < 0.01, (m.name, a, b)
    data = report.compute(store, "cost")
    row = data.table("builds").rows[0]
    assert all(row[f] is not None and row[f].low < row[f].value < row[f].high for f in ("cycles", "instructions"))
    # A/A outcomes are asserted only where they repeat: the reading groups (point-2's post-write point
    # query within 0.1 % in every stored MariaDB A/A run). The two write tests' per-run A/A means have
    # an RMS of 4.55 % in the 6 committed quick-suite A/A pairs (docs/results/cost-mode-checks/
    # aa-write-tests.py), so the whole quick suite's A/A figure has an SD near 0.9 % (one CI run read
    # 0.977 in instructions); it is left to the intervals.
    groups = {(r["group"], r["figure"].split(",")[0]): r for r in data.table("groups").rows}
    for group in ("point-1", "range-1", "range-2", "point-2"):
        for figure in ("rInstr", "rI1"):
            assert groups[(group, figure)]["geomean"].value == pytest.approx(1.0, abs=0.01), (group, figure)
            assert groups[(group, figure)]["verdict"] == "same", (group, figure)
    assert ("writes", "rInstr") in groups
    assert any(t.key == "cost" for t in data.tables)


@pytest.mark.slow
def test_qps_slices_are_paired_balanced_and_resume_exactly(tmp_path):
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", table_size=10000, slice_seconds=1, instances=2, blocks=2,
                                 warmup_seconds=1)
    targets = [debian_mariadb("a"), debian_mariadb("b")]
    interrupted = []

    def stop_midway(progress):
        if progress.done >= 9 and not interrupted:
            interrupted.append(progress.done)
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        bench.run_bench(store, "aa", "a", targets, options, "pgolab bench (test)", stop_midway)
    run_id = store.run("aa").id
    assert store.run("aa").status == "interrupted" and len(store.samples(run_id)) == 9
    bench.run_bench(store, "aa", "a", targets, options, "pgolab bench (test, resumed)")
    samples = store.samples(run_id)
    keys = [(s.step.micro, s.step.instance, s.step.block, s.step.label) for s in samples]
    assert len(keys) == len(set(keys)), "no step stored twice"
    excluded = store.excluded(run_id)
    assert len(samples) == len(suite.QUICK) * 2 * 2 * 2 + 2 * len(excluded)
    assert all(s.values["qps"] > 0 and s.values["cpu_us"] > 0 for s in samples)
    first = [s for s in samples if s.step.micro == "point-1/point-query" and s.step.instance == 1
             and s.step.block <= 2]
    assert [s.step.label for s in sorted(first, key=lambda s: (s.step.block, s.step.position))] == \
        ["a", "b", "b", "a"]
    assert store.run("aa").status == "finished" and len(store.run("aa").commands) == 2
    files = export(report.compute(store, "aa"), tmp_path / "out")
    assert "Per build" in files["markdown"].read_text()


@pytest.mark.slow
def test_qps_slices_record_other_work_on_the_machine_and_the_report_says_it_was_not_idle(tmp_path):
    """A CPU-bound process beside the slices (unpinned: it takes what the server and sysbench leave)
    must show as other work; without the per-slice reading the report would call the machine idle."""
    import subprocess
    import sys
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", table_size=10000, slice_seconds=1, instances=1, blocks=1,
                                 warmup_seconds=1)
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        bench.run_bench(store, "busy", "a", [debian_mariadb("a"), debian_mariadb("b")], options, "pgolab bench (test)")
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    samples = store.samples(store.run("busy").id)
    other = sorted(s.detail["other_cores"] for s in samples)
    assert other[len(other) // 2] > 0.3, other
    facts = report.compute(store, "busy").facts
    assert any("THE MACHINE WAS NOT IDLE" in line for line in facts), facts


@pytest.mark.slow
def test_a_resume_is_refused_after_a_target_binary_changed(tmp_path, server_tmp):
    copy = server_tmp / "mariadbd"
    shutil.copy2("/usr/sbin/mariadbd", copy)
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", table_size=1000, slice_seconds=1, instances=1, blocks=2,
                                 warmup_seconds=1)
    targets = [debian_mariadb("a"), debian_mariadb("b", copy)]

    def stop(progress):
        raise KeyboardInterrupt
    for name in ("changed", "rebuilt-{binaries}"):
        with pytest.raises(KeyboardInterrupt):
            bench.run_bench(store, name, "a", targets, options, "test", stop)
    with open(copy, "ab") as f:
        f.write(b"\0")
    with pytest.raises(PgolabError, match=r"targets\.b differ"):
        bench.run_bench(store, "changed", "a", targets, options, "test")
    # A name carrying {binaries} starts a run of its own for the changed binary.
    with pytest.raises(KeyboardInterrupt):
        bench.run_bench(store, "rebuilt-{binaries}", "a", targets, options, "test", stop)
    rebuilt = [r.name for r in store.runs() if r.name.startswith("rebuilt-")]
    assert len(rebuilt) == 2 and rebuilt[0] != rebuilt[1]
    other = bench.BenchOptions(**{**options.as_dict(), "slice_seconds": 2})
    with pytest.raises(PgolabError, match=r"options\.slice_seconds"):
        bench.run_bench(store, "changed", "a", [debian_mariadb("a"), debian_mariadb("b")], other, "test")


@pytest.mark.slow
def test_every_microbenchmark_of_the_full_catalog_runs_on_two_tables_at_two_thread_counts(tmp_path):
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="full", slice_seconds=1, instances=1, blocks=1, table_size=5000,
                                 warmup_seconds=1, tables=2, threads=(1, 2))
    run_id = bench.run_bench(store, "catalog", "a", [debian_mariadb("a")], options, "test")
    samples = store.samples(run_id)
    assert {s.step.micro for s in samples} == {suite.key(m) for m in suite.planned("full", (1, 2))}
    assert all(s.detail["queries"] > 0 for s in samples)
    commands = stored_commands(store, run_id)
    assert "--threads=2" in commands["point-1/hot-points@2t"] and "--tables=2" in commands["point-1/hot-points@2t"]
    assert "--threads=1" in commands["writes/update-one@1t"]


@pytest.mark.slow
def test_short_suite_on_postgresql_swept_over_two_thread_counts_on_two_tables(tmp_path):
    need("sysbench")
    targets = [bench.BenchTarget(l, "binary", PostgreSQLInstallation.system("15"), BinaryInfo("", "15", "")) for l in ("pg-a", "pg-b")]
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="quick", instances=1, blocks=2, slice_seconds=1, table_size=5000,
                                 warmup_seconds=1, tables=2, threads=(1, 2))
    run_id = bench.run_bench(store, "pg", "pg-a", targets, options, "test")
    samples = store.samples(run_id)
    assert len(samples) >= len(suite.QUICK) * 2 * 2 * 2 and all(s.values["qps"] > 0 for s in samples)
    # The postmaster's reaped backends carry the CPU time, at each count.
    assert all(s.values["cpu_us"] > 0 for s in samples)
    assert {suite.threads_of(s.step.micro) for s in samples} == {1, 2}
    assert all("--tables=2" in c for c in stored_commands(store, run_id).values())
    data = report.compute(store, "pg")
    assert [(r["build"], r["threads"]) for r in data.table("threads").rows] == [
        ("pg-a", 1), ("pg-a", 2), ("pg-b", 1), ("pg-b", 2)]
    assert all(r["level"] > 0 for r in data.table("threads").rows)


EXAMPLE_SQL = Path(__file__).parent.parent / "examples" / "insert-select.sql"
SELECT_ONE_LUA = """function thread_init() drv = sysbench.sql.driver(); con = drv:connect() end
function event() con:query("SELECT 1") end
function thread_done() con:disconnect() end
"""


@pytest.mark.slow
def test_pgbench_scripts_and_own_microbenchmarks_run_in_both_measures_and_an_edited_file_is_another_run(tmp_path):
    need("sysbench")
    need("valgrind")
    lua = tmp_path / "select-one.lua"
    lua.write_text(SELECT_ONE_LUA)
    targets = [bench.BenchTarget(l, "binary", PostgreSQLInstallation.system("15"), BinaryInfo("", "15", ""))
               for l in ("pg-a", "pg-b")]
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="pgbench", modes=("qps", "cost"), own_micros=(str(EXAMPLE_SQL), str(lua)),
                                 instances=1, blocks=2, slice_seconds=1, table_size=2000, warmup_seconds=1,
                                 cost_scale=0.2, cost_write_repeats=2)
    run_id = bench.run_bench(store, "own", "pg-a", targets, options, "test")
    samples = store.samples(run_id)
    for mode, figure in (("qps", "qps"), ("cost", "instructions")):
        measured = {(s.step.micro, s.step.label) for s in samples if s.step.mode == mode and s.values[figure] > 0}
        keys = ("pgbench/select-only", "pgbench/simple-update", "pgbench/tpcb-like", "user/insert-select",
                "user/select-one")
        assert measured == {(k, l) for k in keys for l in ("pg-a", "pg-b")}
    by = {(s.step.micro, s.step.mode): s.values for s in samples if s.step.label == "pg-a"}
    # Three statements per event, 1,000 rows each insert: far more work per statement than SELECT 1.
    assert by[("user/insert-select", "cost")]["instructions"] > 20 * by[("user/select-one", "cost")]["instructions"]
    assert {"pgbench", "user"} <= {r["group"] for r in report.compute(store, "own").table("groups").rows}
    # pgbench's commands: its own client, prepared statements, the run's seed per block.
    assert "pgbench -h" in stored_commands(store, run_id)["pgbench/tpcb-like"]
    lua.write_text(SELECT_ONE_LUA.replace("SELECT 1", "SELECT 2"))
    with pytest.raises(PgolabError, match="own_micros"):
        bench.run_bench(store, "own", "pg-a", targets, options, "test")


@pytest.mark.slow
def test_tables_load_in_the_engine_asked_and_a_missing_engine_is_refused_with_what_adds_it(tmp_path):
    lua = tmp_path / "select-one.lua"
    lua.write_text(SELECT_ONE_LUA)
    store = Store(tmp_path / "results.sqlite")
    options = bench.BenchOptions(suite="none", own_micros=(str(lua),), instances=1, blocks=1, slice_seconds=1,
                                 table_size=100, warmup_seconds=1, engine="aria")
    run_id = bench.run_bench(store, "aria", "a", [debian_mariadb("a"), debian_mariadb("b")], options, "test")
    assert len(store.samples(run_id)) == 2
    # Aria keeps a table in .MAD and .MAI files (InnoDB: .ibd).
    assert (bench.paths.runs_dir() / "aria" / "golden" / "sbtest" / "sbtest1.MAI").exists()
    assert store.run("aria").identity["options"]["engine"] == "aria"
    # MyRocks is a plugin: Debian's (mariadb-plugin-rocksdb, which setup installs) is loaded for the run.
    rocks = bench.BenchOptions(**{**options.as_dict(), "engine": "rocksdb"})
    run_id = bench.run_bench(store, "rocks", "a", [debian_mariadb("a"), debian_mariadb("b")], rocks, "test")
    assert len(store.samples(run_id)) == 2
    assert (bench.paths.runs_dir() / "rocks" / "golden" / "#rocksdb").is_dir()
    # A server whose plugin folder lacks it is refused, with what adds it.
    bare = debian_mariadb("a")
    bare.installation.plugin_dir = tmp_path
    with pytest.raises(PgolabError, match="a has no storage engine rocksdb") as refused:
        bench.run_bench(store, "rocks-bare", "a", [bare, debian_mariadb("b")], rocks, "test")
    assert "mariadb-plugin-rocksdb" in refused.value.hint and "--engine rocksdb" in refused.value.hint
    pg = [bench.BenchTarget(l, "binary", PostgreSQLInstallation.system("15"), BinaryInfo("", "15", ""))
          for l in ("pg-a", "pg-b")]
    with pytest.raises(PgolabError, match="pg-a has no storage engine myisam"):
        bench.run_bench(store, "pg", "pg-a", pg, bench.BenchOptions(**{**options.as_dict(), "engine": "myisam"}),
                        "test")


def test_a_base_named_by_no_target_is_a_built_variant(tmp_path, monkeypatch):
    """`--base rel_o2nofp --variant rel_pgo_use` compares the two builds: the base need not be
    repeated as a --variant."""
    need("mariadbd")
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path))
    with pytest.raises(PgolabError, match="no finished build of 'rel_o2nofp'"):
        bench.resolve_targets("rel_o2nofp", [], ["distro=/usr/sbin/mariadbd"])
    targets = bench.resolve_targets("distro", [], ["distro=/usr/sbin/mariadbd", "again=/usr/sbin/mariadbd"])
    assert [t.label for t in targets] == ["distro", "again"]


def test_binaries_in_a_run_name_stand_for_the_targets_digests():
    digests = {"a": "1" * 64, "b": "2" * 64}
    name = bench.resolve_run_name("m-{binaries}", digests)
    assert name.startswith("m-") and len(name) == len("m-") + 8 and "{" not in name
    assert bench.resolve_run_name("m-{binaries}", dict(reversed(digests.items()))) == name
    assert bench.resolve_run_name("m-{binaries}", {**digests, "b": "3" * 64}) != name
    assert bench.resolve_run_name("m-{binaries}", {"a": "2" * 64, "b": "1" * 64}) != name   # labels count
    assert bench.resolve_run_name("plain", digests) == "plain"
    import hashlib
    import json
    assert name == "m-" + hashlib.sha256(json.dumps(sorted(digests.items())).encode()).hexdigest()[:8], \
        "the names of stored runs (cost) stay what they were"
    # A run whose figures belong to its machine (QPS): the same binaries elsewhere are another run.
    here, there = {"cpu": "AMD EPYC", "cpu_id": "family 25"}, {"cpu": "Intel Xeon", "cpu_id": "family 6"}
    assert bench.resolve_run_name("m-{binaries}", digests, here) not in (name, bench.resolve_run_name(
        "m-{binaries}", digests, there))
    assert bench.resolve_run_name("m-{binaries}", digests, dict(reversed(here.items()))) == \
        bench.resolve_run_name("m-{binaries}", digests, here)


def test_a_qps_run_begun_under_its_older_name_goes_on_under_it_on_its_host(tmp_path):
    """Run names took the host of a QPS run on 2026-12-05: a run this host began before keeps its name
    (and continues), another host's run of that name is not taken, and a new run takes the new name."""
    from pgolab.host import Host
    from pgolab.measurement import BenchOptions
    from pgolab.store import Store
    store = Store(tmp_path / "s.sqlite")
    digests = {"a": "1" * 64}
    host = {"cpu": "AMD EPYC", "cpu_id": "family 25"}
    identity = {"targets": digests, "host": host}
    older = bench.resolve_run_name("q-{binaries}", digests)
    assert bench._named_with_host(store, "q-{binaries}", digests, identity) == \
        bench.resolve_run_name("q-{binaries}", digests, host) != older
    store.create_or_resume_run(older, server="mariadb", base="a", suite="quick", options=BenchOptions(),
                               host=Host.from_dict({"cpu": "AMD EPYC", "cpu_id": "family 25", "cores": 2,
                                                    "memory_gib": 1, "kernel": "k"}),
                               identity=identity, command="pgolab bench (before)")
    assert bench._named_with_host(store, "q-{binaries}", digests, identity) == older
    elsewhere = {**identity, "host": {"cpu": "Intel Xeon", "cpu_id": "family 6"}}
    assert bench._named_with_host(store, "q-{binaries}", digests, elsewhere) == \
        bench.resolve_run_name("q-{binaries}", digests, elsewhere["host"])
    assert bench._named_with_host(store, "q-{binaries}", digests, {"targets": digests}) == older   # cost: as ever
