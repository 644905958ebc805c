"""A benchmark run: targets, run identity, and each measurement mode's scheduler and executor.

`run_bench` checks the targets, creates or resumes the stored run (a resume must be the
same experiment: options, suite, host and every target's binary digest), loads the
golden data once, and runs the scheduler with a QPS executor, a cost executor, or one
after the other. Servers, sockets and data copies live under the run's folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import replace
from pathlib import Path
from typing import Callable

from . import paths, suite as suite_mod
from .cost import CYCLE_FORMULA, CACHE_GEOMETRY, CostExecutor
from .errors import PgolabError
from .fleet import BenchOptions, BenchTarget, Fleet  # noqa: F401 (BenchOptions, BenchTarget: bench's API)
from .qps import QpsExecutor
from .runner import Runner
from .schedule import Plan, Progress, Scheduler
from .sources import file_digest
from .store import Store

EXECUTORS = {"qps": QpsExecutor, "cost": CostExecutor}


def cpu_identity(cpuinfo: str) -> str:
    """Family, model and stepping from /proc/cpuinfo: "AMD EPYC" alone names several generations
    whose front ends price the same code very differently."""
    fields = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    parts = [f"{name} {fields[name]}" for name in ("cpu family", "model", "stepping") if name in fields]
    return ", ".join(parts) or "unknown"


CACHE_KINDS = {"Data": "d", "Instruction": "i"}     # sysfs "Unified" caches get no letter


def cache_sizes(cache_dir: Path) -> str:
    """cpu0's caches from sysfs, e.g. "L1d 48K, L1i 32K, L2 1024K, L3 32768K"."""
    found = []
    for index in sorted(cache_dir.glob("index*")):
        try:
            level, kind, size = ((index / f).read_text().strip() for f in ("level", "type", "size"))
        except OSError:
            continue
        found.append(f"L{level}{CACHE_KINDS.get(kind, '')} {size}")
    return ", ".join(found) or "unknown"


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def host_info() -> dict:
    cpuinfo = _read("/proc/cpuinfo")
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
               "unknown")
    mem_kb = next((int(line.split()[1]) for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), 0)
    return {"cpu": cpu, "cpu_id": cpu_identity(cpuinfo),
            "caches": cache_sizes(Path("/sys/devices/system/cpu/cpu0/cache")), "cores": os.cpu_count(), "kernel": platform.release(),
            "memory_gib": round(mem_kb / 1024 / 1024, 1), "hostname": platform.node()}


HOST_IDENTITY = ("cpu", "cpu_id", "caches", "cores", "memory_gib", "kernel", "hostname")


def plan_for(mode: str, options: BenchOptions) -> Plan:
    if mode == "cost":
        # Read-only statements cost the same every time (MariaDB: repeats within 0.1 %): one
        # measurement. Writes, and reads of what they left, depend on how background threads
        # (InnoDB purge, autovacuum) interleaved: two servers of one binary differed by up to 8 %
        # (MariaDB update-index) and 14 % (PostgreSQL point-2): repeats, and an interval from them.
        return Plan(instances=1, blocks=1, max_instances=1, detect_outliers=False,
                    write_blocks=options.cost_write_repeats)
    return Plan(instances=options.instances, blocks=options.blocks,
                max_instances=max(options.max_instances, options.instances), target_ci=options.target_ci,
                pair_budget_s=options.pair_budget_s)


def run_identity(server: str, base: str, targets: list[BenchTarget], digests: dict[str, str],
                 options: BenchOptions, host: dict) -> dict:
    """What a resumed run must match, key by key."""
    micros = [suite_mod.key(m) for m in suite_mod.suite(options.suite)]
    identity = {"server": server, "base": base, "suite": options.suite, "micros": micros,
                "options": options.identity(), "targets": digests,
                "host": {k: host[k] for k in HOST_IDENTITY}}
    if "cost" in options.modes:
        identity["cost_method"] = {"cache_geometry": CACHE_GEOMETRY, "cycles": CYCLE_FORMULA}
    return identity


BINARIES_PLACEHOLDER = "{binaries}"


