"""The training mix against Debian's mariadbd and PostgreSQL: every class it claims ran,
without error, as the servers' own counters show."""

import re
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest

from pgolab.mix import CLASSES, ENGINES, MixOptions
from pgolab.runner import Runner
from pgolab.server import ServerProcess, initialize_datadir
from pgolab.targets import MariaDBInstallation, PostgreSQLInstallation
from pgolab.workloads import TRAIN_DATABASE, parse_train, run_mix, run_training

from conftest import need

OPTIONS = MixOptions(statements=400, connections=3, rows=500, seed=7)
# Long enough on MariaDB for each prepared text to run many times (and for 10 rounds of DDL).
MARIADB_OPTIONS = replace(OPTIONS, statements=2000)


def started(installation, tmp_path, options=()):
    runner = Runner(tmp_path / "mix.log")
    initialize_datadir(installation, tmp_path / "data", runner)
    rundir = Path(tempfile.mkdtemp(prefix="pgolab-mix-"))
    if installation.run_as:
        from pgolab.paths import chown_tree
        chown_tree(rundir, installation.run_as)
    return ServerProcess(installation, tmp_path / "data", rundir, runner, options=list(options)), runner


@pytest.mark.slow
def test_mix_on_debian_mariadb_covers_every_class(tmp_path):
    need("mariadbd")
    spec = parse_train("mix", 10)
    server, runner = started(MariaDBInstallation.system(), tmp_path,
                             spec.server_options(MariaDBInstallation.system(), tmp_path / "data"))
    with server:
        report = run_mix(server, MARIADB_OPTIONS, runner)
    assert report.errors == []
    assert set(report.counts) == set(CLASSES) | {"ddl"}
    assert report.counts["ddl"] == 10
    # Debian's MyRocks plugin (setup installs it) is loaded for the training and given tables too.
    plugins = tuple(e.table_engine for e in MariaDBInstallation.system().plugin_engines())
    assert plugins == ("RocksDB",), "Debian's MyRocks plugin is missing: run scripts/setup-system.sh"
    for engine in ENGINES["mariadb"] + plugins:
        assert report.coverage[f"mix_{engine.lower()}_t"] > 0
    for mode in ("off", "STATEMENT", "MIXED", "ROW"):
        assert report.coverage[f"binlog_{mode}"] > 0
    assert report.coverage["prepared"] > 0 and report.coverage["text"] > 0
    c = report.server_counters
    for counter in ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
                    "Com_stmt_prepare", "Com_stmt_execute", "Com_create_table", "Com_alter_table",
                    "Com_drop_table", "Binlog_commits", "Innodb_buffer_pool_write_requests", "Aria_pagecache_read_requests",
                    "Key_read_requests"):
        assert c[counter] > 0, f"{counter} did not move: {c}"
    # The client's count of commits and rollbacks is what the server saw (at least).
    assert c["Com_commit"] >= report.counts["txn_commit"]
    assert c["Com_rollback"] >= report.counts["txn_rollback"]
    # Prepared once per connection and statement text, then executed again and again (as sysbench
    # does): the prepares the server counted beyond its own re-prepares are the client's. And the
    # binary-log mode is SET only when it changes, not before every statement.
    assert c["Com_stmt_prepare"] - c["Com_stmt_reprepare"] == report.prepares > 0, (report.prepares, c)
    # The DDL alters tables of its own, so it leaves the prepared statements valid. Measured with
    # these options: Com_stmt_prepare 126, Com_stmt_reprepare 0, Com_stmt_execute 3275 (26 executes
    # per prepare). With the DDL on the statements' tables it was 1043, 917 and 4192 (MariaDB counts
    # a re-prepare in Com_stmt_prepare and its execution twice in Com_stmt_execute): 4 per prepare.
    # With MyRocks's tables as a fourth engine: 168 prepares, 3275 executes (19.5 per prepare).
    assert c["Com_stmt_reprepare"] * 50 <= c["Com_stmt_prepare"], c
    assert c["Com_stmt_execute"] >= 15 * c["Com_stmt_prepare"], c
    statements = sum(report.counts.values())
    assert c["Com_set_option"] < statements / 2, (c["Com_set_option"], statements)


@pytest.mark.slow
def test_mix_without_select_runs_no_select(tmp_path):
    need("mariadbd")
    server, runner = started(MariaDBInstallation.system(), tmp_path)
    with server:
        report = run_mix(server, MixOptions(statements=150, connections=2, rows=300, no_select=True), runner)
    assert report.errors == [] and not any(k.startswith("select") for k in report.counts)
    assert "join" not in report.counts and report.counts["update_indexed"] > 0


@pytest.mark.slow
def test_mix_on_postgresql_uses_both_protocols(server_tmp):
    pg = PostgreSQLInstallation.system("15")
    if not pg.server_binary.exists():
        pytest.fail("Debian's postgresql-15 is not installed: run scripts/setup-system.sh")
    if pg.run_as:
        from pgolab.paths import chown_tree
        chown_tree(server_tmp, pg.run_as)
    server, runner = started(pg, server_tmp)
    with server:
        report = run_mix(server, OPTIONS, runner)
    assert report.errors == []
    assert set(report.counts) == set(CLASSES) | {"ddl"}
    assert report.coverage["prepared"] > 0 and report.coverage["text"] > 0
    c = report.server_counters
    for counter in ("xact_commit", "xact_rollback", "tup_inserted", "tup_updated", "tup_deleted", "tup_fetched",
                    "idx_scan"):
        assert c[counter] > 0, f"{counter} did not move: {c}"


