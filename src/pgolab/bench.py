"""Running the microbenchmark suite on several servers, interleaved, into the store.

Fairness: the data is loaded once (by the base server) into a golden data
directory; every target gets its own copy and the same server options. All
targets run at once, each on its own socket, so that microbenchmark m, round r
runs on every target back to back; the order alternates between rounds.
Read-only tests run before the writes change the data. A re-run with the same
run name skips every stored measurement and goes on from there.
"""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from . import paths, suite as suite_mod
from .errors import PgolabError
from .runner import Runner, format_command
from .server import ServerProcess, initialize_datadir
from .store import Measurement, Store
from .sysbench_output import SysbenchParseError, parse
from .targets.base import chown_tree

BENCH_DATABASE = "sbtest"


@dataclass
class BenchTarget:
    label: str
    kind: str                 # variant | binary
    installation: object
    description: dict
    env: dict = field(default_factory=dict)   # e.g. where an instrumented server writes its profile


@dataclass
class BenchOptions:
    suite: str = "quick"
    rounds: int = 3
    seconds: int = 10
    tables: int = 1
    table_size: int = 100_000
    threads: int = 1
    prepared: bool = True
    warmup_seconds: int = 5
    server_options: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def host_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "memory_gib": round(mem_kb / 1024 / 1024, 1), "hostname": platform.node()}


