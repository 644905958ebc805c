"""A benchmark run: targets, run identity, and each measure's scheduler and executor.

`run_bench` checks the targets, creates or resumes the stored run (a resume must be the
same experiment: options, suite, host and every target's binary digest), loads the
golden data once, and runs the scheduler with each measure's executor, one after the
other. Servers, sockets and data copies live under the run's folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Callable

from . import clients, measures as measures_mod, paths, replicates, suite as suite_mod
from .errors import PgolabError
from .fleet import BenchTarget, Fleet
from .host import Host
from .measurement import BenchOptions
from .measures import Measure
from .record import BinaryInfo, BuildRecord
from .runner import home_runner
from .schedule import Progress, Scheduler
from .sources import file_digest
from .store import Store
from .targets import installation_for_binary


def experiment_identity(server: str, options: BenchOptions, measures: list[Measure],
                        host_record: bool = True) -> dict:
    """The experiment a run is, whatever binaries it compares on whatever machine: the server, the
    suite and its tests, the options, and each measure's method; with what each measure records of the
    host it runs on (Measure.host_record: valgrind's version, say) unless `host_record` is False."""
    identity = {"server": server, "suite": options.suite,
                "micros": [suite_mod.key(m) for m in options.micros()], "options": options.identity()}
    for measure in measures:
        identity |= measure.identity() if host_record else measure.method_identity()
    return identity


# The keys of a run's identity beside its experiment: its base, its binaries (label: digest) and, where
# a measure's figures belong to the machine, the host.
BINDING_KEYS = ("base", "targets", "host")


def run_identity(server: str, base: str, targets: list[BenchTarget], digests: dict[str, str],
                 options: BenchOptions, host: Host, measures: list[Measure]) -> dict:
    """What a resumed run must match, key by key: its experiment and its binding (BINDING_KEYS). The
    machine only if a measure's figures belong to it (wall clock): a cost-only run continues on
    another host (after `pgolab import`)."""
    identity = experiment_identity(server, options, measures) | {"base": base, "targets": digests}
    if any(m.machine_bound for m in measures):
        identity["host"] = host.identity()
    return identity


BINARIES_PLACEHOLDER = "{binaries}"


def resolve_run_name(name: str, digests: dict[str, str], host: dict | None = None) -> str:
    """`{binaries}` in a run name becomes a short digest of every target's label and binary, and of
    the host where the run's figures belong to it (`host`: a QPS run's identity's): the same builds
    continue their run, a rebuild (other binaries), or the same binaries on another machine in QPS
    (the same PGO binaries from --profiles), start one of their own instead of being refused."""
    if BINARIES_PLACEHOLDER not in name:
        return name
    content = sorted(digests.items()) if host is None else [sorted(digests.items()), host]
    short = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:8]
    return name.replace(BINARIES_PLACEHOLDER, short)


def _named_with_host(store: Store, name: str, digests: dict[str, str], identity: dict) -> str:
    """resolve_run_name with the run's host where it has one; a run this host began before the host
    was part of the name (2026-12-05) keeps its name and goes on."""
    resolved = resolve_run_name(name, digests, identity.get("host"))
    earlier = resolve_run_name(name, digests)
    if resolved != earlier and store.run(resolved) is None and (run := store.run(earlier)) is not None \
            and run.identity.get("host") == identity.get("host"):
        return earlier
    return resolved


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


def check_measurable(base: str, labels: list[str], left_out: dict[str, dict[str, str]]) -> set[str]:
    """The measures (keys of `left_out`: each measure's targets it cannot measure, with why) that have
    builds to compare; a measure left with the base alone measures nothing, and the report says why
    of each build it left out. Refused: the base left out of a measure, or nothing to compare in any."""
    if not any(left_out.values()):
        return set(left_out)
    comparing = {mode for mode, out in left_out.items() if len(labels) - len(out) >= 2}
    refused = next(((mode, base) for mode, out in left_out.items() if base in out), None)
    if refused is None and not comparing:
        refused = next((mode, next(iter(out))) for mode, out in left_out.items() if out)
    if refused is not None:
        mode, label = refused
        if label == base:   # every build is read against it
            raise PgolabError(f"{mode} cannot measure the base {base} here: {left_out[mode][base]}",
                              hint=f"choose another --base (rel_o2nofp), leave {mode} out of --measure, or run it "
                                   "on a CPU without AVX-512")
        raise PgolabError(f"{mode} of {label}: {left_out[mode][label]}; nothing left to compare in {mode} mode",
                          hint=f"leave {mode} out of --measure, or build {label} so that {mode} mode can run it "
                               "(for cost: without _native, or on a CPU without AVX-512)")
    return comparing


