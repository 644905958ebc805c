"""A matrix on a Dask cluster (`pgolab matrix ... --cluster tcp://SCHEDULER:8786`).

Users start the cluster with Dask's own commands; each worker offers one build at a time and has a
pgolab home of its own:

    dask scheduler
    PGOLAB_HOME=/srv/pgolab dask worker tcp://SCHEDULER:8786 --nworkers 1 --nthreads 1 --resources build=1

Dask does the scheduling: one task per build (a PGO build and its _bolt twin are one task, as they
share a training), each needing the worker resource `build`, so a worker builds one at a time; a
task of a worker that is lost runs again on another (Dask reschedules it), and so does a share a
worker cannot measure (a -march=native build in cost mode on a CPU with AVX-512: the client sends
it to each build worker that has not left it out, and notes it not built only when all have).
A task builds its share and the base in the worker's home (the base once per worker: later tasks
find it up to date), measures their cost there, and returns its run as a run file (runfile.py).
The client imports each into its store as it arrives and merges them (merge.py), every build read
against the base of its own task. Killed and run again, the same command continues: the workers'
builds and runs are up to date or resume, and importing and merging twice changes nothing.

Wall-clock QPS belongs to one machine, the bench host (`--bench-host`, one of the workers): with it,
each task also names the builds it measured (shipping.BuildOnWorker), and once every task is done
the client picks one build of each label, has the worker that holds it pack its install tree, and
one last task, pinned to the bench host, takes those packs straight from the workers (Dask moves
them worker to worker: a MariaDB tree is far too large to pass through the client for each of 23
builds), unpacks them (checked by digest) and measures every build's QPS against the base in one
run, which the client imports beside the merged cost run. Before that, the bench host builds itself,
for wall-clock figures alone, a share no worker could cost-measure and a -march=native share built on
another CPU model (it may not run on the bench host, and it is not that CPU's native build).
Without it, a cluster run asked for QPS is refused with that option named.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field, replace
from typing import Callable

from . import bench, debian, matrix, merge, paths, runfile, shipping
from .matrix import training_groups
from .errors import PgolabError
from .measurement import BenchOptions
from .phases import QuietReporter
from .runner import home_runner
from .schedule import Progress
from .shipping import BuildOnWorker, PackedInstall
from .store import NOT_BUILT, Store
from .variants import Variant, parse
from .workloads import TrainingSpec

RESOURCE = "build"
NEWS_EVERY = 60     # seconds without a finished task before the client says who works on what


@dataclass(frozen=True)
class Share:
    """One task: what a worker builds and measures beside the base."""
    source: str              # as the user named it: a path every worker has, or a server to fetch
    variants: tuple[str, ...]
    base: str
    train: TrainingSpec
    options: BenchOptions
    run_name: str
    jobs: int
    ship: bool = False       # name the builds too, for the bench host to receive


@dataclass(frozen=True)
class ShareResult:
    run_name: str
    run_file: bytes          # empty when the worker could measure none of the share's builds
    worker: str              # the worker's host name and CPU
    samples: int
    left_out: str | None = None     # why the worker built nothing (a -march=native share on AVX-512)
    address: str = ""               # the Dask worker's address: a share it left out goes to another
    builds: tuple[BuildOnWorker, ...] = ()     # the share's builds and the base, when shipped


class _QuietMatrix:
    def left_out(self, variant, reason):
        pass

    def build_started(self, index, total, variant):
        return QuietReporter()

    def build_finished(self, index, total, result, seconds):
        pass

    def bench_step(self, state: Progress):
        pass


def _matrix_request(share: Share) -> matrix.MatrixRequest:
    tree = debian.resolve(share.source, home_runner("cluster-source"))
    return matrix.MatrixRequest(sources=[tree], variants=[parse(v) for v in share.variants], base=share.base,
                                train=share.train, options=share.options, run_name=share.run_name, jobs=share.jobs)


def run_share(share: Share) -> ShareResult:
    """On a worker: build the share and the base in this worker's pgolab home, measure their cost,
    and return the run as a run file; nothing, and why, when this worker can measure none of them."""
    worker = this_worker()
    left = matrix.unmeasurable_here([parse(v) for v in share.variants], share.base, share.options)
    if len(left) == len(share.variants):
        return ShareResult(share.run_name, b"", worker, 0, "; ".join(f"{v}: {why}" for v, why in left.items()),
                           worker_address())
    store = Store(paths.home() / "cluster-runs.sqlite")
    built = matrix.run_matrix(_matrix_request(share), store, _QuietMatrix(),
                              f"pgolab cluster task {share.run_name}").builds
    builds = tuple(shipping.on_worker(b.record) for b in built if b.record) if share.ship else ()
    data, samples = runfile.exported(store, share.run_name)
    return ShareResult(share.run_name, data, worker, samples, address=worker_address(), builds=builds)


def build_for_bench_host(share: Share) -> ShareResult:
    """On the bench host: build a share's variants (not the base: the workers send theirs) for
    wall-clock figures alone, and name the builds."""
    request = _matrix_request(share)
    built = matrix.build_all(request, request.variants, _QuietMatrix())
    return ShareResult(share.run_name, b"", this_worker(), 0, address=worker_address(),
                       builds=tuple(shipping.on_worker(result.record) for _, result in built))


def cpu_model() -> str:
    """This machine's CPU model, as wall-clock figures and a -march=native build name it."""
    from .host import Host
    return Host.this().model()


