"""The servers of one benchmark run: golden data, a copy per target, start and stop.

Fairness: the data is loaded once (by the base server) into a golden data directory;
every target gets its own copy and the same server options. Executors ask the fleet
to (re)start every target, optionally under a wrapper (taskset, valgrind), and to
run sysbench against one of them.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import clients, scratch
from .clients import BENCH_DATABASE
from .measurement import BenchOptions
from .record import TargetDescription
from .runner import Runner
from .server import ServerProcess, initialize_datadir
from .paths import chown_tree
from .errors import PgolabError



@dataclass
class BenchTarget:
    label: str
    kind: str                 # variant | binary
    installation: object
    description: TargetDescription
    env: dict = field(default_factory=dict)   # e.g. where an instrumented server writes its profile

    @property
    def data_family(self) -> str:
        """Targets of one family can start on one data directory: same server, same release series as
        the server defines it (MariaDB/MySQL major.minor, PostgreSQL major): MySQL cannot read
        MariaDB's data directory, PostgreSQL 17 not 15's."""
        match = re.search(r"\d+(?:\.\d+)*", self.description.version)
        parts = match.group(0).split(".")[:self.installation.data_version_parts] if match else []
        return f"{self.installation.server}-{'.'.join(parts) or 'unknown'}"


def cpu_split(cpus: int) -> tuple[int, int] | None:
    """How many of `cpus` CPUs the server and the client are pinned to (None: one CPU, no pinning)."""
    return (cpus // 2, cpus - cpus // 2) if cpus >= 2 else None


def cpu_sets() -> tuple[str, str] | None:
    """Disjoint CPU lists for the server and the client, or None on a single CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    split = cpu_split(len(cpus))
    if split is None:
        return None
    return ",".join(map(str, cpus[:split[0]])), ",".join(map(str, cpus[split[0]:]))


class Fleet:
    """One server per target on its own copy of the golden data."""

    def __init__(self, targets: list[BenchTarget], workdir: Path, options: BenchOptions, base: str):
        self.targets = {t.label: t for t in targets}
        self.workdir, self.options, self.base = workdir, options, base
        self.servers: dict[str, ServerProcess] = {}
        self.rundirs: list[Path] = []
        self.golden: dict[str, Path] = {}   # data family -> its loaded data directory
        self.copied: set[tuple[str, str]] = set()   # (mode, label) copied from golden by this process
        self.engine_checked: set[str] = set()

    def runner(self, label: str) -> Runner:
        return Runner(self.workdir / "logs" / f"{label}.log")

    def prepare(self) -> None:
        """One golden data directory per data family, loaded by the base or the family's first target."""
        base_family = self.targets[self.base].data_family
        loaders = {base_family: self.targets[self.base]}
        for t in self.targets.values():
            loaders.setdefault(t.data_family, t)
        # A one-family run keeps its old names (no suffix).
        suffixes = {family: "" if family == base_family else f"-{family}" for family in loaders}
        if not any((self.workdir / f"golden{suffix}.done").exists() for suffix in suffixes.values()):
            check_disk(self.workdir, self.options.data_bytes(), len(loaders) + len(self.targets) * len(self.options.modes))
        for family, loader in loaders.items():
            suffix = suffixes[family]
            self.golden[family] = prepare_golden(loader, self.workdir, self.options, self.runner(f"load{suffix}"),
                                                 f"golden{suffix}")

    def datadir(self, label: str, mode: str) -> Path:
        """Each mode has its own copies: a cost run's writes do not change the QPS run's data. A
        copy left by an earlier, interrupted process is replaced: its writes stopped at a different
        point for each target, and the targets must run on the same data."""
        datadir = self.workdir / f"data-{mode}-{label}"
        if (mode, label) not in self.copied:
            golden = self.golden[self.targets[label].data_family]
            shutil.rmtree(datadir, ignore_errors=True)
            tmp = datadir.with_name(datadir.name + ".copying")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(golden, tmp, symlinks=True)
            tmp.rename(datadir)
            if self.targets[label].installation.run_as:
                chown_tree(datadir, self.targets[label].installation.run_as)
            self.copied.add((mode, label))
        return datadir

    def start(self, label: str, mode: str, wrapper: list[str], extra_options: list[str],
              timeout: float = 180) -> ServerProcess:
        self.stop(label)
        t = self.targets[label]
        rundir = scratch.make("bench")
        self.rundirs.append(rundir)
        if t.installation.run_as:
            chown_tree(rundir, t.installation.run_as)
        server = ServerProcess(t.installation, self.datadir(label, mode), rundir, self.runner(label),
                               options=[*server_options(t, self.options), *extra_options], env=dict(t.env),
                               wrapper=wrapper)
        server.start(timeout=timeout)
        self.servers[label] = server
        if self.options.engine and label not in self.engine_checked:
            check_engine(t, server, self.options.engine)
            self.engine_checked.add(label)
        return server

    def stop(self, label: str | None = None) -> None:
        for name in ([label] if label else list(self.servers)):
            server = self.servers.pop(name, None)
            if server is not None:
                try:
                    server.stop(timeout=300)
                finally:
                    shutil.rmtree(server.rundir, ignore_errors=True)

    def close(self) -> None:
        try:
            self.stop()
        except BaseException:
            for server in self.servers.values():
                server.kill()
            raise
        finally:
            for rundir in self.rundirs:
                shutil.rmtree(rundir, ignore_errors=True)


