"""The sysbench microbenchmark catalog, in run order.

Groups follow the published tables: point-1 (point queries, run before the
writes), range-1 (range queries without aggregation), range-2 (range queries
with aggregation), writes, and point-2 (the point queries again, after the
writes have changed the data). Read-only tests run before the writes.
Stock sysbench scripts serve where they fit; the rest are in
data/pgolab_micro.lua.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import paths
from .errors import PgolabError

GROUPS = ("point-1", "range-1", "range-2", "writes", "point-2", "pgbench", "user")
USER_GROUP = "user"     # the user's own microbenchmarks (--micro FILE), after the suite's


@dataclass(frozen=True)
class Micro:
    name: str
    group: str
    script: str                 # a stock sysbench script name, or "pgolab_micro"
    args: tuple[str, ...] = field(default_factory=tuple)
    writes: bool = False
    # Cost mode runs a fixed number of events under callgrind (~50x slower than native): sized so
    # that one measured run is some 100-300 million instructions whatever the microbenchmark.
    cost_events: int = 500
    after_writes: bool = False     # reads data the writes changed (point-2)
    threads: int = 1               # client threads (sysbench's threads, pgbench's clients)
    client: str = "sysbench"       # the load generator (clients.py): sysbench, or pgbench for its own scripts
    in_sweep: bool = False         # one of several thread counts of a run: its key names the count

    @property
    def state_dependent(self) -> bool:
        """Its cost depends on how background work (purge, autovacuum) left the data."""
        return self.writes or self.after_writes

    def argv(self, lua_dir: Path) -> list[str]:
        if self.script == "pgolab_micro":
            base = self.name.split("_")[0]
            return [str(lua_dir / "pgolab_micro.lua"), f"--micro={base}", *self.args]
        if self.script == "pgolab_sql":
            return [str(lua_dir / "pgolab_sql.lua"), *self.args]
        return [self.script, *self.args]   # a stock script's name, or the path of a user's Lua script


def lua_dir() -> Path:
    return paths.package_data()


def _points(group: str, after_writes: bool = False) -> list[Micro]:
    return [replace(m, after_writes=after_writes) for m in [
        Micro("point-query", group, "oltp_point_select", cost_events=2000),
        Micro("random-points_range=10", group, "select_random_points", ("--random_points=10",), cost_events=1000),
        Micro("random-points_range=100", group, "select_random_points", ("--random_points=100",),
              cost_events=300),
        Micro("random-points_range=1000", group, "select_random_points", ("--random_points=1000",),
              cost_events=40),
        Micro("hot-points", group, "pgolab_micro", cost_events=300),
        Micro("points-covered-pk", group, "pgolab_micro", cost_events=300),
        Micro("points-notcovered-pk", group, "pgolab_micro", cost_events=300),
        Micro("points-covered-si", group, "pgolab_micro", cost_events=300),
        Micro("points-notcovered-si", group, "pgolab_micro", cost_events=300),
    ]]


def _read_only(name: str, **counts: int) -> Micro:
    opts = {"point_selects": 0, "simple_ranges": 0, "sum_ranges": 0, "order_ranges": 0, "distinct_ranges": 0}
    opts.update(counts)
    return Micro(name, "range-2", "oltp_read_only", tuple(f"--{k}={v}" for k, v in opts.items()) + ("--range_size=100",),
                 cost_events=500)


FULL: tuple[Micro, ...] = tuple(
    _points("point-1") + [
        Micro("range-covered-pk", "range-1", "pgolab_micro", ("--range_size=100",)),
        Micro("range-notcovered-pk", "range-1", "pgolab_micro", ("--range_size=100",)),
        Micro("range-covered-si", "range-1", "pgolab_micro", ("--range_size=100",)),
        Micro("range-notcovered-si", "range-1", "pgolab_micro", ("--range_size=100",)),
        Micro("scan", "range-1", "pgolab_micro", cost_events=4),
        Micro("read-only_range=10", "range-2", "oltp_read_only", ("--range_size=10",), cost_events=150),
        Micro("read-only_range=100", "range-2", "oltp_read_only", ("--range_size=100",), cost_events=100),
        Micro("read-only_range=10000", "range-2", "oltp_read_only", ("--range_size=10000",), cost_events=4),
        _read_only("read-only-simple", simple_ranges=1),
        _read_only("read-only-sum", sum_ranges=1),
        _read_only("read-only-order", order_ranges=1),
        _read_only("read-only-distinct", distinct_ranges=1),
        Micro("read-only-count", "range-2", "pgolab_micro", ("--range_size=100",)),
        Micro("update-index", "writes", "oltp_update_index", writes=True),
        Micro("update-nonindex", "writes", "oltp_update_non_index", writes=True),
        Micro("update-one", "writes", "pgolab_micro", writes=True, cost_events=1000),
        # sysbench 1.0 has no zipfian distribution; pareto is its skewed one.
        Micro("update-zipf", "writes", "oltp_update_non_index", ("--rand-type=pareto",), writes=True),
        Micro("update-inlist", "writes", "pgolab_micro", writes=True, cost_events=100),
        Micro("delete", "writes", "oltp_delete", writes=True),
        Micro("insert", "writes", "oltp_insert", writes=True),
        Micro("write-only", "writes", "oltp_write_only", writes=True, cost_events=200),
        Micro("read-write_range=10", "writes", "oltp_read_write", ("--range_size=10",), writes=True, cost_events=100),
        Micro("read-write_range=100", "writes", "oltp_read_write", ("--range_size=100",), writes=True,
              cost_events=60),
    ] + _points("point-2", after_writes=True))

QUICK_NAMES = {("point-query", "point-1"), ("random-points_range=100", "point-1"), ("range-covered-pk", "range-1"),
               ("read-only_range=100", "range-2"), ("update-index", "writes"), ("write-only", "writes"),
               ("point-query", "point-2")}
QUICK: tuple[Micro, ...] = tuple(m for m in FULL if (m.name, m.group) in QUICK_NAMES)
# pgbench's built-in scripts (PostgreSQL): the read-only one before the two that write.
PGBENCH: tuple[Micro, ...] = (
    Micro("select-only", "pgbench", "pgbench", client="pgbench", cost_events=1000),
    Micro("simple-update", "pgbench", "pgbench", client="pgbench", writes=True, cost_events=200),
    Micro("tpcb-like", "pgbench", "pgbench", client="pgbench", writes=True, cost_events=150),
)
# none: only the user's own (--micro). Several join with commas: quick,pgbench.
SUITES = {"quick": QUICK, "full": FULL, "pgbench": PGBENCH, "none": ()}


def suite(name: str) -> tuple[Micro, ...]:
    """A suite by name, or several joined by commas (quick,pgbench), in the order named."""
    parts = [p.strip() for p in name.split(",")]
    unknown = [p for p in parts if p not in SUITES]
    if unknown:
        raise PgolabError(f"unknown suite {', '.join(map(repr, unknown))}",
                          hint=f"use one of {', '.join(SUITES)}, or several joined by commas (quick,pgbench)")
    return tuple(m for p in dict.fromkeys(parts) for m in SUITES[p])


# A user's statements are unknown: as many events as the suite's heavier tests under callgrind, and
# repeated like the writes, since they may write (the suite's own reads ran before them).
USER_COST_EVENTS = 100


def user_micro(path_text: str) -> Micro:
    """--micro FILE: a sysbench Lua script, or a .sql file of statements run in order as one event;
    named by the file's stem, in the user group."""
    path = Path(path_text).expanduser().absolute()
    if not path.is_file():
        raise PgolabError(f"--micro {path_text}: no such file", hint="give a .lua sysbench script or a .sql file")
    if path.suffix == ".sql":
        return Micro(path.stem, USER_GROUP, "pgolab_sql", (f"--sql-file={path}",), writes=True,
                     cost_events=USER_COST_EVENTS)
    if path.suffix == ".lua":
        return Micro(path.stem, USER_GROUP, str(path), writes=True, cost_events=USER_COST_EVENTS)
    raise PgolabError(f"--micro {path_text}: neither a .lua nor a .sql file",
                      hint="give a sysbench Lua script (.lua) or a file of SQL statements (.sql)")


