"""Thread sweeps, tables, pgbench's scripts and the user's own files without servers: the plan, the stored keys, resuming a run stored before
sweeps, and the report's per-thread table, notes and chart from a fake measure."""

import pytest

from pgolab import bench, report, suite
from pgolab.errors import PgolabError
from pgolab.clients import Sysbench
from pgolab.fleet import cpu_split
from pgolab.measurement import BenchOptions, Sample
from pgolab.measures.qps import QpsMeasure
from pgolab.render import export
from pgolab.store import Store

from test_measures import FakeExecutor, FakeFleet, fake_targets

# b gains at 1 thread and loses at 4: a sweep must show both, not their mean only.
SPEED = {("a", 1): 1000.0, ("b", 1): 1250.0, ("a", 4): 3000.0, ("b", 4): 2700.0}


class SweepExecutor(FakeExecutor):
    def measure(self, micro, step):
        qps = SPEED[(step.label, micro.threads)] * self.random.gauss(1, 0.005)
        return Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, 0.0)


class SweepQps(QpsMeasure):
    def executor(self, fleet, options, labels):
        return SweepExecutor(fleet, options, labels)


def run_sweep(tmp_path, monkeypatch, threads=(1, 4)):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    options = BenchOptions(suite="quick", instances=2, blocks=2, threads=threads)
    bench.run_bench(store, "sweep", "a", fake_targets(tmp_path), options, "test", measures=[SweepQps()],
                    fleet_factory=FakeFleet)
    return store, options


def test_a_sweep_runs_each_test_at_every_count_in_group_order():
    micros = suite.planned("quick", (1, 4))
    assert len(micros) == 2 * len(suite.QUICK)
    keys = [suite.key(m) for m in micros]
    assert keys[:2] == ["point-1/point-query@1t", "point-1/point-query@4t"]
    assert [suite.threads_of(k) for k in keys[:2]] == [1, 4]
    assert suite.without_threads(keys[1]) == "point-1/point-query"
    # Groups keep their order: every read of point-1 before any write.
    groups = [m.group for m in micros]
    assert groups.index("writes") > max(i for i, g in enumerate(groups) if g == "point-1")
    # One count keeps the plain keys of runs stored before sweeps.
    assert [suite.key(m) for m in suite.planned("quick", (8,))] == [suite.key(m) for m in suite.QUICK]


def test_sysbench_runs_each_test_at_its_own_count_and_table_count(tmp_path):
    class Server:
        rundir = tmp_path

        class installation:
            @staticmethod
            def sysbench_args(rundir, database):
                return []
    micro = suite.planned("quick", (1, 4))[1]
    argv = Sysbench().argv(micro, Server, BenchOptions(threads=(1, 4), tables=3), seconds=1)
    assert "--threads=4" in argv and "--tables=3" in argv


@pytest.mark.parametrize("text, counts", [("1", (1,)), ("4,1,2,2", (1, 2, 4)), (" 1, 8 ", (1, 8))])
def test_thread_counts_parse_ascending_and_once(text, counts):
    assert suite.parse_threads(text) == counts


@pytest.mark.parametrize("text", ["", "0", "two", "1,-2"])
def test_a_bad_thread_count_is_refused_in_one_line(text):
    with pytest.raises(PgolabError, match="--threads takes"):
        suite.parse_threads(text)


def test_a_run_stored_before_sweeps_reads_and_resumes_as_one_count():
    old = BenchOptions.from_dict({"suite": "quick", "threads": 4, "tables": 1})
    assert old.threads == (4,)
    assert old.identity()["threads"] == 4          # what such a run stored
    assert BenchOptions(threads=(1, 2)).identity()["threads"] == (1, 2)


def test_the_report_gives_each_count_its_ratio_level_and_chart(tmp_path, monkeypatch):
    store, _ = run_sweep(tmp_path, monkeypatch)
    samples = store.sample_count(store.run("sweep").id)
    run_sweep(tmp_path, monkeypatch)      # the same sweep again resumes: nothing measured twice
    assert store.sample_count(store.run("sweep").id) == samples
    data = report.compute(store, "sweep")
    rows = {(r["build"], r["threads"]): r for r in data.table("threads").rows}
    assert rows[("b", 1)]["qps"].value == pytest.approx(1.25, rel=0.01)
    assert rows[("b", 1)]["qps_verdict"] == "faster"
    assert rows[("b", 4)]["qps"].value == pytest.approx(0.9, rel=0.01)
    assert rows[("b", 4)]["qps_verdict"] == "slower"
    assert rows[("a", 4)]["level"] == pytest.approx(3000, rel=0.01) and rows[("a", 4)]["qps"] is None
    assert any("threads 1 and 4" in f for f in data.facts)
    concurrency = dict(data.notes)["Concurrency"]
    assert "At 4 threads" in concurrency
    sweep = [c for c in data.charts if c.key.startswith("threads-")]
    assert {c.key for c in sweep} >= {"threads-rQPS-suite", "threads-rQPS-point-1", "threads-rQPS-writes"}
    suite_chart = next(c for c in sweep if c.key == "threads-rQPS-suite")
    assert suite_chart.xs == [1, 4]
    assert suite_chart.series["b"] == [pytest.approx(1250, rel=0.01), pytest.approx(2700, rel=0.01)]
    files = export(data, tmp_path / "out")
    assert files["png-threads-rQPS-suite"].stat().st_size > 10_000
    assert "Per build and thread count" in files["markdown"].read_text()