def process_cpu_seconds(pid: int) -> tuple[float, float]:
    """User and system CPU seconds of a process plus its reaped children (PostgreSQL's
    backends are children of the postmaster and are reaped when a connection ends)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    return (utime + cutime) / tick, (stime + cstime) / tick


def sysbench_argv(micro: suite_mod.Micro, server: ServerProcess, options: BenchOptions, seconds: int) -> list[str]:
    argv = ["sysbench", *micro.argv(suite_mod.lua_dir()),
            *server.installation.sysbench_args(server.rundir, BENCH_DATABASE),
            f"--tables={options.tables}", f"--table-size={options.table_size}", f"--threads={options.threads}",
            f"--time={seconds}", "--histogram=on", "--report-interval=0",
            f"--db-ps-mode={'auto' if options.prepared else 'disable'}"]
    if not any(a.startswith("--rand-type") for a in micro.args):
        argv.append("--rand-type=uniform")   # sysbench 1.0 defaults to 'special', a hot spot
    return argv + ["run"]


@dataclass
class BenchProgress:
    total: int
    done: int = 0
    started: float = field(default_factory=time.monotonic)

    def eta_seconds(self, per_step: float) -> float:
        return (self.total - self.done) * per_step


def run_bench(store: Store, run_name: str, base: str, targets: list[BenchTarget], options: BenchOptions,
              command: str, on_step: Callable[[str, BenchProgress], None] | None = None) -> int:
    labels = [t.label for t in targets]
    if base not in labels:
        raise PgolabError(f"base {base!r} is not among the targets ({', '.join(labels)})")
    if len(set(labels)) != len(labels):
        raise PgolabError("two targets share a label", hint="name binaries uniquely: --binary NAME=PATH")
    servers_of = {t.installation.server for t in targets}
    if len(servers_of) != 1:
        raise PgolabError(f"targets mix servers ({', '.join(sorted(servers_of))})",
                          hint="benchmark one server kind per run")
    micros = suite_mod.suite(options.suite)
    run_id, resumed = store.create_or_resume_run(run_name, server=servers_of.pop(), base=base, suite=options.suite,
                                                 options=options.as_dict(), host=host_info(), command=command)
    for t in targets:
        store.add_target(run_id, t.label, t.kind, str(t.installation.server_binary), t.description)
    workdir = paths.runs_dir() / run_name
    runner = Runner(workdir / "logs" / "bench.log")
    by_label = {t.label: t for t in targets}
    golden = prepare_golden(by_label[base], workdir, options, runner)
    servers: dict[str, ServerProcess] = {}
    rundirs = []
    progress = BenchProgress(total=len(micros) * options.rounds * len(targets))
    try:
        for t in targets:
            datadir = workdir / f"data-{t.label}"
            if not datadir.exists():
                shutil.copytree(golden, datadir, symlinks=True)
                if t.installation.run_as:
                    chown_tree(datadir, t.installation.run_as)
            rundir = Path(tempfile.mkdtemp(prefix="pgolab-bench-"))
            rundirs.append(rundir)
            if t.installation.run_as:
                chown_tree(rundir, t.installation.run_as)
            server = ServerProcess(t.installation, datadir, rundir, Runner(workdir / "logs" / f"{t.label}.log"),
                                   options=list(options.server_options), env=dict(t.env))
            server.start()
            servers[t.label] = server
        for label, server in servers.items():   # data cached before measuring (sysbench 1.0 has no warm-up)
            warm = suite_mod.Micro("warmup", "warmup", "oltp_read_only")
            server.runner.run(sysbench_argv(warm, server, options, options.warmup_seconds), what="warm-up")
        for micro in micros:
            key = suite_mod.key(micro)
            for round_ in range(1, options.rounds + 1):
                order = labels if round_ % 2 else list(reversed(labels))
                for position, label in enumerate(order):
                    if store.has(run_id, key, round_, label):
                        progress.done += 1
                        continue
                    if on_step:
                        on_step(f"{key} · {label} · round {round_}/{options.rounds}", progress)
                    store.add(run_id, measure(servers[label], micro, key, round_, position, label, options))
                    progress.done += 1
        if on_step:
            on_step("done", progress)
        for server in servers.values():
            server.stop()
        store.set_status(run_id, "finished")
    except BaseException:
        store.set_status(run_id, "failed")
        for server in servers.values():
            try:
                server.stop(timeout=60)
            except BaseException:
                server.kill()
        raise
    finally:
        for rundir in rundirs:
            shutil.rmtree(rundir, ignore_errors=True)
    return run_id


def prepare_golden(base: BenchTarget, workdir: Path, options: BenchOptions, runner: Runner) -> Path:
    """Load the data once, with the base server; every target starts from a copy."""
    golden = workdir / "golden"
    done = workdir / "golden.done"
    if done.exists():
        return golden
    shutil.rmtree(golden, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    inst = base.installation
    if inst.run_as:
        chown_tree(workdir, inst.run_as)
    initialize_datadir(inst, golden, runner, env=base.env)
    rundir = Path(tempfile.mkdtemp(prefix="pgolab-load-"))
    if inst.run_as:
        chown_tree(rundir, inst.run_as)
    try:
        with ServerProcess(inst, golden, rundir, runner, options=list(options.server_options),
                           env=dict(base.env)) as server:
            server.ensure_database(BENCH_DATABASE)
            runner.run(["sysbench", "oltp_read_only", *inst.sysbench_args(rundir, BENCH_DATABASE),
                        f"--tables={options.tables}", f"--table-size={options.table_size}", "--threads=1",
                        "prepare"], what="sysbench prepare")
    finally:
        shutil.rmtree(rundir, ignore_errors=True)
    done.touch()
    return golden


def measure(server: ServerProcess, micro: suite_mod.Micro, key: str, round_: int, position: int, label: str,
            options: BenchOptions) -> Measurement:
    server.check_alive()
    argv = sysbench_argv(micro, server, options, options.seconds)
    pid = server.proc.pid
    user0, sys0 = process_cpu_seconds(pid)
    result = server.runner.run(argv, check=False, what=f"sysbench {key}")
    time.sleep(0.2)   # let the postmaster reap the finished backend so its CPU time is counted
    server.check_alive()
    user1, sys1 = process_cpu_seconds(pid)
    try:
        parsed = parse(result.output)
    except SysbenchParseError as exc:
        raise PgolabError(f"sysbench {key} on {label} gave no result: {exc}",
                          detail=result.output[-3000:], log=server.runner.log_path,
                          hint="stored measurements are kept; fix the cause and run the same command to resume")
    if result.returncode != 0 or parsed.fatal:
        raise PgolabError(f"sysbench {key} on {label} failed (exit {result.returncode})",
                          detail="\n".join(parsed.fatal) or result.output[-3000:], log=server.runner.log_path,
                          hint="stored measurements are kept; fix the cause and run the same command to resume")
    cpu = (user1 - user0) + (sys1 - sys0)
    per_query = cpu / parsed.queries * 1e6 if parsed.queries else None
    return Measurement(micro=key, group=micro.group, round=round_, position=position, label=label,
                       qps=parsed.qps, tps=parsed.tps, seconds=parsed.seconds, queries=parsed.queries,
                       transactions=parsed.transactions, errors=parsed.errors, reconnects=parsed.reconnects,
                       latency=parsed.latency_ms, cpu_user_s=user1 - user0, cpu_sys_s=sys1 - sys0,
                       cpu_us_per_query=per_query, command=format_command(argv, None, {}), output=result.output)


# --- what to benchmark --------------------------------------------------------

def resolve_targets(base: str, variants: list[str], binaries: list[str],
                    source_path: Path | None = None) -> list[BenchTarget]:
    """The targets named by --variant and --binary; a base named by neither is a variant
    (`--base rel_o2nofp --variant rel_pgo_use` compares the two builds)."""
    binary_labels = [spec.split("=", 1)[0] for spec in binaries]
    names = list(variants)
    if base not in names and base not in binary_labels:
        names.insert(0, base)
    return [variant_target(v, source_path) for v in names] + [binary_target(b) for b in binaries]


def variant_target(name: str, source_path: Path | None = None) -> BenchTarget:
    """A build pgolab made, by label (the variant name unless --label gave another): the newest
    build of that name, or the one from source_path."""
    import json

    from .targets import target_for
    records = []
    for record_path in paths.builds_dir().glob(f"*/{name}/build.json"):
        record = json.loads(record_path.read_text())
        if source_path and Path(record["source"]["path"]) != source_path.absolute():
            continue
        records.append((record_path.stat().st_mtime, record_path, record))
    if not records:
        raise PgolabError(f"no finished build of variant {name!r} in {paths.builds_dir()}",
                          hint=f"build it first: pgolab build mariadb --variant {name}")
    _, record_path, record = max(records, key=lambda r: r[0])
    target = target_for(record["server"])
    final = record_path.parent / "final"
    installation = target.installation(Path(record["source"]["path"]), final / "build", final / "install")
    return BenchTarget(name, "variant", installation, record)


def binary_target(spec: str) -> BenchTarget:
    """--binary NAME=PATH: any server binary, e.g. Debian's /usr/sbin/mariadbd."""
    from .targets import MariaDBInstallation, PostgreSQLInstallation
    if "=" not in spec:
        raise PgolabError(f"--binary takes NAME=PATH, got {spec!r}", hint="e.g. --binary distro=/usr/sbin/mariadbd")
    label, path_text = spec.split("=", 1)
    path = Path(path_text).expanduser().absolute()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise PgolabError(f"{path} is not an executable file", hint="give the server binary, e.g. /usr/sbin/mariadbd")
    if path.name == "postgres":
        installation = PostgreSQLInstallation(bin_dir=path.parent)
    elif path.name in ("mariadbd", "mysqld"):
        installation = MariaDBInstallation.system(path)
        installation.bin_dir = path.parent if (path.parent / "mariadb").exists() else Path("/usr/bin")
    else:
        raise PgolabError(f"cannot tell which server {path} is", hint="the binary must be named mariadbd or postgres")
    version = Runner(paths.home() / "logs" / "binary-version.log").run(
        [str(path), "--version"], check=False, what="server --version").output.strip()
    return BenchTarget(label, "binary", installation, {"path": str(path), "version": version,
                                                       "description": f"binary {path} ({version})"})