def this_worker() -> str:
    """This machine as a progress line names it: host name, CPU model and family/model/stepping."""
    from .host import Host
    host = Host.this()
    return f"{platform.node()} ({host.cpu}, {host.cpu_id})"


def worker_address() -> str:
    """The address of the Dask worker running this task; empty outside a worker."""
    from distributed import get_worker
    try:
        return get_worker().address
    except ValueError:
        return ""


def workers_info(client) -> dict:
    """The scheduler's view of every worker (distributed 2025.4-2026.6 list 5 unless asked for all)."""
    return client.scheduler_info(n_workers=-1)


def build_workers(scheduler_info: dict) -> list[str]:
    """The addresses of the workers that offer the resource every task needs."""
    return sorted(a for a, w in scheduler_info["workers"].items() if w.get("resources", {}).get(RESOURCE))


def shares(variants: list[Variant], base: str, source: str, train: TrainingSpec, options: BenchOptions,
           run_name: str, jobs: int) -> list[Share]:
    """One share per training group (a PGO build with its _bolt twin), most costly first."""
    groups = training_groups([v for v in variants if v.name != base])
    return [Share(source, tuple(v.name for v in group), base, train, options, f"{run_name}-{group[0].name}", jobs)
            for group in groups]


def clock_modes(options: BenchOptions) -> tuple[str, ...]:
    """The wall-clock measures asked for (QPS): they belong to one machine, the bench host."""
    return tuple(m for m in options.modes if m in merge.clock_modes())


def worker_options(options: BenchOptions) -> BenchOptions:
    """What each task measures where it builds: every measure but the wall-clock ones."""
    return replace(options, modes=tuple(m for m in options.modes if m not in clock_modes(options)))


def check_options(options: BenchOptions, bench_host: str | None = None) -> None:
    clock = clock_modes(options)
    if clock and not bench_host:
        raise PgolabError(f"{', '.join(clock)} belongs to one machine, and a cluster builds on many",
                          hint="name that machine with --bench-host HOST (a worker's name, host or address): it "
                               "receives every build and measures them all; or --measure cost alone")
    if bench_host and not clock:
        raise PgolabError("--bench-host measures wall-clock figures, and none is asked for",
                          hint="--measure cost,qps")
    if not worker_options(options).modes:
        raise PgolabError("a cluster measures cost where it builds, and cost is not asked for",
                          hint="--measure cost,qps (QPS on the --bench-host)")


@dataclass(frozen=True)
class BenchHostTask:
    """The wall-clock run on the bench host: every build the workers measured, beside the base."""
    host: str                 # a worker's name, host or address, as the user named it
    base: str
    options: BenchOptions     # the wall-clock measures alone
    run_name: str


def bench_host_task(host: str, base: str, options: BenchOptions, name: str) -> BenchHostTask:
    return BenchHostTask(host, base, replace(options, modes=clock_modes(options)), f"{name}-on-bench-host")


def find_worker(scheduler_info: dict, host: str) -> str:
    """The address of the worker the user named by its address, name or host."""
    workers = scheduler_info["workers"]
    found = [a for a, w in workers.items() if host in (a, str(w.get("name")), w.get("host"))]
    if len(found) != 1:
        names = ", ".join(f"{w.get('name')} ({a})" for a, w in workers.items())
        raise PgolabError(f"{'no' if not found else len(found)} workers of the cluster are {host!r}: {names}",
                          hint="--bench-host takes one worker's name (dask worker --name), host or address")
    return found[0]