def test_a_run_of_one_count_has_no_sweep_table_or_chart(tmp_path, monkeypatch):
    store, _ = run_sweep(tmp_path, monkeypatch, threads=(1,))
    data = report.compute(store, "sweep")
    assert "threads" not in {t.key for t in data.tables}
    assert not [c for c in data.charts if c.key.startswith("threads-")]
    assert "Concurrency" not in dict(data.notes)


@pytest.mark.parametrize("cores, threads, says", [
    (2, (1, 2, 8), ["pinned to 1 of the machine's 2 CPUs", "At 1 thread each server connection could have a CPU",
                    "At 2 and 8 threads the server's connections shared 1 CPU (2 and 8 per CPU)"]),
    (16, (1, 8), ["pinned to 8 of the machine's 16 CPUs", "At 1 and 8 threads each server connection"]),
])
def test_the_concurrency_note_says_where_the_threads_ran(cores, threads, says):
    line = QpsMeasure().concurrency_line(BenchOptions(threads=threads), cores)
    for text in says:
        assert text in line
    assert cpu_split(cores)[0] + cpu_split(cores)[1] == cores and cpu_split(1) is None


def test_own_microbenchmarks_join_the_suite_last_in_a_group_of_their_own(tmp_path):
    sql, lua = tmp_path / "copy.sql", tmp_path / "mine.lua"
    sql.write_text("SELECT 1;\n")
    lua.write_text("function event() end\n")
    micros = suite.planned("quick", (1,), (str(sql), str(lua)))
    assert [suite.key(m) for m in micros[-2:]] == ["user/copy", "user/mine"]
    assert micros[-2].argv(suite.lua_dir())[1:] == [f"--sql-file={sql}"] and micros[-1].argv(suite.lua_dir()) == [str(lua)]
    assert all(m.state_dependent for m in micros[-2:])     # they may write: cost repeats them
    only = BenchOptions(suite="none", own_micros=(str(sql),))
    assert [suite.key(m) for m in only.micros()] == ["user/copy"]
    assert set(only.identity()["own_micros"]) == {"copy"}
    assert "own_micros" not in BenchOptions().identity()    # runs stored before --micro resume


@pytest.mark.parametrize("name, text, message", [
    ("missing.sql", None, "no such file"), ("notes.txt", "x", "neither a .lua nor a .sql"),
])
def test_a_bad_micro_file_is_refused_in_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(PgolabError, match=message):
        suite.user_micros((str(path),))


def test_two_micro_files_of_one_name_and_an_empty_run_are_refused(tmp_path):
    (tmp_path / "a").mkdir()
    for folder in (tmp_path, tmp_path / "a"):
        (folder / "same.sql").write_text("SELECT 1;")
    with pytest.raises(PgolabError, match="two files named same"):
        suite.user_micros((str(tmp_path / "same.sql"), str(tmp_path / "a" / "same.sql")))
    with pytest.raises(PgolabError, match="measures nothing"):
        BenchOptions(suite="none").micros()


def test_pgbench_reports_read_as_statements_per_second(tmp_path):
    from pathlib import Path
    from pgolab.clients import Pgbench
    text = (Path(__file__).parent / "data" / "pgbench-15-tpcb-like.txt").read_text()
    result = Pgbench().parse(text)
    # TPC-B (sort of): BEGIN, 3 UPDATEs, SELECT, INSERT, END per transaction.
    assert result.transactions == 2517 and result.queries == 7 * 2517
    assert result.qps == pytest.approx(7 * 2545.803218) and result.latency_ms == {"avg": 0.786}
    assert not result.fatal
    with pytest.raises(Exception, match="no pgbench summary"):
        Pgbench().parse("pgbench: error: connection to server failed")


def test_pgbench_runs_each_script_at_its_count_and_refuses_mysql_servers(tmp_path):
    from pgolab.clients import Pgbench, pgbench_scale, needed
    micro = suite.planned("pgbench", (1, 4))[1]
    assert suite.key(micro) == "pgbench/select-only@4t" and micro.client == "pgbench"

    class Server:
        rundir = tmp_path

        class installation:
            port = 5433
    argv = Pgbench().argv(micro, Server, BenchOptions(threads=(1, 4)), events=100)
    assert argv[argv.index("-c") + 1] == "4" and argv[argv.index("-j") + 1] == "4"
    assert argv[argv.index("-t") + 1] == "25" and argv[argv.index("-b") + 1] == "select-only"
    assert pgbench_scale(BenchOptions(tables=8, table_size=100_000)) == 8
    assert [c.name for c in needed(suite.planned("quick,pgbench"))] == ["sysbench", "pgbench"]

    class MariaDB:
        server, sysbench_driver = "mariadb", "mysql"
    with pytest.raises(PgolabError, match="pgbench drives PostgreSQL only, not mariadb"):
        Pgbench().check(MariaDB)
    with pytest.raises(PgolabError, match="unknown suite 'pgbench2'"):
        suite.suite("quick,pgbench2")


def test_training_connections_reach_both_loads_and_name_the_training_only_when_asked():
    from pgolab.workloads import parse_train
    default = parse_train("mix,sysbench", 60)
    # Builds trained before the option keep their digest: nothing about connections in it.
    assert default.label == "mix,sysbench" and "connections" not in default.digest_input()
    assert default.mix_options(30, "mix").connections == 4 and default.client_threads == 2
    three = parse_train("mix,sysbench", 60, connections=3)
    assert three.label == "mix,sysbench at 3 connections" and three.digest_input() != default.digest_input()
    assert three.mix_options(30, "mix-noselect").connections == 3 and three.mix_options(30, "mix-noselect").no_select
    assert three.client_threads == 3
    with pytest.raises(PgolabError, match="--train-connections 0"):
        parse_train("mix", 60, connections=0)
