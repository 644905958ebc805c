"""The results store: one SQLite file, written one sample per transaction.

A crash loses at most the sample in flight. Reports are computed from here. The
file carries its format version (PRAGMA user_version); a version-1 file (rounds
of QPS measurements) is migrated in place on first open. A run carries its
identity (options, suite, host, each target's binary digest): a resume with a
different identity is refused, naming the key that differs.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .errors import PgolabError
from .host import Host
from .measurement import BenchOptions, Sample, Step, figures
from .record import BuildRecord, TargetDescription, load_description
from .stored import known_fields

STORE_VERSION = 2

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL,
    server TEXT NOT NULL,
    base TEXT NOT NULL,
    suite TEXT NOT NULL,
    options TEXT NOT NULL,      -- JSON: the bench options (modes, slices, instances, ...)
    host TEXT NOT NULL,         -- JSON: cpu model, cores, kernel, memory
    identity TEXT NOT NULL DEFAULT '{}',   -- JSON: what a resume must match
    commands TEXT NOT NULL,     -- JSON list: the pgolab command lines that produced the run
    status TEXT NOT NULL        -- running | finished | failed
);
CREATE TABLE IF NOT EXISTS targets (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    label TEXT NOT NULL,        -- variant name or the name given with --binary NAME=PATH
    kind TEXT NOT NULL,         -- variant | binary
    server_binary TEXT NOT NULL,
    binary_digest TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL,  -- JSON: the build record (compiler, versions, flags, source, digest)
    PRIMARY KEY (run_id, label)
);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    mode TEXT NOT NULL,         -- qps | cost
    micro TEXT NOT NULL,        -- group/name
    grp TEXT NOT NULL,
    instance INTEGER NOT NULL,  -- n-th start of the servers for this microbenchmark
    block INTEGER NOT NULL,     -- paired block within the instance
    position INTEGER NOT NULL,  -- order within the block
    label TEXT NOT NULL,
    vals TEXT NOT NULL,         -- JSON: per-query figures by key (qps, cpu_us, instructions, ...)
    seconds REAL NOT NULL,
    detail TEXT NOT NULL,       -- JSON: latency, raw counters, method
    command TEXT NOT NULL,
    output TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (run_id, mode, micro, instance, block, label)
);
CREATE TABLE IF NOT EXISTS excluded (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    mode TEXT NOT NULL,
    micro TEXT NOT NULL,
    instance INTEGER NOT NULL,
    block INTEGER NOT NULL,
    reason TEXT NOT NULL,       -- which target's ratio, its robust z-score
    PRIMARY KEY (run_id, mode, micro, instance, block)
);
"""


def default_path() -> Path:
    return paths.home() / "results.sqlite"


@dataclass(frozen=True)
class StoredSample:
    step: Step
    group: str
    values: dict[str, float]
    seconds: float
    detail: dict


@dataclass(frozen=True)
class ShardFacts:
    """One shard of a merged run as the merge recorded it: where and when it ran, and what the builds
    it measured cost to make (a merged run keeps one base, the first shard's, so the others' base
    builds are only here). A field an older merge did not record is None."""
    name: str
    cpu: str                            # Host.model(): the unit wall-clock figures hold for
    host: str | None = None             # Host.describe()
    started: str | None = None          # the shard run's creation
    last_sample: str | None = None      # its last sample's time
    builds: tuple[str, ...] = ()        # the pgolab builds it measured, its base included
    build_wall_min: float | None = None
    build_cpu_min: float | None = None

    @classmethod
    def from_dict(cls, data: dict) -> "ShardFacts":
        data = known_fields(cls, data)
        return cls(**{**data, "builds": tuple(data.get("builds", ()))})


# A merged run renumbers its shards' instances: shard k's instance i is INSTANCE_STRIDE·k + i, so
# each build pairs with its own shard's base.
INSTANCE_STRIDE = 100