@pytest.mark.slow
def test_a_server_crash_during_the_mix_is_reported_with_its_error_log_at_once(tmp_path):
    """SIGKILL of the server mid-mix: the mix stops within seconds (not at its deadline, with
    thousands of failed statements) and the error names the dead server and its log."""
    import os
    import signal
    import threading
    import time
    from pgolab.errors import PgolabError
    need("mariadbd")
    server, runner = started(MariaDBInstallation.system(), tmp_path)
    with server:
        threading.Timer(4, lambda: os.kill(server.proc.pid, signal.SIGKILL)).start()
        began = time.monotonic()
        with pytest.raises(PgolabError, match=r"server died \(exit -9\)") as err:
            run_mix(server, MixOptions(seconds=120, connections=2, rows=300), runner)
        assert time.monotonic() - began < 30
    assert "error log tail" in str(err.value)


def test_the_ddl_alters_no_table_a_statement_uses():
    """DDL on a table invalidates the prepared statements that use it (MariaDB and MySQL re-prepare
    them, PostgreSQL re-plans them): the mix's DDL keeps to tables of its own."""
    from pgolab.mix import MySQLMix, PostgreSQLMix

    class Recorder:
        def __init__(self): self.sql = []
        def cursor(self): return self
        def execute(self, sql, params=()): self.sql.append(sql)
        def close(self): pass

    def words(sql):
        return set(sql.replace("(", " ").replace(",", " ").split())

    for server in ("mariadb", "mysql"):
        mix, conn = MySQLMix("/nonexistent.sock", OPTIONS, server=server), Recorder()
        mix.ddl(conn, 0, 0)
        used = {name for pair in mix.tables() for name in pair}
        assert conn.sql and not any(words(sql) & used for sql in conn.sql), conn.sql
        assert all(any(d in sql for sql in conn.sql) for d in mix.ddl_tables())
    pg, conn = PostgreSQLMix("/nonexistent", 5432, OPTIONS), Recorder()
    pg.execute = lambda c, sql, params, prepared: conn.execute(sql)
    pg.ddl(conn, 0, 0)
    used = {name for pair in pg.tables() for name in pair}
    assert conn.sql and not any(words(sql) & used for sql in conn.sql), conn.sql
    assert any("mix_ddl" in sql for sql in conn.sql)


def test_mix_is_deterministic_for_a_seed():
    import random
    from pgolab.mix import _params
    a = [_params("select_pk_range", random.Random(3), 1000, 1) for _ in range(3)]
    b = [_params("select_pk_range", random.Random(3), 1000, 1) for _ in range(3)]
    assert a == b


@pytest.mark.slow
def test_concurrent_deletes_do_not_collide_on_postgresql(server_tmp):
    """Deletes put their row back; with few rows and several connections, two workers
    deleting the same id would both re-insert it and fail on the primary key."""
    pg = PostgreSQLInstallation.system("15")
    if pg.run_as:
        from pgolab.paths import chown_tree
        chown_tree(server_tmp, pg.run_as)
    server, runner = started(pg, server_tmp)
    with server:
        report = run_mix(server, MixOptions(statements=300, connections=4, rows=20, seed=3, no_select=True), runner)
    assert report.errors == []
    assert report.counts["delete"] > 20


def test_postgresql_s_ddl_table_is_made_again_before_its_dropped_columns_reach_the_limit(server_tmp, monkeypatch):
    """PostgreSQL counts dropped columns against a table's 1,600: the mix's DDL adds and drops one
    column a run, and at one connection a training ran it 1,595 times. Here every 5th run makes the
    table again (at the start of runs 5 and 10): after 12 runs it carries the dropped columns of 3
    runs, not of 12."""
    from pgolab.mix import PostgreSQLMix
    pg = PostgreSQLInstallation.system("15")
    if pg.run_as:
        from pgolab.paths import chown_tree
        chown_tree(server_tmp, pg.run_as)
    monkeypatch.setattr(PostgreSQLMix, "DDL_RENEWAL", 5)
    server, runner = started(pg, server_tmp)
    with server:
        mix = pg.training_mix(server.rundir, MixOptions(statements=12 * 200, connections=1, rows=50, seed=3))
        report = mix.run(alive=server.running)
        assert report.errors == [] and report.counts["ddl"] == 12
        with mix.connect() as conn:
            top = conn.execute("SELECT max(attnum) FROM pg_attribute WHERE attrelid = 'mix_ddl'::regclass"
                               ).fetchone()[0]
    # mix_t's 5 columns, and one dropped column for each of runs 10, 11 and 12.
    assert top == 5 + 3
    assert PostgreSQLMix.DDL_RENEWAL == 5 and 1000 + 5 < 1600


@pytest.mark.slow
def test_a_sql_training_script_runs_its_statements_in_a_loop_over_sysbench_tables(tmp_path):
    """`--train script:FILE.sql` trains with the file as `bench --micro` runs it: sysbench's tables
    loaded first, the statements repeated for the load's seconds (the study trained its statement
    with itself)."""
    need("mariadbd")
    need("sysbench")
    example = Path(__file__).parent.parent / "examples" / "insert-select.sql"
    spec = parse_train(f"script:{example}", 3)
    server, runner = started(MariaDBInstallation.system(), tmp_path)
    with server:
        summary = run_training(server, spec, runner)
        copied = server.query("SELECT COUNT(*) FROM pgolab_copy", database=TRAIN_DATABASE, what="count")
    assert summary == [f"script {example}: its statements in a loop, 3s"]
    assert copied == "1000"
    log = runner.log_path.read_text()
    assert "oltp_read_write" in log and "prepare" in log and f"--sql-file={example}" in log
    # More than one event in the 3 seconds: the file ran in a loop, not once.
    events = re.search(r"total number of events:\s*(\d+)", log)
    assert events and int(events.group(1)) > 1, log[-2000:]
