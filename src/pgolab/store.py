"""The results store: one SQLite file, written one measurement per transaction.

A crash loses at most the measurement in flight. Reports are computed from here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from . import paths

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    server TEXT NOT NULL,
    base TEXT NOT NULL,
    suite TEXT NOT NULL,
    options TEXT NOT NULL,      -- JSON: rounds, seconds, tables, rows, threads, prepared, ...
    host TEXT NOT NULL,         -- JSON: cpu model, cores, kernel, memory
    commands TEXT NOT NULL,     -- JSON list: the pgolab command lines that produced the run
    status TEXT NOT NULL        -- running | finished | failed
);
CREATE TABLE IF NOT EXISTS targets (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    label TEXT NOT NULL,        -- variant name or the name given with --binary NAME=PATH
    kind TEXT NOT NULL,         -- variant | binary
    server_binary TEXT NOT NULL,
    description TEXT NOT NULL,  -- JSON: the build record (compiler, versions, flags, source, digest)
    PRIMARY KEY (run_id, label)
);
CREATE TABLE IF NOT EXISTS measurements (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    micro TEXT NOT NULL,
    grp TEXT NOT NULL,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,  -- order within the round (interleaving)
    label TEXT NOT NULL,
    qps REAL NOT NULL,
    tps REAL NOT NULL,
    seconds REAL NOT NULL,
    queries INTEGER NOT NULL,
    transactions INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    reconnects INTEGER NOT NULL,
    latency TEXT NOT NULL,      -- JSON: min avg max p95 (p50 p99)
    cpu_user_s REAL,
    cpu_sys_s REAL,
    cpu_us_per_query REAL,
    command TEXT NOT NULL,
    output TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (run_id, micro, round, label)
);
"""


def default_path() -> Path:
    return paths.home() / "results.sqlite"


@dataclass
class Measurement:
    micro: str
    group: str
    round: int
    position: int
    label: str
    qps: float
    tps: float
    seconds: float
    queries: int
    transactions: int
    errors: int
    reconnects: int
    latency: dict
    cpu_user_s: float | None
    cpu_sys_s: float | None
    cpu_us_per_query: float | None
    command: str = ""
    output: str = ""


class Store:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    # -- runs ---------------------------------------------------------------
    def create_or_resume_run(self, name: str, *, server: str, base: str, suite: str, options: dict,
                             host: dict, command: str) -> tuple[int, bool]:
        """The run's id and whether it already existed (a resume)."""
        row = self.db.execute("SELECT id, options, base, suite, commands FROM runs WHERE name = ?",
                              (name,)).fetchone()
        if row:
            commands = json.loads(row["commands"])
            if command not in commands:
                commands.append(command)
            with self.db:
                self.db.execute("UPDATE runs SET status = 'running', commands = ? WHERE id = ?",
                                (json.dumps(commands), row["id"]))
            return row["id"], True
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (name, created, server, base, suite, options, host, commands, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running')",
                (name, time.strftime("%Y-%m-%dT%H:%M:%S"), server, base, suite, json.dumps(options),
                 json.dumps(host), json.dumps([command])))
        return cur.lastrowid, False

    def run(self, name_or_id: str | int | None = None) -> sqlite3.Row | None:
        if name_or_id is None:
            return self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        if isinstance(name_or_id, int) or str(name_or_id).isdigit():
            row = self.db.execute("SELECT * FROM runs WHERE id = ?", (int(name_or_id),)).fetchone()
            if row:
                return row
        return self.db.execute("SELECT * FROM runs WHERE name = ?", (str(name_or_id),)).fetchone()

    def runs(self) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM runs ORDER BY id").fetchall()

    def set_status(self, run_id: int, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    # -- targets --------------------------------------------------------------
    def add_target(self, run_id: int, label: str, kind: str, server_binary: str, description: dict) -> None:
        with self.db:
            self.db.execute("INSERT OR REPLACE INTO targets VALUES (?, ?, ?, ?, ?)",
                            (run_id, label, kind, server_binary, json.dumps(description)))

    def targets(self, run_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM targets WHERE run_id = ? ORDER BY rowid", (run_id,)).fetchall()

    # -- measurements -------------------------------------------------------
    def has(self, run_id: int, micro: str, round_: int, label: str) -> bool:
        return self.db.execute("SELECT 1 FROM measurements WHERE run_id=? AND micro=? AND round=? AND label=?",
                               (run_id, micro, round_, label)).fetchone() is not None

    def add(self, run_id: int, m: Measurement) -> None:
        with self.db:
            self.db.execute(
                "INSERT OR REPLACE INTO measurements (run_id, micro, grp, round, position, label, qps, tps, "
                "seconds, queries, transactions, errors, reconnects, latency, cpu_user_s, cpu_sys_s, "
                "cpu_us_per_query, command, output, created) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, m.micro, m.group, m.round, m.position, m.label, m.qps, m.tps, m.seconds, m.queries,
                 m.transactions, m.errors, m.reconnects, json.dumps(m.latency), m.cpu_user_s, m.cpu_sys_s,
                 m.cpu_us_per_query, m.command, m.output, time.strftime("%Y-%m-%dT%H:%M:%S")))

    def measurements(self, run_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM measurements WHERE run_id = ? ORDER BY id", (run_id,)).fetchall()