@dataclass(frozen=True)
class MergedShards:
    """What a merged run's identity records of its shards (merge.merged_rows writes it): each shard's
    facts and, when their wall-clock figures were not merged across models, the run that holds each
    model's."""
    shards: tuple[ShardFacts, ...]
    clock_per_cpu: dict[str, str]
    # The identity keys that describe a merge (merged_from identifies it): not compared when the same
    # shards are merged or imported again, so a run merged by an older pgolab is the same merge.
    DESCRIBED = ("shards", "clock_per_cpu")

    @property
    def by_cpu_model(self) -> dict[str, list[str]]:
        models: dict[str, list[str]] = {}
        for shard in self.shards:
            models.setdefault(shard.cpu, []).append(shard.name)
        return models

    @classmethod
    def of(cls, identity: dict) -> "MergedShards | None":
        if "merged_from" not in identity:
            return None
        shards = []
        recorded = identity.get("shards") or []
        if len(recorded) != len(identity["merged_from"]):
            recorded = [None] * len(identity["merged_from"])
        for k, (shard, shard_identity) in enumerate(zip(recorded, identity["merged_from"]), start=1):
            if isinstance(shard, dict):
                shards.append(ShardFacts.from_dict(shard))
            else:   # merged before each shard's facts were recorded: a run name, or nothing
                shards.append(ShardFacts(shard or f"shard {k}",
                                         Host.from_dict(shard_identity.get("host", {})).model()))
        return cls(tuple(shards), dict(identity.get("clock_per_cpu", {})))


# A run's note, beside its commands, of a variant its matrix did not build because no measure of the
# run could measure it there (cost and -march=native with AVX-512); a merge carries it on.
NOT_BUILT = "not built: "


def not_built(commands: list[str]) -> list[str]:
    """The not-built notes among a run's commands."""
    return [c for c in commands if c.startswith(NOT_BUILT)]


def not_built_note(labels: Iterable[str], why: str) -> str:
    """The note a run keeps of labels it did not build, in the one shape `labels_named` reads back:
    their list, then why ("which ..." after a comma, or "on the bench host ...")."""
    if not why.startswith(("which ", "on the bench host")):
        raise ValueError(f"a not-built note's reason starts with 'which ' or 'on the bench host': {why!r}")
    return f"{NOT_BUILT}{', '.join(labels)}{',' if why.startswith('which ') else ''} {why}"


def labels_named(note: str) -> set[str]:
    """The labels a not-built note names (`not_built_note`): its list before the reason."""
    names = re.split(r", which | on the bench host", note.removeprefix(NOT_BUILT), maxsplit=1)[0]
    return {name.strip() for name in names.split(", ")}


@dataclass(frozen=True)
class StoredRun:
    """A run as stored: what it measured, on which machine, and how far it got."""
    id: int
    name: str
    created: str
    server: str
    base: str
    suite: str
    options: BenchOptions
    host: Host
    identity: dict          # compared key by key on a resume; read through MergedShards, and by best's round reuse
    commands: list[str]
    status: str             # running | interrupted | finished | failed

    @property
    def merged(self) -> MergedShards | None:
        """The shards a merged run was made of; None for a run measured as one."""
        return MergedShards.of(self.identity)

    @classmethod
    def of_row(cls, row: sqlite3.Row) -> "StoredRun":
        return cls(row["id"], row["name"], row["created"], row["server"], row["base"], row["suite"],
                   BenchOptions.from_dict(json.loads(row["options"])), Host.from_dict(json.loads(row["host"])),
                   json.loads(row["identity"]), json.loads(row["commands"]), row["status"])


@dataclass(frozen=True)
class StoredTarget:
    label: str
    kind: str               # variant | binary
    server_binary: str
    binary_digest: str
    description: TargetDescription

    @property
    def code_digest(self) -> str | None:
        """sha256 of what the measured binary runs (elf.loaded_digest), from its build record when that
        record is of this very file; None for a binary pgolab did not build or a record before version 9."""
        d = self.description
        return d.code_digest if isinstance(d, BuildRecord) and d.binary_digest == self.binary_digest else None

    @classmethod
    def of_row(cls, row: sqlite3.Row) -> "StoredTarget":
        return cls(row["label"], row["kind"], row["server_binary"], row["binary_digest"] or "",
                   load_description(row["kind"], json.loads(row["description"])))


def identity_difference(stored: dict, current: dict) -> list[str]:
    """The keys (dotted) whose values differ between two run identities."""
    out = []
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{k}" for k in identity_difference(a, b)]
        elif a != b:
            out.append(key)
    return out


def _dotted(data: dict, key: str):
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


