"""The load generators a microbenchmark runs with, one class each: sysbench (every server) and pgbench
(PostgreSQL's own, for its built-in scripts). Each loads its tables into the golden data, builds the
command line of one measured run, and reads its report into one result shape (sysbench_output's)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import suite as suite_mod
from .errors import PgolabError
from .sysbench_output import SysbenchParseError, SysbenchResult, parse as parse_sysbench

if TYPE_CHECKING:
    from .measurement import BenchOptions
    from .server import ServerProcess

BENCH_DATABASE = "sbtest"


def whole_seconds(seconds: float | None) -> int:
    """sysbench 1.0 and pgbench take whole seconds only: at least one."""
    return max(int(round(seconds or 1)), 1)


class Sysbench:
    name = "sysbench"

    def check(self, installation) -> None:
        """sysbench drives every server pgolab knows."""

    def load_argv(self, installation, rundir, options: "BenchOptions") -> list[str]:
        engine = installation.engine_load_args(options.engine) if options.engine else []
        # Seeded and on one thread: every data family's golden copy holds the same rows.
        return ["sysbench", "oltp_read_only", *installation.sysbench_args(rundir, BENCH_DATABASE),
                f"--tables={options.tables}", f"--table-size={options.table_size}", "--threads=1",
                "--rand-seed=1", *engine, "prepare"]

    def argv(self, micro: suite_mod.Micro, server: "ServerProcess", options: "BenchOptions", *,
             seconds: float | None = None, events: int | None = None, seed: int = 1) -> list[str]:
        """A fixed --rand-seed (sysbench's default seeds from the clock): the targets of a block run
        the same statements on the same rows."""
        argv = ["sysbench", *micro.argv(suite_mod.lua_dir()),
                *server.installation.sysbench_args(server.rundir, BENCH_DATABASE),
                f"--tables={options.tables}", f"--table-size={options.table_size}", f"--threads={micro.threads}",
                "--histogram=on", "--report-interval=0", f"--db-ps-mode={'auto' if options.prepared else 'disable'}",
                f"--rand-seed={seed}"]
        if events is not None:
            argv += [f"--events={events}", "--time=0"]
        else:
            argv += [f"--time={whole_seconds(seconds)}"]
        if not any(a.startswith("--rand-type") for a in micro.args):
            argv.append("--rand-type=uniform")   # sysbench 1.0 defaults to 'special', a hot spot
        return argv + ["run"]

    def parse(self, text: str) -> SysbenchResult:
        return parse_sysbench(text)


# Statements per transaction of pgbench's built-in scripts, BEGIN and END included, as sysbench
# counts its transactions' statements: a query is a statement either way.
PGBENCH_STATEMENTS = {"tpcb-like": 7, "simple-update": 5, "select-only": 1}
PGBENCH_TITLES = {"TPC-B (sort of)": "tpcb-like", "simple update": "simple-update", "select only": "select-only"}
PGBENCH_ROWS_PER_SCALE = 100_000    # pgbench_accounts rows per scale factor


def pgbench_scale(options: "BenchOptions") -> int:
    """As many accounts as the sysbench tables hold rows, at least scale 1."""
    return max(1, round(options.tables * options.table_size / PGBENCH_ROWS_PER_SCALE))


class Pgbench:
    name = "pgbench"

    def check(self, installation) -> None:
        if installation.sysbench_driver != "pgsql":
            raise PgolabError(f"pgbench drives PostgreSQL only, not {installation.server}",
                              hint="leave the pgbench suite out for MariaDB and MySQL")

    def _connection(self, installation, rundir) -> list[str]:
        return ["-h", str(rundir), "-p", str(installation.port), "-U", "postgres"]

    def load_argv(self, installation, rundir, options: "BenchOptions") -> list[str]:
        # -q: progress every 5 s rather than every 100,000 rows; pgbench vacuums what it loaded.
        return ["pgbench", "-i", "-q", "-s", str(pgbench_scale(options)), *self._connection(installation, rundir),
                BENCH_DATABASE]

    def argv(self, micro: suite_mod.Micro, server: "ServerProcess", options: "BenchOptions", *,
             seconds: float | None = None, events: int | None = None, seed: int = 1) -> list[str]:
        """-n: no vacuum before the run (the golden data was vacuumed once); threads are both pgbench's
        clients and its worker threads; events are spread over the clients."""
        argv = ["pgbench", *self._connection(server.installation, server.rundir), "-n", "-b", micro.name,
                "-M", "prepared" if options.prepared else "simple", "-c", str(micro.threads), "-j", str(micro.threads),
                f"--random-seed={seed}"]
        if events is not None:
            argv += ["-t", str(max(events // micro.threads, 1))]
        else:
            argv += ["-T", str(whole_seconds(seconds))]
        return argv + [BENCH_DATABASE]

    def parse(self, text: str) -> SysbenchResult:
        """pgbench's summary: transactions processed and tps (without the initial connection time)."""
        transactions = re.search(r"^number of transactions actually processed: (\d+)", text, re.M)
        tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", text, re.M)
        script = re.search(r"^transaction type: <builtin: (.+)>", text, re.M)
        name = PGBENCH_TITLES.get(script.group(1)) if script else None
        if not transactions or not tps:
            raise SysbenchParseError("no pgbench summary (transactions processed, tps) in its output")
        per = PGBENCH_STATEMENTS[name] if name else 1
        count, rate = int(transactions.group(1)), float(tps.group(1))
        latency = re.search(r"^latency average = ([0-9.]+) ms", text, re.M)
        failed = re.search(r"^number of failed transactions: (\d+)", text, re.M)
        return SysbenchResult(qps=rate * per, tps=rate, seconds=count / rate if rate else 0.0, queries=count * per,
                              transactions=count, errors=int(failed.group(1)) if failed else 0,
                              latency_ms={"avg": float(latency.group(1))} if latency else {},
                              fatal=[line for line in text.splitlines() if line.startswith(("pgbench: error",
                                                                                           "pgbench: fatal"))])


CLIENTS = {c.name: c for c in (Sysbench(), Pgbench())}


def of(micro: suite_mod.Micro):
    return CLIENTS[micro.client]


def needed(micros) -> list:
    """The clients a run's microbenchmarks use, sysbench first (its tables are every run's)."""
    names = {m.client for m in micros}
    return [c for name, c in CLIENTS.items() if name in names or name == "sysbench"]