def bench_on_host(task: BenchHostTask, installs: list[PackedInstall], command: str,
                  run_bench: Callable = bench.run_bench) -> ShareResult:
    """On the bench host: unpack every build the workers packed (one per label: the client picks the
    base of the first task in the matrix's order; refusing one whose binary is not the one packed),
    measure them all in one wall-clock run against the base, and return it as a run file. A
    -march=native build from another CPU model is left out, and the run says why. The run's name ends
    in the binaries' digest: another set of builds is another run, not a clash with the first."""
    here = cpu_model()
    into = paths.home() / "cluster-installs"
    targets, notes = [], []
    for packed in installs:
        if (why := shipping.foreign_native(packed, here)) is not None:
            notes.append(f"{NOT_BUILT}{packed.label} on the bench host: {why}")
            continue
        targets.append(shipping.unpack(packed, into))
    store = Store(paths.home() / "cluster-runs.sqlite")
    run_id = run_bench(store, f"{task.run_name}-{{binaries}}", task.base, targets, task.options, command, notes=notes)
    name = store.run(run_id).name
    data, samples = runfile.exported(store, name)
    return ShareResult(name, data, this_worker(), samples, address=worker_address())


def import_result(store: Store, result: ShareResult) -> runfile.Imported:
    return runfile.import_content(store, runfile.decoded(result.run_file, f"the run file {result.worker} sent"))


def run(address: str, shares_: list[Share], store: Store, name: str, command: str,
        say: Callable[[str], None] = print, bench: BenchHostTask | None = None) -> "merge.Merged":
    """Every share on the cluster; each result imported as it arrives, then all merged into `name`.
    With a bench host, every build then travels there and its wall-clock run is the merged run's
    per-machine run (merge.Merged.per_cpu)."""
    try:
        from distributed import Client
    except ImportError as exc:
        raise PgolabError("the dask distributed package is missing", hint="pip install 'distributed' "
                          "(scripts/setup.sh installs it)") from exc
    try:
        client = Client(address, timeout="30s")
    except (OSError, TimeoutError) as exc:
        raise PgolabError(f"no Dask scheduler answers at {address}: {exc}",
                          hint="start one with `dask scheduler`, and workers with `dask worker ADDRESS "
                               "--nthreads 1 --resources build=1`")
    try:
        info = workers_info(client)
        if not build_workers(info):
            raise PgolabError(f"no worker of {address} offers the resource {RESOURCE!r}; the tasks would wait forever",
                              hint=f"start workers with `dask worker {address} --nthreads 1 --resources {RESOURCE}=1`")
        bench_address = find_worker(info, bench.host) if bench else None
        say(f"cluster {address}: {len(info['workers'])} workers, {len(shares_)} tasks (one build each, beside the base)"
            + (f"; wall-clock figures on {bench.host} ({bench_address})" if bench else ""))
        outcome = _run_shares(client, shares_, store, say, ship=bench is not None)
        if not outcome.measured:
            raise PgolabError("no worker could measure any of the builds",
                              hint="add workers on a CPU without AVX-512 for -march=native builds in cost mode")
        # The cost run first: a bench host that fails or leaves does not take it along.
        merged = merge.merge(store, [s.run_name for s in shares_ if s.run_name in outcome.measured], name, command,
                             at_least=1, notes=outcome.not_built)
        per_machine = {}
        if bench:
            try:
                rebuilt = _build_on_bench_host(client, bench, bench_address, shares_, outcome, say)
                chosen = outcome.shipped([s.run_name for s in shares_])
                result = _run_on_bench_host(client, bench, bench_address, chosen, command, say)
            except PgolabError as exc:
                raise PgolabError(f"{exc.message}; the cost run {name} is merged", log=exc.log, detail=exc.detail,
                                  hint=exc.hint or "run the same command again: the QPS run continues") from exc
            imported = import_result(store, result)
            say(f"wall-clock run {result.run_name} on {result.worker}: {result.samples} samples "
                f"({imported.samples_added} new here)")
            store.add_commands(merged.run_id, [f"wall-clock figures measured on the bench host {result.worker}, "
                                               f"every build on that one machine: run {result.run_name}", *rebuilt])
            per_machine = {result.worker: store.run(result.run_name).id}
    finally:
        client.close()
    return replace(merged, per_cpu={**merged.per_cpu, **per_machine})