class Store:
    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=30)
            self.db.row_factory = sqlite3.Row
            self.db.execute("PRAGMA journal_mode=WAL")
            self._upgrade()
        except (OSError, sqlite3.OperationalError) as exc:
            raise PgolabError(f"cannot open the results store {self.path}: {exc}",
                              hint="give a writable file with --store, or set PGOLAB_HOME to a writable folder")

    def _upgrade(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        has_v1 = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'measurements'").fetchone()
        if version > STORE_VERSION:
            raise PgolabError(f"{self.path} is a version-{version} store; this pgolab reads up to {STORE_VERSION}",
                              hint="upgrade pgolab, or use another --store")
        if version == STORE_VERSION:
            return
        with self.db:
            if has_v1:
                self._migrate_v1()
            self.db.executescript(SCHEMA)
            self.db.execute(f"PRAGMA user_version = {STORE_VERSION}")

    def _migrate_v1(self) -> None:
        """Version 1 kept QPS rounds; each round becomes block r of a single instance."""
        self.db.execute("ALTER TABLE runs ADD COLUMN identity TEXT NOT NULL DEFAULT '{}'")
        self.db.execute("ALTER TABLE targets ADD COLUMN binary_digest TEXT NOT NULL DEFAULT ''")
        self.db.executescript(SCHEMA)
        self.db.execute(
            "INSERT INTO samples (run_id, mode, micro, grp, instance, block, position, label, vals, seconds, "
            "detail, command, output, created) SELECT run_id, 'qps', micro, grp, 1, round, position, label, "
            "json_object('qps', qps, 'cpu_us', cpu_us_per_query), seconds, json_object('latency', json(latency), "
            "'tps', tps, 'queries', queries, 'errors', errors, 'reconnects', reconnects, 'migrated_from', 1), "
            "command, output, created FROM measurements")
        self.db.execute("DROP TABLE measurements")

    def close(self) -> None:
        self.db.close()

    # -- runs ---------------------------------------------------------------
    def create_or_resume_run(self, name: str, *, server: str, base: str, suite: str, options: BenchOptions,
                             host: Host, identity: dict, command: str) -> tuple[int, bool]:
        """The run's id and whether it already existed (a resume, only of the same experiment)."""
        identity = json.loads(json.dumps(identity))   # compared as stored: tuples become lists
        with self.db:
            row = self._same_run(name, identity, "resume it with the same options and binaries, or start a new "
                                                 "run with --run NEW_NAME")
            if row:
                self._add_commands(row, [command])
                self.db.execute("UPDATE runs SET status = 'running' WHERE id = ?", (row["id"],))
                return row["id"], True
            run_id = self._insert("runs", {
                "name": name, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "server": server, "base": base,
                "suite": suite, "options": json.dumps(options.as_dict()), "host": json.dumps(host.as_dict()),
                "identity": json.dumps(identity), "commands": json.dumps([command]), "status": "running"})
        return run_id, False

    def _same_run(self, name: str, identity: dict, hint: str, described: tuple[str, ...] = ()) -> sqlite3.Row | None:
        """The stored run of that name, if any, after checking it is the same experiment (the
        `described` keys left out)."""
        row = self.db.execute("SELECT id, identity, commands FROM runs WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        stored = json.loads(row["identity"])
        compared = [{k: v for k, v in i.items() if k not in described} for i in (stored, identity)]
        differing = identity_difference(*compared) if stored else ["identity (a version-1 run has none)"]
        if differing:
            shown = "\n".join(f"{k}: stored {_dotted(stored, k)!r}, now {_dotted(identity, k)!r}" for k in differing)
            raise PgolabError(f"run {name!r} exists with another identity: {', '.join(differing)} differ",
                              detail=shown[:2000], hint=hint)
        return row

    def add_commands(self, run_id: int, commands: list[str], replacing: tuple[str, ...] = ()) -> None:
        """Lines the run keeps beside the commands that made it (each once); the lines it kept that
        start with one of `replacing` go (what an earlier invocation said of something said anew)."""
        if commands or replacing:
            with self.db:
                self._add_commands(self._run_row(run_id), commands, replacing)

    def _add_commands(self, row: sqlite3.Row, commands: list[str], replacing: tuple[str, ...] = ()) -> None:
        known = [c for c in json.loads(row["commands"]) if not (replacing and c.startswith(replacing))]
        known += [c for c in commands if c not in known]
        self.db.execute("UPDATE runs SET commands = ? WHERE id = ?", (json.dumps(known), row["id"]))

    def _insert(self, table: str, row: dict, verb: str = "INSERT") -> int:
        """One row, its columns named by its keys; the new row's id."""
        sql = f"{verb} INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        return self.db.execute(sql, list(row.values())).lastrowid

    def run(self, name_or_id: str | int | None = None) -> StoredRun | None:
        row = self._run_row(name_or_id)
        return StoredRun.of_row(row) if row else None

    def _run_row(self, name_or_id: str | int | None) -> sqlite3.Row | None:
        if name_or_id is None:
            return self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
        if isinstance(name_or_id, int) or str(name_or_id).isdigit():
            row = self.db.execute("SELECT * FROM runs WHERE id = ?", (int(name_or_id),)).fetchone()
            if row:
                return row
        return self.db.execute("SELECT * FROM runs WHERE name = ?", (str(name_or_id),)).fetchone()

    def runs(self) -> list[StoredRun]:
        return [StoredRun.of_row(r) for r in self.db.execute("SELECT * FROM runs ORDER BY id")]

    def set_status(self, run_id: int, status: str) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))

    # -- targets --------------------------------------------------------------
    def add_target(self, run_id: int, label: str, kind: str, server_binary: str, binary_digest: str,
                   description: TargetDescription) -> None:
        with self.db:
            self._insert("targets", {"run_id": run_id, "label": label, "kind": kind, "server_binary": server_binary,
                                     "binary_digest": binary_digest, "description": json.dumps(description.as_dict())},
                         "INSERT OR REPLACE")

    def targets(self, run_id: int) -> list[StoredTarget]:
        return [StoredTarget.of_row(r)
                for r in self.db.execute("SELECT * FROM targets WHERE run_id = ? ORDER BY rowid", (run_id,))]

    # -- samples ------------------------------------------------------------
    def has(self, run_id: int, step: Step) -> bool:
        return self.db.execute(
            "SELECT 1 FROM samples WHERE run_id=? AND mode=? AND micro=? AND instance=? AND block=? AND label=?",
            (run_id, step.mode, step.micro, step.instance, step.block, step.label)).fetchone() is not None

    def add(self, run_id: int, sample: Sample, group: str) -> None:
        s = sample.step
        unknown = set(sample.values) - {f.key for f in figures(s.mode)}
        if unknown:   # a figure nobody reads would be stored forever and never reported
            raise PgolabError(f"internal: a {s.mode} sample carries {', '.join(sorted(unknown))}, which the figure "
                              f"table (measurement.FIGURES) does not define for {s.mode}")
        with self.db:
            self._insert("samples", {
                "run_id": run_id, "mode": s.mode, "micro": s.micro, "grp": group, "instance": s.instance,
                "block": s.block, "position": s.position, "label": s.label, "vals": json.dumps(sample.values),
                "seconds": sample.seconds, "detail": json.dumps(sample.detail), "command": sample.command,
                "output": sample.output, "created": time.strftime("%Y-%m-%dT%H:%M:%S")})

    def samples(self, run_id: int, mode: str | None = None, micro: str | None = None) -> list[StoredSample]:
        sql, args = "SELECT * FROM samples WHERE run_id = ?", [run_id]
        if mode:
            sql, args = sql + " AND mode = ?", args + [mode]
        if micro:
            sql, args = sql + " AND micro = ?", args + [micro]
        return [StoredSample(Step(r["mode"], r["micro"], r["instance"], r["block"], r["position"], r["label"]),
                             r["grp"], json.loads(r["vals"]), r["seconds"], json.loads(r["detail"]))
                for r in self.db.execute(sql + " ORDER BY id", args)]

    def values(self, run_id: int, mode: str, figure: str, micro: str | None = None
               ) -> dict[tuple[str, int, int, str], float | None]:
        """One figure of every sample: (micro, instance, block, label) -> value, as the statistics
        pair them."""
        return {(s.step.micro, s.step.instance, s.step.block, s.step.label): s.values.get(figure)
                for s in self.samples(run_id, mode, micro)}

    # -- a run as rows (runfile.py writes and reads them as one file) ----------------------------
    RUN_COLUMNS = ("name", "created", "server", "base", "suite", "options", "host", "identity", "commands", "status")
    TARGET_COLUMNS = ("label", "kind", "server_binary", "binary_digest", "description")
    SAMPLE_COLUMNS = ("mode", "micro", "grp", "instance", "block", "position", "label", "vals", "seconds", "detail",
                      "command", "output", "created")
    EXCLUDED_COLUMNS = ("mode", "micro", "instance", "block", "reason")

    def rows(self, run_id: int) -> dict[str, list[dict] | dict]:
        """Everything stored of a run, column by column as stored (JSON columns as their text)."""
        def select(table: str, columns: tuple[str, ...]) -> list[dict]:
            order = "id" if table == "samples" else "rowid"
            return [dict(zip(columns, r)) for r in self.db.execute(
                f"SELECT {', '.join(columns)} FROM {table} WHERE run_id = ? ORDER BY {order}", (run_id,))]
        run = self.db.execute(f"SELECT {', '.join(self.RUN_COLUMNS)} FROM runs WHERE id = ?", (run_id,)).fetchone()
        return {"run": dict(zip(self.RUN_COLUMNS, run)), "targets": select("targets", self.TARGET_COLUMNS),
                "samples": select("samples", self.SAMPLE_COLUMNS),
                "excluded": select("excluded", self.EXCLUDED_COLUMNS)}

    def add_rows(self, rows: dict, hint: str = "import it into another --store") -> tuple[int, int]:
        """A run's rows (from `rows`, maybe of another store) into this store: the run created if new,
        else only what it lacks added (a run's identity must be the same, a target's binary too; a
        merged run's descriptive keys are not compared, and take the new rows' values).
        Returns the run's id and how many samples were added; adding the same rows again adds none."""
        run = rows["run"]
        identity = json.loads(run["identity"])
        described = MergedShards.DESCRIBED if "merged_from" in identity else ()
        with self.db:
            row = self._same_run(run["name"], identity, hint, described)
            if row is None:
                run_id = self._insert("runs", {c: run[c] for c in self.RUN_COLUMNS})
            else:
                run_id = row["id"]
                # A merged run's notes of what no shard measured are made anew by each merge: a label
                # a shard or fill run has measured since is no longer noted.
                self._add_commands(row, json.loads(run["commands"]), replacing=(NOT_BUILT,) if described else ())
                if described:
                    stored = json.loads(row["identity"])
                    stored.update({k: identity[k] for k in described if k in identity})
                    self.db.execute("UPDATE runs SET identity = ? WHERE id = ?", (json.dumps(stored), run_id))
            for target in rows["targets"]:
                have = self.db.execute("SELECT binary_digest FROM targets WHERE run_id = ? AND label = ?",
                                       (run_id, target["label"])).fetchone()
                if have is not None and have["binary_digest"] != target["binary_digest"]:
                    raise PgolabError(f"target {target['label']!r} of run {run['name']!r} has binary "
                                      f"{target['binary_digest'][:12]} there and {have['binary_digest'][:12]} here",
                                      hint="one label, one binary: import it into another --store")
                self._insert("targets", {"run_id": run_id, **{c: target[c] for c in self.TARGET_COLUMNS}},
                             "INSERT OR IGNORE")
            before = self.sample_count(run_id)
            for sample in rows["samples"]:
                self._insert("samples", {"run_id": run_id, **{c: sample[c] for c in self.SAMPLE_COLUMNS}},
                             "INSERT OR IGNORE")
            for block in rows["excluded"]:
                self._insert("excluded", {"run_id": run_id, **{c: block[c] for c in self.EXCLUDED_COLUMNS}},
                             "INSERT OR IGNORE")
            return run_id, self.sample_count(run_id) - before

    def sample_count(self, run_id: int) -> int:
        return self.db.execute("SELECT count(*) FROM samples WHERE run_id = ?", (run_id,)).fetchone()[0]

    def exclude(self, run_id: int, mode: str, micro: str, instance: int, block: int, reason: str) -> None:
        with self.db:
            self._insert("excluded", {"run_id": run_id, "mode": mode, "micro": micro, "instance": instance,
                                      "block": block, "reason": reason}, "INSERT OR IGNORE")

    def excluded(self, run_id: int) -> dict[tuple[str, str, int, int], str]:
        return {(r["mode"], r["micro"], r["instance"], r["block"]): r["reason"]
                for r in self.db.execute("SELECT * FROM excluded WHERE run_id = ?", (run_id,))}
