"""The built-in training mix: a broad, varied load through the servers' real protocols.

A broad load trains the paths a benchmark does not see too, and protects them
from regressions; a narrow copy of the benchmark does not. For MariaDB/MySQL it
covers InnoDB, MyISAM and Aria (MariaDB) or MEMORY (MySQL); binary log off,
STATEMENT, MIXED and ROW (those the server still accepts); prepared statements
(binary protocol, each prepared once per connection and executed many times, as
sysbench does) and text queries; several connections;
DDL, on tables of its own that no other statement uses (one per engine, with the
same rows): DDL on a table makes the server re-prepare, or re-plan, every prepared
statement that uses it (MariaDB counts those in Com_stmt_prepare as well as in
Com_stmt_reprepare): with the DDL on the statements' own tables, 38,901 of 39,069
prepares in a training run were re-prepares;
single and multi-row inserts; point and range selects by primary and
secondary key; joins; aggregates; ORDER BY, GROUP BY, DISTINCT; subqueries;
indexed and non-indexed updates; deletes; transactions that commit and roll
back. For PostgreSQL the same through the simple and the extended query
protocol. The statement sequence is a function of the seed; the run length is
a duration or a number of statements per connection.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from .errors import PgolabError

MIX_DATABASE = "pgolab_mix"
# Part of a training's identity: a build trained by an older mix trains again. 2: the DDL runs on
# tables of its own, so it no longer invalidates the prepared statements (issue 35).
MIX_REVISION = 2
# The storage engines the mix spreads its tables over: MySQL has no Aria.
ENGINES = {"mariadb": ("InnoDB", "Aria", "MyISAM"), "mysql": ("InnoDB", "MyISAM", "MEMORY")}
BINLOG_MODES = ("off", "STATEMENT", "MIXED", "ROW")

# class -> (weight, is a SELECT). Weights favour reads like a typical OLTP load.
CLASSES: dict[str, tuple[int, bool]] = {
    "select_pk_point": (10, True), "select_sk_point": (6, True), "select_pk_range": (5, True),
    "select_sk_range": (4, True), "join": (3, True), "aggregate_group_by": (3, True), "order_by": (3, True),
    "distinct": (2, True), "subquery": (2, True),
    "insert_single": (4, False), "insert_multi": (2, False), "update_indexed": (4, False),
    "update_nonindexed": (4, False), "delete": (2, False), "txn_commit": (2, False), "txn_rollback": (1, False),
}
SQL = {
    "select_pk_point": "SELECT c, pad FROM {t} WHERE id = %s",
    "select_sk_point": "SELECT id, c FROM {t} WHERE k = %s",
    "select_pk_range": "SELECT id, k FROM {t} WHERE id BETWEEN %s AND %s",
    "select_sk_range": "SELECT id FROM {t} WHERE k BETWEEN %s AND %s ORDER BY k LIMIT 50",
    "join": "SELECT t.id, u.v FROM {t} t JOIN {u} u ON u.t_id = t.id WHERE t.id BETWEEN %s AND %s",
    "aggregate_group_by": "SELECT MOD(k, 10), COUNT(*), SUM(n), AVG(k) FROM {t} WHERE id BETWEEN %s AND %s GROUP BY MOD(k, 10)",
    "order_by": "SELECT id, c FROM {t} WHERE id BETWEEN %s AND %s ORDER BY c DESC LIMIT 10",
    "distinct": "SELECT DISTINCT MOD(k, 50) FROM {t} WHERE id BETWEEN %s AND %s",
    "subquery": "SELECT id FROM {t} WHERE k IN (SELECT v FROM {u} WHERE t_id BETWEEN %s AND %s)",
    "update_indexed": "UPDATE {t} SET k = k + 1 WHERE id = %s",
    "update_nonindexed": "UPDATE {t} SET n = n + 1 WHERE id = %s",
    "delete": "DELETE FROM {t} WHERE id = %s",
    "insert_single": "INSERT INTO {t} (id, k, c, pad, n) VALUES (%s, %s, %s, %s, %s)",
}


@dataclass(frozen=True)
class MixOptions:
    seconds: float = 120
    statements: int | None = None     # per connection; overrides seconds when set
    connections: int = 4
    rows: int = 2000
    seed: int = 1
    no_select: bool = False

    def classes(self) -> list[str]:
        return [c for c, (_, is_select) in CLASSES.items() if not (self.no_select and is_select)]


@dataclass
class MixReport:
    server: str
    counts: Counter = field(default_factory=Counter)       # what the client ran
    coverage: Counter = field(default_factory=Counter)     # engines, binlog modes, protocols
    server_counters: dict[str, int] = field(default_factory=dict)   # deltas of the server's own counters
    errors: list[str] = field(default_factory=list)
    prepares: int = 0                                       # statements the client prepared

    def describe(self) -> str:
        lines = [f"training mix on {self.server}: {sum(self.counts.values())} statements"]
        lines.append("  classes: " + ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        lines.append("  coverage: " + ", ".join(f"{k}={v}" for k, v in sorted(self.coverage.items())))
        if self.prepares:
            lines.append(f"  statements prepared by the client: {self.prepares}")
        nonzero = {k: v for k, v in self.server_counters.items() if v}
        lines.append("  server counters: " + ", ".join(f"{k}={v}" for k, v in sorted(nonzero.items())))
        if self.errors:
            lines.append(f"  errors: {len(self.errors)} (first: {self.errors[0]})")
        return "\n".join(lines)


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789-") for _ in range(n))


def _params(cls: str, rng: random.Random, rows: int, new_id: int) -> tuple:
    first = rng.randint(1, rows)
    if cls in ("select_pk_point", "select_sk_point", "update_indexed", "update_nonindexed", "delete"):
        return (first,)
    if cls == "insert_single":
        return (new_id, rng.randint(1, rows), _text(rng, 40), _text(rng, 20), rng.randint(0, 1000))
    return (first, first + rng.randint(5, 100))


def _row(rng: random.Random, id_: int, rows: int) -> tuple:
    return (id_, rng.randint(1, rows), _text(rng, 40), _text(rng, 20), rng.randint(0, 1000))


class _Mix:
    """Shared driver logic: setup, then connections running seeded statement sequences."""

    server = ""

    def __init__(self, options: MixOptions):
        self.options = options
        self.report = MixReport(self.server)
        self.lock = threading.Lock()
        self.stop = threading.Event()

    # server-specific -------------------------------------------------------
    def connect(self): raise NotImplementedError
    def tables(self) -> list[tuple[str, str]]: raise NotImplementedError
    def create_tables(self, cur, rng: random.Random) -> None: raise NotImplementedError
    def counters(self) -> dict[str, int]: raise NotImplementedError
    def session_setup(self, conn, worker: int, step: int, rng: random.Random) -> str: return ""
    def execute(self, conn, sql: str, params: tuple, prepared: bool) -> None: raise NotImplementedError
    def ddl(self, conn, worker: int, step: int) -> None: raise NotImplementedError
    def begin(self, conn): self.execute(conn, "BEGIN", (), False)
    def close(self, conn) -> None: conn.close()

    # shared ---------------------------------------------------------------
    def run(self, alive: Callable[[], bool] = lambda: True) -> MixReport:
        """Run the workers until the deadline, or until `alive` says the server is gone (the
        workers would otherwise record failed statements until their deadline)."""
        before = self.counters()
        setup = self.connect()
        self.create_tables(setup, random.Random(self.options.seed))
        setup.close()
        threads = [threading.Thread(target=self.worker, args=(i,), daemon=True)
                   for i in range(self.options.connections)]
        for t in threads:
            t.start()
        try:
            while running := [t for t in threads if t.is_alive()]:
                running[0].join(timeout=1)
                if not alive():
                    self.stop.set()
        except BaseException:
            # Ctrl-C: let the workers finish their statement before the server is stopped.
            self.stop.set()
            for t in threads:
                t.join(timeout=10)
            raise
        if not alive():
            return self.report
        after = self.counters()
        self.report.server_counters = {k: after[k] - before.get(k, 0) for k in after}
        return self.report

    def worker(self, index: int) -> None:
        rng = random.Random(self.options.seed * 1000 + index)
        classes = self.options.classes()
        weights = [CLASSES[c][0] for c in classes]
        deadline = time.monotonic() + self.options.seconds
        limit = self.options.statements
        counts, coverage = Counter(), Counter()
        new_id = 10_000_000 * (index + 1)
        conn = self.connect()
        try:
            step = 0
            while not self.stop.is_set() and (
                    (limit is None and time.monotonic() < deadline) or (limit is not None and step < limit)):
                table, other = self.tables()[step % len(self.tables())]
                try:
                    mode = self.session_setup(conn, index, step, rng)
                except Exception as exc:   # noqa: BLE001  -- recorded; a dead server stops the run
                    with self.lock:
                        self.report.errors.append(f"session setup: {exc}")
                    step += 1
                    continue
                if mode:
                    coverage[mode] += 1
                prepared = (step // 3) % 2 == 0
                coverage["prepared" if prepared else "text"] += 1
                coverage[table] += 1
                if index == 0 and step % 200 == 0:
                    try:
                        self.ddl(conn, index, step)
                        counts["ddl"] += 1
                    except Exception as exc:   # noqa: BLE001  -- recorded, the run goes on
                        with self.lock:
                            self.report.errors.append(f"ddl: {exc}")
                cls = rng.choices(classes, weights)[0]
                try:
                    new_id += 1
                    self.statement(conn, cls, table, other, rng, prepared, new_id, index)
                    counts[cls] += 1
                except Exception as exc:   # noqa: BLE001  -- recorded, the run goes on
                    with self.lock:
                        self.report.errors.append(f"{cls} on {table}: {exc}")
                step += 1
        finally:
            self.close(conn)
            with self.lock:
                self.report.counts.update(counts)
                self.report.coverage.update(coverage)

    def statement(self, conn, cls, table, other, rng, prepared, new_id, worker) -> None:
        rows = self.options.rows
        if cls == "insert_multi":
            values = [_row(rng, new_id * 10 + j, rows) for j in range(5)]
            placeholders = ", ".join(["(%s, %s, %s, %s, %s)"] * len(values))
            flat = tuple(x for row in values for x in row)
            self.execute(conn, f"INSERT INTO {table} (id, k, c, pad, n) VALUES {placeholders}", flat, prepared)
        elif cls in ("txn_commit", "txn_rollback"):
            self.begin(conn)
            self.execute(conn, SQL["update_indexed"].format(t=table), (rng.randint(1, rows),), prepared)
            self.execute(conn, SQL["insert_single"].format(t=table), _row(rng, new_id, rows), prepared)
            self.execute(conn, "COMMIT" if cls == "txn_commit" else "ROLLBACK", (), False)
        elif cls == "delete":
            # Delete a row and put it back, so the table keeps its size. Each worker takes ids of
            # its own (id = worker + 1 modulo connections): two workers deleting the same id would
            # both put it back, and the second insert would fail on the primary key.
            id_ = rng.randrange(worker + 1, rows + 1, self.options.connections)
            self.execute(conn, SQL["delete"].format(t=table), (id_,), prepared)
            self.execute(conn, SQL["insert_single"].format(t=table), _row(rng, id_, rows), prepared)
        else:
            self.execute(conn, SQL[cls].format(t=table, u=other), _params(cls, rng, rows, new_id), prepared)


def engine_support_sql(engine: str) -> str:
    """MariaDB's and MySQL's answer to whether a storage engine is there (one row, or none)."""
    return f"SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = '{engine}'"


def engine_offered(support: str) -> bool:
    return support.upper() in ("YES", "DEFAULT")


class MySQLMix(_Mix):
    """MariaDB and MySQL through mysql-connector-python (text and binary protocol)."""

    server = "mariadb"
    COUNTERS = ("Com_select", "Com_insert", "Com_update", "Com_delete", "Com_commit", "Com_rollback",
                "Com_begin", "Com_stmt_prepare", "Com_stmt_reprepare", "Com_stmt_execute", "Com_create_table",
                "Com_alter_table", "Com_drop_table", "Com_create_index", "Com_drop_index", "Com_set_option",
                "Binlog_commits", "Innodb_buffer_pool_write_requests", "Innodb_buffer_pool_read_requests",
                "Aria_pagecache_read_requests", "Key_read_requests", "Handler_read_key", "Handler_read_next",
                "Handler_write")

    def __init__(self, socket: str, options: MixOptions, server: str = "mariadb", extra_engines: tuple[str, ...] = ()):
        self.socket = socket
        self.server = server
        self.engines = ENGINES[server] + extra_engines     # extra: plugin engines, kept if the server loaded them
        self.binlog_modes: tuple[str, ...] = BINLOG_MODES   # narrowed to what the server accepts
        self.session_mode: dict[int, str] = {}               # worker -> binlog mode its session is in
        self.prepared: dict[int, dict[str, tuple]] = {}      # id(connection) -> text -> (prepared cursor, text)
        super().__init__(options)

    def connect(self, database: str | None = MIX_DATABASE):
        import mysql.connector
        conn = mysql.connector.connect(unix_socket=self.socket, user="root", database=database,
                                       autocommit=True, use_pure=True)
        return conn

    def tables(self):
        return [(f"mix_{e.lower()}_t", f"mix_{e.lower()}_u") for e in self.engines]

    def ddl_tables(self) -> list[str]:
        """The tables the DDL alters: no other statement uses them, so no prepared statement is
        re-prepared after it."""
        return [f"mix_{e.lower()}_ddl" for e in self.engines]

    def create_tables(self, conn, rng):
        cur = conn.cursor()
        self.binlog_modes = tuple(m for m in BINLOG_MODES if self._accepts_binlog_mode(cur, m))
        self.engines = tuple(e for e in self.engines if e in ENGINES[self.server] or self._offers(cur, e))
        for e, (t, u), d in zip(self.engines, self.tables(), self.ddl_tables()):
            cur.execute(f"DROP TABLE IF EXISTS {t}, {u}, {d}")
            cur.execute(f"CREATE TABLE {t} (id INT NOT NULL PRIMARY KEY, k INT NOT NULL, c VARCHAR(120), "
                        f"pad CHAR(60), n INT) ENGINE={e}")
            cur.execute(f"CREATE INDEX k_idx ON {t} (k)")
            cur.execute(f"CREATE TABLE {u} (id INT NOT NULL PRIMARY KEY, t_id INT NOT NULL, v INT) ENGINE={e}")
            cur.execute(f"ALTER TABLE {u} ADD INDEX t_idx (t_id)")
            for start in range(1, self.options.rows + 1, 500):
                ids = range(start, min(start + 500, self.options.rows + 1))
                rows = [_row(rng, i, self.options.rows) for i in ids]
                cur.executemany(f"INSERT INTO {t} (id, k, c, pad, n) VALUES (%s, %s, %s, %s, %s)", rows)
                cur.executemany(f"INSERT INTO {u} (id, t_id, v) VALUES (%s, %s, %s)",
                                [(i, rng.randint(1, self.options.rows), rng.randint(1, self.options.rows)) for i in ids])
            # The DDL's own table: the same definition, engine and rows (copied, so the seeded
            # rows of the other tables stay what they were).
            cur.execute(f"CREATE TABLE {d} LIKE {t}")
            cur.execute(f"INSERT INTO {d} SELECT * FROM {t}")
        cur.close()

    def counters(self):
        conn = self.connect(None)
        cur = conn.cursor()
        cur.execute(f"CREATE DATABASE IF NOT EXISTS {MIX_DATABASE}")
        cur.execute("SHOW GLOBAL STATUS")
        status = {k: v for k, v in cur.fetchall()}
        conn.close()
        return {k: int(status.get(k, 0) or 0) for k in self.COUNTERS}

    @staticmethod
    def _offers(cur, engine: str) -> bool:
        cur.execute(engine_support_sql(engine))
        row = cur.fetchone()
        return engine_offered(row[0] if row else "")

    @staticmethod
    def _accepts_binlog_mode(cur, mode: str) -> bool:
        """MySQL deprecates binlog_format; a server that refuses a format is trained without it."""
        if mode == "off":
            return True
        try:
            cur.execute(f"SET SESSION binlog_format = '{mode}'")
            return True
        except Exception:   # noqa: BLE001  -- the server's refusal is the answer
            return False

    def session_setup(self, conn, worker, step, rng):
        """Switch the session's binary-log mode every 7 statements; SET only when it changes."""
        mode = self.binlog_modes[(step // 7 + worker) % len(self.binlog_modes)]
        if self.session_mode.get(worker) != mode:
            cur = conn.cursor()
            if mode == "off":
                cur.execute("SET SESSION sql_log_bin = 0")
            else:
                if self.session_mode.get(worker, "off") == "off":
                    cur.execute("SET SESSION sql_log_bin = 1")
                cur.execute(f"SET SESSION binlog_format = '{mode}'")
            cur.close()
            self.session_mode[worker] = mode
        return f"binlog_{mode}"

    def execute(self, conn, sql, params, prepared):
        if prepared and params:
            # One prepared statement per connection and text, executed again and again.
            cursors = self.prepared.setdefault(id(conn), {})
            if sql not in cursors:
                cursors[sql] = (conn.cursor(prepared=True), sql)
            # The connector re-prepares unless it is handed the very same string object again.
            cur, same_text = cursors[sql]
            cur.execute(same_text, params)
            if cur.with_rows:
                cur.fetchall()
            return
        cur = conn.cursor()
        try:
            cur.execute(sql, params or ())
            if cur.with_rows:
                cur.fetchall()
        finally:
            cur.close()

    def close(self, conn) -> None:
        cursors = self.prepared.pop(id(conn), {})
        for cur, _ in cursors.values():
            cur.close()
        conn.close()
        with self.lock:
            self.report.prepares += len(cursors)

    def begin(self, conn):
        self.execute(conn, "START TRANSACTION", (), False)

    def ddl(self, conn, worker, step):
        cur = conn.cursor()
        for d in self.ddl_tables():
            cur.execute(f"ALTER TABLE {d} ADD INDEX n_idx (n)")
            cur.execute(f"ALTER TABLE {d} DROP INDEX n_idx")
        cur.execute("CREATE TABLE IF NOT EXISTS mix_scratch (a INT PRIMARY KEY, b INT) ENGINE=InnoDB")
        cur.execute("DROP TABLE mix_scratch")
        cur.close()


class PostgreSQLMix(_Mix):
    """PostgreSQL through psycopg: the simple query protocol and the extended one (prepared)."""

    server = "postgresql"

    def __init__(self, socket_dir: str, port: int, options: MixOptions):
        self.socket_dir = socket_dir
        self.port = port
        self.ddl_runs = 0      # worker 0's DDL runs (see ddl)
        super().__init__(options)

    def connect(self, database: str = MIX_DATABASE):
        import psycopg
        return psycopg.connect(host=self.socket_dir, port=self.port, user="postgres", dbname=database,
                               autocommit=True)

    def tables(self):
        return [("mix_t", "mix_u")]

    def create_tables(self, conn, rng):
        with conn.cursor() as cur:
            cur.execute("DROP TABLE IF EXISTS mix_t, mix_u, mix_ddl")
            cur.execute("CREATE TABLE mix_t (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(120), pad CHAR(60), n INT)")
            cur.execute("CREATE INDEX k_idx ON mix_t (k)")
            cur.execute("CREATE TABLE mix_u (id INT PRIMARY KEY, t_id INT NOT NULL, v INT)")
            cur.execute("CREATE INDEX t_idx ON mix_u (t_id)")
            rows = [_row(rng, i, self.options.rows) for i in range(1, self.options.rows + 1)]
            cur.executemany("INSERT INTO mix_t (id, k, c, pad, n) VALUES (%s, %s, %s, %s, %s)", rows)
            cur.executemany("INSERT INTO mix_u (id, t_id, v) VALUES (%s, %s, %s)",
                            [(i, rng.randint(1, self.options.rows), rng.randint(1, self.options.rows))
                             for i in range(1, self.options.rows + 1)])
            cur.execute("ANALYZE mix_t")
            cur.execute("ANALYZE mix_u")
            # The DDL's own table (see `ddl`): mix_t's definition and rows, used by no other statement.
            cur.execute("CREATE TABLE mix_ddl (LIKE mix_t INCLUDING ALL)")
            cur.execute("INSERT INTO mix_ddl SELECT * FROM mix_t")

    def counters(self):
        import psycopg
        admin = psycopg.connect(host=self.socket_dir, port=self.port, user="postgres", dbname="postgres",
                                autocommit=True)
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (MIX_DATABASE,)).fetchone()
        if not exists:
            admin.execute(f"CREATE DATABASE {MIX_DATABASE}")
        admin.execute("SELECT pg_stat_force_next_flush()")
        row = admin.execute("SELECT xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, "
                            "tup_updated, tup_deleted FROM pg_stat_database WHERE datname = %s",
                            (MIX_DATABASE,)).fetchone()
        admin.close()
        names = ("xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated",
                 "tup_deleted")
        out = dict(zip(names, (int(x or 0) for x in row)))
        try:
            conn = self.connect()
            stats = conn.execute("SELECT coalesce(sum(idx_scan), 0), coalesce(sum(seq_scan), 0) "
                                 "FROM pg_stat_user_tables").fetchone()
            conn.close()
            out["idx_scan"], out["seq_scan"] = int(stats[0]), int(stats[1])
        except Exception:   # noqa: BLE001  -- tables not there yet
            out["idx_scan"] = out["seq_scan"] = 0
        return out

    def execute(self, conn, sql, params, prepared):
        if prepared and params:
            conn.execute(sql, params, prepare=True)          # extended protocol, server-side prepared
            return
        # The simple query protocol: one literal statement through PQexec.
        from psycopg import sql as _sql
        text = sql % tuple(_sql.Literal(p).as_string(conn) for p in params) if params else sql
        result = conn.pgconn.exec_(text.encode())
        if result.status not in (1, 2):   # COMMAND_OK, TUPLES_OK
            raise PgolabError(result.error_message.decode(errors="replace").strip())

    def session_setup(self, conn, worker, step, rng):
        return ""

    # PostgreSQL counts a dropped column against a table's 1,600: at one connection the mix's DDL ran
    # 1,595 times in 150 s and failed (issue 34's training-concurrency proof). mix_ddl is made again every
    # DDL_RENEWAL runs, beyond the most any of five trainings at four connections reached (684:
    # docs/results/postgresql-15-train-connections/ddl-runs-at-4-connections.txt), so that those
    # trainings run the statements they always ran.
    DDL_RENEWAL = 1000

    def ddl(self, conn, worker, step):
        """On a table of its own: DDL on mix_t or mix_u would invalidate every cached plan of the
        prepared statements that use it, re-analysed and re-planned at their next execution. Only
        worker 0 runs it."""
        self.ddl_runs += 1
        if self.ddl_runs % self.DDL_RENEWAL == 0:
            for stmt in ("DROP TABLE mix_ddl", "CREATE TABLE mix_ddl (LIKE mix_t INCLUDING ALL)",
                         "INSERT INTO mix_ddl SELECT * FROM mix_t"):
                self.execute(conn, stmt, (), False)
        for stmt in ("CREATE INDEX n_idx ON mix_ddl (n)", "DROP INDEX n_idx", "ALTER TABLE mix_ddl ADD COLUMN w INT",
                     "ALTER TABLE mix_ddl DROP COLUMN w", "CREATE TABLE mix_scratch (a INT PRIMARY KEY)",
                     "DROP TABLE mix_scratch"):
            self.execute(conn, stmt, (), False)