def resolve_run_name(name: str, digests: dict[str, str]) -> str:
    """`{binaries}` in a run name becomes a short digest of every target's label and binary: the
    same builds continue their run, a rebuild (other binaries, e.g. on a new machine) starts one of
    its own instead of being refused after hours of building."""
    if BINARIES_PLACEHOLDER not in name:
        return name
    short = hashlib.sha256(json.dumps(sorted(digests.items())).encode()).hexdigest()[:8]
    return name.replace(BINARIES_PLACEHOLDER, short)


def check_targets(base: str, targets: list[BenchTarget]) -> str:
    labels = [t.label for t in targets]
    if base not in labels:
        raise PgolabError(f"base {base!r} is not among the targets ({', '.join(labels)})")
    if len(set(labels)) != len(labels):
        raise PgolabError("two targets share a label", hint="name binaries uniquely: --binary NAME=PATH")
    servers_of = {t.installation.server for t in targets}
    # sysbench drives MariaDB and MySQL alike; each family gets its own data directory (fleet).
    if len({t.installation.sysbench_driver for t in targets}) != 1:
        raise PgolabError(f"targets mix servers ({', '.join(sorted(servers_of))})",
                          hint="MariaDB and MySQL can share a run; PostgreSQL is benchmarked in a run of its own")
    return "+".join(sorted(servers_of))


def run_bench(store: Store, run_name: str, base: str, targets: list[BenchTarget], options: BenchOptions,
              command: str, on_step: Callable[[Progress], None] | None = None) -> int:
    server = check_targets(base, targets)
    if options.cost_tolerance is None:
        options = replace(options, cost_tolerance=max(t.installation.cost_repeatability for t in targets))
    # The base first: every order and table starts from it.
    targets = sorted(targets, key=lambda t: t.label != base)
    labels = [t.label for t in targets]
    digests = {t.label: file_digest(t.installation.server_binary) for t in targets}
    run_name = resolve_run_name(run_name, digests)
    host = host_info()
    run_id, _ = store.create_or_resume_run(
        run_name, server=server, base=base, suite=options.suite, options=options.as_dict(), host=host,
        identity=run_identity(server, base, targets, digests, options, host), command=command)
    for t in targets:
        store.add_target(run_id, t.label, t.kind, str(t.installation.server_binary), digests[t.label],
                         t.description)
    fleet = Fleet(targets, paths.runs_dir() / run_name, options, base)
    micros = list(suite_mod.suite(options.suite))
    progress = Progress(0)
    try:
        fleet.prepare()
        for mode in options.modes:
            executor = EXECUTORS[mode](fleet, options, labels)
            try:
                Scheduler(store, run_id, base, labels, plan_for(mode, options), on_step,
                          progress).run(micros, executor)
            finally:
                executor.close()
        store.set_status(run_id, "finished")
    except (KeyboardInterrupt, SystemExit):
        store.set_status(run_id, "interrupted")   # the same command continues it
        raise
    except BaseException:
        store.set_status(run_id, "failed")
        raise
    finally:
        fleet.close()
    return run_id


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
    """A build pgolab made, by label: the newest build of that name, or the one from source_path."""
    from .record import BuildRecord
    record = BuildRecord.find(name, source_path)
    return BenchTarget(name, "variant", record.installation(), record.as_dict())


def binary_target(spec: str) -> BenchTarget:
    """--binary NAME=PATH: any server binary, e.g. Debian's /usr/sbin/mariadbd."""
    from .targets import installation_for_binary
    if "=" not in spec:
        raise PgolabError(f"--binary takes NAME=PATH, got {spec!r}", hint="e.g. --binary distro=/usr/sbin/mariadbd")
    label, path_text = spec.split("=", 1)
    path = Path(path_text).expanduser().absolute()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise PgolabError(f"{path} is not an executable file", hint="give the server binary, e.g. /usr/sbin/mariadbd")
    installation = installation_for_binary(path)
    version = Runner(paths.home() / "logs" / "binary-version.log").run(
        [str(path), "--version"], check=False, what="server --version").output.strip()
    return BenchTarget(label, "binary", installation, {"path": str(path), "version": version,
                                                       "description": f"binary {path} ({version})"})