FleetFactory = Callable[[list[BenchTarget], Path, BenchOptions, str], Fleet]


def run_bench(store: Store, run_name: str, base: str, targets: list[BenchTarget], options: BenchOptions,
              command: str, on_step: Callable[[Progress], None] | None = None, *,
              measures: list[Measure] | None = None, fleet_factory: FleetFactory = Fleet,
              notes: list[str] = ()) -> int:
    """measures: what to measure (default: the options' modes); fleet_factory: what starts the
    servers. A test passes a fake of each to run bench, store and report without a server. notes:
    lines the run keeps beside its commands (what a matrix left out, say)."""
    measures = measures if measures is not None else measures_mod.of_modes(options.modes)
    server = check_targets(base, targets)
    left_out = {m.key: m.unavailable(targets) for m in measures}
    comparing = check_measurable(base, [t.label for t in targets], left_out)
    for client in clients.needed(options.micros()):
        for t in targets:
            client.check(t.installation)
    if options.cost_tolerance is None:
        options = replace(options, cost_tolerance=max(t.installation.cost_repeatability for t in targets))
    # The base first: every order and table starts from it.
    targets = sorted(targets, key=lambda t: t.label != base)
    labels = [t.label for t in targets]
    digests = {t.label: file_digest(t.installation.server_binary) for t in targets}
    host = Host.this()
    identity = run_identity(server, base, targets, digests, options, host, measures)
    run_name = _named_with_host(store, run_name, digests, identity)
    run_id, _ = store.create_or_resume_run(
        run_name, server=server, base=base, suite=options.suite, options=options, host=host,
        identity=identity, command=command)
    store.add_commands(run_id, list(notes))
    for t in targets:
        store.add_target(run_id, t.label, t.kind, str(t.installation.server_binary), digests[t.label],
                         t.description)
    fleet = fleet_factory(targets, paths.runs_dir() / run_name, options, base)
    micros = list(options.micros())
    progress = Progress(0)
    try:
        fleet.prepare()
        for measure in (m for m in measures if m.key in comparing):
            measured = [label for label in labels if label not in left_out[measure.key]]
            executor = measure.executor(fleet, options, measured)
            try:
                Scheduler(store, run_id, base, measured, measure.plan(options), on_step,
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
                    source_path: Path | None = None, replicate_count: int = 1) -> list[BenchTarget]:
    """The targets named by --variant and --binary; a base named by neither is a variant
    (`--base rel_o2nofp --variant rel_pgo_use` compares the two builds). With replicates, every
    build's replicates (`V+r2`, ...) too: the base's are measured against it, one build against another."""
    binary_labels = [spec.split("=", 1)[0] for spec in binaries]
    names = list(variants)
    if base not in names and base not in binary_labels:
        names.insert(0, base)
    names = [r for name in names for r in replicates.labels(name, replicate_count)]
    return [variant_target(v, source_path) for v in names] + [binary_target(b) for b in binaries]


def variant_target(name: str, source_path: Path | None = None) -> BenchTarget:
    """A build pgolab made, by label: the newest build of that name, or the one from source_path."""
    record = BuildRecord.find(name, source_path)
    return BenchTarget(name, record.kind, record.installation(), record)


def binary_target(spec: str) -> BenchTarget:
    """--binary NAME=PATH: any server binary, e.g. Debian's /usr/sbin/mariadbd."""
    if "=" not in spec:
        raise PgolabError(f"--binary takes NAME=PATH, got {spec!r}", hint="e.g. --binary distro=/usr/sbin/mariadbd")
    label, path_text = spec.split("=", 1)
    replicates.check_label(label)
    path = Path(path_text).expanduser().absolute()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise PgolabError(f"{path} is not an executable file", hint="give the server binary, e.g. /usr/sbin/mariadbd")
    installation = installation_for_binary(path)
    version = home_runner("binary-version").run(
        [str(path), "--version"], check=False, what="server --version").output.strip()
    return BenchTarget(label, BinaryInfo.kind, installation,
                       BinaryInfo(str(path), version, f"binary {path} ({version})"))