@dataclass
class SharesOutcome:
    measured: list[str] = field(default_factory=list)         # run names of the shares measured
    not_built: list[str] = field(default_factory=list)        # the merged run's notes of the others
    builds: dict[str, tuple[str, tuple[BuildOnWorker, ...]]] = field(default_factory=dict)  # by share run
    # name: the worker's address and what it built
    left_out: list[str] = field(default_factory=list)         # run names of the shares no worker built
    bench_host_builds: list[tuple[str, BuildOnWorker]] = field(default_factory=list)   # built there

    def for_bench_host(self, shares_: list[Share], bench_cpu: str) -> list[tuple[Share, str]]:
        """The shares the bench host builds itself for wall-clock figures, with why: one no worker
        could cost-measure, and a -march=native one built on another CPU model."""
        out = []
        for share in shares_:
            built_on = {b.built_on for b in self.builds.get(share.run_name, ("", ()))[1] if b.label in share.variants}
            if share.run_name in self.left_out:
                out.append((share, "no worker could measure its cost"))
            elif any(parse(v).native for v in share.variants) and built_on and built_on != {bench_cpu}:
                out.append((share, f"-march=native, built by the workers on {', '.join(sorted(built_on))}"))
        return out

    def shipped(self, order: list[str]) -> list[tuple[str, BuildOnWorker]]:
        """What the bench host receives, and from which worker: its own builds, then each other label
        once, the shares taken in the matrix's order (not the order they finished in), so the base is
        the same on every run of the command."""
        chosen: dict[str, tuple[str, BuildOnWorker]] = {b.label: (where, b) for where, b in self.bench_host_builds}
        for run_name in order:
            address, builds = self.builds.get(run_name, ("", ()))
            for build in builds:
                chosen.setdefault(build.label, (address, build))
        return list(chosen.values())


def _run_shares(client, shares_: list[Share], store: Store, say: Callable[[str], None], ship: bool) -> SharesOutcome:
    """Each share a task; a share a worker cannot measure (a -march=native build on AVX-512, in cost
    mode) goes to each other build worker in turn, and only when every one has left it out (or the
    ones left have gone) is it not built. Each measured share's run is imported as it arrives."""
    from distributed import wait

    def submit(share: Share, key: str, **where):
        return client.submit(run_share, replace(share, ship=ship), resources={RESOURCE: 1}, pure=False, key=key,
                             **where)

    futures = {submit(s, f"pgolab-{s.run_name}"): s for s in shares_}
    refused: dict[str, set[str]] = {}
    allowed: dict[object, list[str]] = {}     # a share sent on: the workers it may go to
    pending, done, outcome = set(futures), 0, SharesOutcome()

    def not_built(share: Share, which: str) -> None:
        nonlocal done
        done += 1
        variants = ', '.join(share.variants)
        say(f"[{done}/{len(shares_)}] {variants} not built, {which}")
        outcome.not_built.append(f"{NOT_BUILT}{variants}, {which}")
        outcome.left_out.append(share.run_name)

    while pending:
        try:
            finished, pending = wait(pending, timeout=NEWS_EVERY, return_when="FIRST_COMPLETED")
        except TimeoutError:    # a minute without news: who works on what
            say(f"{done}/{len(shares_)} done; working: {_busy(client)}")
            present = set(build_workers(workers_info(client)))
            for future in [f for f in pending if f in allowed and not present & set(allowed[f])]:
                future.cancel()
                pending.discard(future)
                share = futures.pop(future)
                not_built(share, "which the workers it was sent on to left before measuring it")
            continue
        for future in finished:
            result: ShareResult = future.result()
            share = futures.pop(future)    # its result, and the install trees in it, can go
            variants = ', '.join(share.variants)
            if result.left_out:
                tried = refused.setdefault(share.run_name, set())
                tried.add(result.address)
                others = [w for w in build_workers(workers_info(client)) if w not in tried]
                if result.address and others:
                    say(f"{variants} left out by {result.worker} ({result.left_out}); "
                        f"sent to another worker ({len(others)} not tried)")
                    again = submit(share, f"pgolab-{share.run_name}-try{len(tried) + 1}", workers=others,
                                   allow_other_workers=False)
                    futures[again], allowed[again] = share, others
                    pending.add(again)
                    continue
                not_built(share, f"which none of the {len(tried)} workers could measure ({result.left_out})"
                          if len(tried) > 1 else f"which worker {result.worker} could not measure ({result.left_out})")
                continue
            done += 1
            outcome.measured.append(result.run_name)
            outcome.builds[result.run_name] = (result.address, result.builds)
            imported = import_result(store, result)
            say(f"[{done}/{len(shares_)}] {variants} built and measured on {result.worker}: {result.samples} "
                f"samples ({imported.samples_added} new here)")
    return outcome