def user_micro_path(m: Micro) -> Path:
    return Path(m.args[0].split("=", 1)[1] if m.script == "pgolab_sql" else m.script)


def user_micros(paths: tuple[str, ...]) -> tuple[Micro, ...]:
    micros = tuple(user_micro(p) for p in paths)
    names = [m.name for m in micros]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PgolabError(f"--micro: two files named {', '.join(twice)}", hint="give each file its own name")
    return micros


def planned(name: str, threads: tuple[int, ...] = (1,), own: tuple[str, ...] = ()) -> tuple[Micro, ...]:
    """A run's microbenchmarks in run order: each test of the suite at every thread count, the counts
    of one test one after the other, so that the groups keep their order (reads before the writes);
    the user's own (`own`: their files) last."""
    sweep = len(threads) > 1
    micros = tuple(replace(m, threads=t, in_sweep=sweep) for m in (*suite(name), *user_micros(own)) for t in threads)
    if not micros:
        raise PgolabError(f"suite {name!r} with no --micro file measures nothing",
                          hint="give --micro FILE, or --suite quick or full")
    return micros


SWEEP_SUFFIX = re.compile(r"@(\d+)t$")


def key(m: Micro) -> str:
    """Unique within a run: point queries appear in point-1 and point-2, and a thread sweep runs each
    test at every count (`point-1/point-query@4t`). A run of one count keeps the plain key, so runs
    stored before sweeps existed resume."""
    return f"{m.group}/{m.name}" + (f"@{m.threads}t" if m.in_sweep else "")


def threads_of(key_text: str) -> int | None:
    """The thread count a stored key names (a sweep's), or None (a run of one count)."""
    match = SWEEP_SUFFIX.search(key_text)
    return int(match.group(1)) if match else None


def without_threads(key_text: str) -> str:
    """The test a key names, whatever its thread count."""
    return SWEEP_SUFFIX.sub("", key_text)


def parse_threads(text: str) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8): ascending, each once."""
    try:
        counts = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        counts = []
    if not counts or counts[0] < 1:
        raise PgolabError(f"--threads takes one count or several, got {text!r}", hint="e.g. --threads 1 or --threads 1,2,4,8")
    return tuple(counts)