def server_options(target: BenchTarget, options: BenchOptions) -> list[str]:
    """A target's server options in a run: the user's, and what makes the run's engine available."""
    engine = target.installation.engine_options(options.engine) if options.engine else []
    return [*options.server_options, *engine]


def check_engine(target: BenchTarget, server: ServerProcess, engine: str) -> None:
    """A target whose server lacks the run's storage engine is refused, with what adds it."""
    missing = target.installation.engine_missing(server, engine)
    if missing:
        raise PgolabError(f"{target.label} has no storage engine {engine}", hint=missing)


def check_disk(workdir: Path, copy_bytes: int, copies: int) -> None:
    """Refuse a run whose data copies (the golden data, one per target and mode) would not fit on the
    disk, before loading anything."""
    where = next(p for p in (workdir, *workdir.parents) if p.exists())
    free = shutil.disk_usage(where).free
    needed = copy_bytes * copies
    if needed > free:
        gb = 1e9
        raise PgolabError(f"the data needs about {needed / gb:.1f} GB on disk ({copies} copies of about "
                          f"{copy_bytes / gb:.1f} GB) and {where} has {free / gb:.1f} GB free",
                          hint="use fewer --tables or a smaller --table-size, fewer targets or measures, or "
                               "PGOLAB_HOME on a larger disk")


def prepare_golden(base: BenchTarget, workdir: Path, options: BenchOptions, runner: Runner,
                   name: str = "golden") -> Path:
    """Load the data once, with the base server; every target starts from a copy."""
    golden = workdir / name
    done = workdir / f"{name}.done"
    if done.exists():
        return golden
    shutil.rmtree(golden, ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    inst = base.installation
    if inst.run_as:
        chown_tree(workdir, inst.run_as)
    initialize_datadir(inst, golden, runner, env=base.env)
    rundir = scratch.make("load")
    if inst.run_as:
        chown_tree(rundir, inst.run_as)
    try:
        with ServerProcess(inst, golden, rundir, runner, options=server_options(base, options),
                           env=dict(base.env)) as server:
            server.ensure_database(BENCH_DATABASE)
            if options.engine:
                check_engine(base, server, options.engine)
            for client in clients.needed(options.micros()):
                runner.run(client.load_argv(inst, rundir, options), what=f"{client.name} load")
            for sql in inst.after_load_sql:
                server.query(sql, database=BENCH_DATABASE, what="settle the loaded data")
    finally:
        shutil.rmtree(rundir, ignore_errors=True)
    done.touch()
    return golden