def _build_on_bench_host(client, task: BenchHostTask, address: str, shares_: list[Share], outcome: SharesOutcome,
                         say: Callable[[str], None]) -> list[str]:
    """The shares the bench host builds itself for wall-clock figures alone (SharesOutcome.for_bench_host),
    one at a time; what the merged run's commands say of them."""
    bench_cpu = _on_bench_host(client, task, address, client.submit(
        cpu_model, workers=[address], allow_other_workers=False, pure=False, key=f"pgolab-cpu-of-{address}"), say)
    again = outcome.for_bench_host(shares_, bench_cpu)
    said = []
    for i, (share, why) in enumerate(again, 1):
        variants = ", ".join(share.variants)
        say(f"building {variants} on the bench host {task.host} for wall-clock figures alone ({why})")
        future = client.submit(build_for_bench_host, share, workers=[address], allow_other_workers=False, pure=False,
                               key=f"pgolab-{share.run_name}-for-bench-host")
        result: ShareResult = _on_bench_host(client, task, address, future, say)
        outcome.bench_host_builds.extend((address, build) for build in result.builds)
        say(f"[{i}/{len(again)}] {variants} built on the bench host {result.worker}")
        said.append(f"{variants} built on the bench host {result.worker} for wall-clock figures alone ({why})")
    return said


def _on_bench_host(client, task: BenchHostTask, address: str, future, say: Callable[[str], None],
                   packs: dict | None = None):
    """A task's result on the bench host, said who works on what every minute of quiet; ended with
    what to do if the bench host, or a worker packing a build it waits for (`packs`), leaves."""
    from distributed import wait
    packs = packs or {}
    while True:
        try:
            wait([future], timeout=NEWS_EVERY)
            return future.result()
        except TimeoutError:
            present = workers_info(client)["workers"]
            gone = [(where, build) for pack, (where, build) in packs.items() if not pack.done() and where not in present]
            if address not in present or gone:
                for pending in (future, *packs):
                    pending.cancel()
            if address not in present:
                raise PgolabError(f"the bench host {task.host} ({address}) left the cluster",
                                  hint="start it again and run the same command: its QPS run continues")
            if gone:
                raise PgolabError(f"the worker {gone[0][0]} left before packing {gone[0][1].label} for the bench host",
                                  hint="run the same command again: its task is built again on a worker still there")
            say(f"on the bench host {task.host}: {_busy(client)}")


def _run_on_bench_host(client, task: BenchHostTask, address: str, chosen: list[tuple[str, BuildOnWorker]],
                       command: str, say: Callable[[str], None]) -> ShareResult:
    """Each chosen build packed by the worker that holds it, and the bench host's task, pinned to it,
    given those packs: Dask sends them from worker to worker."""
    say(f"the bench host {task.host} receives {len(chosen)} builds, each packed by the worker that built it: "
        + ", ".join(sorted(build.label for _, build in chosen)))
    packs = {client.submit(shipping.pack, build, workers=[where], allow_other_workers=False, pure=False,
                           key=f"pgolab-pack-{build.label}-{build.digest[:12]}"): (where, build)
             for where, build in chosen}
    future = client.submit(bench_on_host, task, list(packs), command, workers=[address], allow_other_workers=False,
                           pure=False, key=f"pgolab-{task.run_name}")
    return _on_bench_host(client, task, address, future, say, packs)


def _busy(client) -> str:
    """Who works on what, from the scheduler."""
    busy = {w: [k.removeprefix("pgolab-") for k in keys] for w, keys in client.processing().items() if keys}
    return "; ".join(f"{w}: {', '.join(k)}" for w, k in busy.items()) or "none (waiting for workers)"
