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
against the base of its own task. Killed and run again, the same command continues: a task the
client imported goes back only to a worker whose store holds that very run (elsewhere a PGO build
would be trained again: another binary), and where none is left its imported cost run is kept; a
task not imported yet is preferred where its run was started. Builds and runs there are up to date
or resume, and importing and merging twice changes nothing.

Wall-clock QPS belongs to one machine, the bench host (`--bench-host`, one of the workers): with it,
each task also names the builds it measured (shipping.BuildOnWorker); once every task is done and
the cost run is merged, the client picks one build of each label, has the worker that holds it pack
its install tree and the bench host unpack it as it arrives (Dask moves it worker to worker, never
through the client; checked by digest). Meanwhile the bench host builds itself, for wall-clock
figures alone, a share no worker could cost-measure and any -march=native build, the base included,
made on another CPU model (it may not run on the bench host, and it is not that CPU's native build).
One last task there measures every build's QPS against the base in one run, which the client
imports beside the merged cost run.
Without it, a cluster run asked for QPS is refused with that option named.
"""

from __future__ import annotations

import platform
import uuid
from dataclasses import dataclass, field, replace
from typing import Callable

from . import bench, binaries, debian, matrix, merge, paths, runfile, shipping
from .errors import PgolabError
from .fleet import BenchTarget
from .matrix import training_groups
from .measurement import BenchOptions
from .phases import QuietReporter
from .runner import home_runner
from .schedule import Progress
from .shipping import BuildOnWorker, PackedInstall
from .store import Store, not_built_note
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


def held_here(shares_: list[Share]) -> dict[str, tuple[str, ...]]:
    """On a worker: each share whose run (a task's, not a build the bench host made for QPS) this
    home's store holds, with that run's binaries ("label=sha256"), so that the same command run again
    sends it back here rather than elsewhere, where a PGO build would be trained again."""
    store_path = paths.home() / "cluster-runs.sqlite"
    if not store_path.exists():
        return {}
    store = Store(store_path)
    try:
        runs = {share.run_name: store.run(share.run_name) for share in shares_}
        return {name: run_binaries(store, run.id) for name, run in runs.items() if run is not None}
    finally:
        store.close()


def run_binaries(store: Store, run_id: int) -> tuple[str, ...]:
    """What a run measured, as "label=sha256", sorted: two runs of one name that agree on it measured
    the same binaries."""
    return tuple(sorted(f"{t.label}={t.binary_digest}" for t in store.targets(run_id)))


def build_for_bench_host(share: Share) -> ShareResult:
    """On the bench host: build a share's variants for wall-clock figures alone (the base only when
    the client asks, as a share of its own), and name the builds."""
    request = _matrix_request(share)
    built = matrix.build_all(request, request.variants, _QuietMatrix())
    return ShareResult(share.run_name, b"", this_worker(), 0, address=worker_address(),
                       builds=tuple(shipping.on_worker(result.record) for _, result in built))


def cpu_model() -> str:
    """This machine's CPU model, as wall-clock figures and a -march=native build name it."""
    from .host import Host
    return Host.this().model()


def this_worker() -> str:
    """This machine as a progress line names it: its host name and CPU model (cpu_model)."""
    return f"{platform.node()}, {cpu_model()}"


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


@dataclass(frozen=True)
class Unpacked:
    """A build as the bench host received it: a target to measure, or why it is left out."""
    label: str
    target: BenchTarget | None
    left_out: str = ""


def unpack_on_bench_host(packed: PackedInstall) -> Unpacked:
    """On the bench host, as soon as a build arrives: its tree unpacked in this home (refused if its
    binary is not the one packed), so that the packed bytes can go; a -march=native build of another
    CPU model is left out, with why (the client normally has the bench host build its own first)."""
    if (why := shipping.foreign_native(packed.record["variant"], packed.built_on, cpu_model())) is not None:
        return Unpacked(packed.label, None, why)
    return Unpacked(packed.label, shipping.unpack(packed, paths.home() / "cluster-installs"))


def bench_on_host(task: BenchHostTask, builds: list[Unpacked], command: str, notes: tuple[str, ...] = (),
                  run_bench: Callable = bench.run_bench) -> ShareResult:
    """On the bench host: every build it received (one per label: the client picks the base of the
    first task in the matrix's order) measured in one wall-clock run against the base, returned as a
    run file; what was left out (`notes`, and the builds unpacked with a reason) is noted in the run.
    The run's name ends in the binaries' digest: another set of builds is another run, not a clash
    with the first."""
    targets = [b.target for b in builds if b.target is not None]
    notes = [*notes, *(not_built_note([b.label], f"on the bench host: {b.left_out}") for b in builds if b.left_out)]
    store = Store(paths.home() / "cluster-runs.sqlite")
    run_id = run_bench(store, f"{task.run_name}-{{binaries}}", task.base, targets, task.options, command, notes=notes)
    name = store.run(run_id).name
    data, samples = runfile.exported(store, name)
    return ShareResult(name, data, this_worker(), samples, address=worker_address())


def import_result(store: Store, result: ShareResult) -> runfile.Imported:
    return runfile.import_content(store, runfile.decoded(
        result.run_file, f"the run file {result.worker} sent",
        hint="install the same pgolab on the client and on every worker, and run the same command again"))


# The merged run's lines of the bench host's run, said anew each time the command runs.
ON_BENCH_HOST = "wall-clock figures measured on the bench host "
BUILT_ON_BENCH_HOST = "built on the bench host "
MEASURED_APART = "measured on two binaries, cost and wall-clock figures "


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
                result, rebuilt = _BenchHost(client, bench, bench_address, say).measure(shares_, outcome, command)
            except PgolabError as exc:
                raise PgolabError(f"{exc.message}; the cost run {name} is merged", log=exc.log, detail=exc.detail,
                                  hint=exc.hint or "run the same command again: the QPS run continues") from exc
            imported = import_result(store, result)
            clock_run = store.run(result.run_name).id
            say(f"wall-clock run {result.run_name} on {result.worker}: {result.samples} samples "
                f"({imported.samples_added} new here)")
            apart = measured_apart_line(store, outcome.measured, result.run_name)
            if apart:
                say(apart)
            # Said anew on each run: an earlier run's lines of these go (the bench host, what it built
            # itself and the binaries apart may have changed, or its name be spelt otherwise).
            store.add_commands(merged.run_id, [f"{ON_BENCH_HOST}{result.worker}, every build on that one machine: "
                                               f"run {result.run_name}", *rebuilt, *filter(None, [apart])],
                               replacing=(ON_BENCH_HOST, BUILT_ON_BENCH_HOST, MEASURED_APART))
            per_machine = {result.worker: clock_run}
    finally:
        client.close()
    return replace(merged, per_cpu={**merged.per_cpu, **per_machine})


def measured_apart_line(store: Store, cost_runs: list[str], clock_run: str) -> str | None:
    """The merged run's line naming each label whose wall-clock figures (run `clock_run`) were measured
    on none of the binaries its cost runs measured, or None. What the bench host built itself (a kept
    cost run's build, a -march=native build of another CPU model) is such another binary."""
    labels = binaries.measured_apart(
        [t for name in cost_runs if (run := store.run(name)) for t in store.targets(run.id)],
        store.targets(store.run(clock_run).id))
    if not labels:
        return None
    return f"{MEASURED_APART}(run {clock_run}): {'; '.join(labels)}"


@dataclass
class SharesOutcome:
    measured: list[str] = field(default_factory=list)         # run names of the shares measured
    not_built: list[str] = field(default_factory=list)        # the merged run's notes of the others
    builds: dict[str, tuple[str, tuple[BuildOnWorker, ...]]] = field(default_factory=dict)  # by share run
    # name: the worker's address and what it built
    no_build: dict[str, str] = field(default_factory=dict)    # share run name -> why no worker has its build

    def shipped(self, order: list[str]) -> list[tuple[str, BuildOnWorker]]:
        """What the bench host receives, and from which worker: each label once, the shares taken in
        the matrix's order (not the order they finished in), so the base is the same on every run of
        the command."""
        chosen: dict[str, tuple[str, BuildOnWorker]] = {}
        for run_name in order:
            address, builds = self.builds.get(run_name, ("", ()))
            for build in builds:
                chosen.setdefault(build.label, (address, build))
        return list(chosen.values())

    def for_bench_host(self, shares_: list[Share], bench_cpu: str) -> list[tuple[Share, str]]:
        """What the bench host builds itself for wall-clock figures, with why: a share no worker has a
        build of, and a -march=native build that the workers made on another CPU model; the base too,
        where no worker has one or it is such a build."""
        chosen = dict((b.label, b) for _, b in self.shipped([s.run_name for s in shares_]))
        out = []
        for share in shares_:
            foreign = {why for v in share.variants if v in chosen
                       and (why := shipping.foreign_native(v, chosen[v].built_on, bench_cpu))}
            if share.run_name in self.no_build:
                out.append((share, self.no_build[share.run_name]))
            elif foreign:
                out.append((share, "; ".join(sorted(foreign))))
        base = shares_[0].base if shares_ else ""
        why = shipping.foreign_native(base, chosen[base].built_on, bench_cpu) if base in chosen else \
            "no worker in the cluster holds a build of it"
        if base and why:
            out.append((replace(shares_[0], variants=(base,), run_name=f"{shares_[0].run_name}-base"), why))
        return out


def _run_shares(client, shares_: list[Share], store: Store, say: Callable[[str], None], ship: bool) -> SharesOutcome:
    """Each share a task; a share a worker cannot measure (a -march=native build on AVX-512, in cost
    mode) goes to each other build worker in turn, and only when every one has left it out (or the
    ones left have gone) is it not built. Each measured share's run is imported as it arrives."""
    from distributed import wait

    def submit(share: Share, key: str, **where):
        return client.submit(run_share, replace(share, ship=ship), resources={RESOURCE: 1}, pure=False, key=key,
                             **where)

    holders = _held(client, shares_, store, say)
    done, outcome = 0, SharesOutcome()

    def keep_cost(share: Share) -> None:
        """Measured and imported before, and no worker in the cluster holds those builds now: its cost
        run stands; built anywhere else, a PGO build would be another binary."""
        nonlocal done
        done += 1
        outcome.measured.append(share.run_name)
        outcome.no_build[share.run_name] = "its builds left with the worker that measured them"
        say(f"[{done}/{len(shares_)}] {', '.join(share.variants)}: measured before (run {share.run_name} in this "
            f"store), and no worker in the cluster holds its builds: its cost run is kept")

    for share in shares_:
        if holders.keeps_cost(share.run_name):
            keep_cost(share)
    futures = {submit(s, f"pgolab-{s.run_name}", **holders.restriction(s.run_name)): s
               for s in shares_ if s.run_name not in outcome.measured}
    pinned = {f: holders.imported[s.run_name] for f, s in futures.items() if s.run_name in holders.imported}
    refused: dict[str, set[str]] = {}
    allowed: dict[object, list[str]] = {}     # a share sent on: the workers it may go to
    pending = set(futures)

    def not_built(share: Share, which: str) -> None:
        nonlocal done
        done += 1
        variants = ', '.join(share.variants)
        say(f"[{done}/{len(shares_)}] {variants} not built, {which}")
        outcome.not_built.append(not_built_note(share.variants, which))
        outcome.no_build[share.run_name] = f"not built by the workers, {which}"

    while pending:
        try:
            finished, pending = wait(pending, timeout=NEWS_EVERY, return_when="FIRST_COMPLETED")
        except TimeoutError:    # a minute without news: who works on what
            say(f"{done}/{len(shares_)} done; working: {_busy(client)}")
            present = set(build_workers(workers_info(client)))
            for future in [f for f in pending if f in pinned and not present & set(pinned[f])]:
                future.cancel()
                pending.discard(future)
                keep_cost(futures.pop(future))
            for future in [f for f in pending if f in allowed and not present & set(allowed[f])]:
                future.cancel()
                pending.discard(future)
                share = futures.pop(future)
                not_built(share, "which the workers it was sent on to left before measuring it")
            continue
        for future in finished:
            result: ShareResult = future.result()
            share = futures.pop(future)    # its result can go
            back_to_holder = pinned.pop(future, None) is not None
            variants = ', '.join(share.variants)
            if result.left_out and back_to_holder:    # sent on, another worker would build another binary
                keep_cost(share)
                continue
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


@dataclass
class Holders:
    """Where each share's earlier work is (held_here, asked of every build worker): `imported`, the
    workers whose run is the very run this store imported (the same binaries), to which its task
    goes back and nowhere else; `started`, for a run not imported yet, the workers that have one,
    which Dask prefers (a loose restriction: elsewhere means building again, not a refusal)."""
    imported: dict[str, list[str]] = field(default_factory=dict)
    started: dict[str, list[str]] = field(default_factory=dict)
    in_store: set[str] = field(default_factory=set)    # the shares whose run this store has imported

    def keeps_cost(self, run_name: str) -> bool:
        """Imported before, and no worker in the cluster holds that very run: its cost run stands."""
        return run_name in self.in_store and run_name not in self.imported

    def restriction(self, run_name: str) -> dict:
        if run_name in self.imported:
            return {"workers": self.imported[run_name], "allow_other_workers": False}
        if run_name in self.started:
            return {"workers": self.started[run_name], "allow_other_workers": True}
        return {}


def _held(client, shares_: list[Share], store: Store, say: Callable[[str], None]) -> Holders:
    answers = client.run(held_here, shares_, workers=build_workers(workers_info(client)), on_error="return")
    mute = sorted(address for address, held in answers.items() if not isinstance(held, dict))
    if mute:
        say(f"{', '.join(mute)} could not say which tasks they hold ({answers[mute[0]]!r}): taken to hold none")
    holders = Holders()
    for share in shares_:
        here = store.run(share.run_name)
        ours = run_binaries(store, here.id) if here else None
        if here:
            holders.in_store.add(share.run_name)
        for address, held in answers.items():
            if isinstance(held, dict) and share.run_name in held:
                if ours is None:
                    holders.started.setdefault(share.run_name, []).append(address)
                elif tuple(held[share.run_name]) == ours:
                    holders.imported.setdefault(share.run_name, []).append(address)
    variants = {s.run_name: ", ".join(s.variants) for s in shares_}
    back = {**holders.started, **holders.imported}
    if back:
        say(f"{len(back)} of {len(shares_)} tasks go back to the workers that hold their work: "
            + "; ".join(f"{variants[name]} to {', '.join(sorted(w))}" for name, w in back.items()))
    return holders


class BenchHostLeft(PgolabError):
    """The bench host, or a worker holding a build it waits for, left the cluster."""


class _BenchHost:
    """The client's side of the bench host: tasks pinned to it, the builds it receives (each packed on
    the worker holding it and unpacked on the bench host as soon as it arrives, so a worker may go once
    its build is across, and the packed bytes go once unpacked), and waits that end with what to do
    when the bench host, or a worker whose build it has not received, leaves. Every key holds this
    command's token: two commands on one scheduler, or a command and its rerun, share no task."""

    def __init__(self, client, task: BenchHostTask, address: str, say: Callable[[str], None]):
        self.client, self.task, self.address, self.say = client, task, address, say
        self.token = uuid.uuid4().hex[:8]
        self.unpacks: dict = {}        # unpack future -> (its pack future, worker, build); None once done
        self.submitted: set = set()    # this command's futures still wanted, to cancel if it ends

    def measure(self, shares_: list[Share], outcome: SharesOutcome, command: str) -> tuple[ShareResult, list[str]]:
        """Every build's wall-clock figures in one run on the bench host; first, what it builds itself
        (SharesOutcome.for_bench_host), one at a time, while the workers' builds travel to it. Returns
        the run, and what the merged run's commands say of the bench host's own builds."""
        bench_cpu = self.result(self.submit(cpu_model, key="cpu"))
        again = outcome.for_bench_host(shares_, bench_cpu)
        rebuilt = {v for share, _ in again for v in share.variants}
        from_workers = [(where, b) for where, b in outcome.shipped([s.run_name for s in shares_])
                        if b.label not in rebuilt]
        self.say(f"the bench host {self.task.host} receives {len(from_workers)} builds, each packed by the worker "
                 f"that built it: {', '.join(sorted(b.label for _, b in from_workers))}")
        self.receive(from_workers)
        said, notes = [], []
        for i, (share, why) in enumerate(again, 1):
            variants = ", ".join(share.variants)
            self.say(f"[{i}/{len(again)}] building {variants} on the bench host {self.task.host} for wall-clock "
                     f"figures alone ({why})")
            try:
                result: ShareResult = self.result(self.submit(build_for_bench_host, share, key=share.run_name))
            except BenchHostLeft:
                raise
            except PgolabError as exc:     # the others are still measured
                self.say(f"{variants} could not be built on the bench host: {exc.message}")
                notes.append(not_built_note(share.variants, f"on the bench host, whose build failed: {exc.message}"))
                continue
            self.receive([(self.address, b) for b in result.builds])
            said.append(f"{BUILT_ON_BENCH_HOST}{result.worker} for wall-clock figures alone: {variants} ({why})")
        unpacked = list(self.unpacks)
        return self.result(self.submit(bench_on_host, self.task, unpacked, command, tuple(notes),
                                       key=self.task.run_name)), said

    def submit(self, function, *args, key: str, where: str = ""):
        """A task pinned to the bench host (or to the worker `where`)."""
        future = self.client.submit(function, *args, workers=[where or self.address], allow_other_workers=False,
                                    pure=False, key=f"pgolab-{key}-{self.token}")
        self.submitted.add(future)
        return future

    def receive(self, chosen: list[tuple[str, BuildOnWorker]]) -> None:
        for where, build in chosen:
            pack = self.submit(shipping.pack, build, key=f"pack-{build.label}", where=where)
            unpack = self.submit(unpack_on_bench_host, pack, key=f"unpack-{build.label}")
            self.unpacks[unpack] = (pack, where, build)

    def result(self, future):
        """The future's result, said who works on what every minute of quiet."""
        from distributed import wait
        while True:
            try:
                wait([future], timeout=NEWS_EVERY)
                return future.result()
            except TimeoutError:
                self._check()
                self.say(f"on the bench host {self.task.host}: {_busy(self.client)}")

    def _check(self) -> None:
        """Lets go of each pack the bench host has unpacked; ends with what to do if the bench host,
        or a worker whose build has not reached it, has left."""
        for unpack, arriving in self.unpacks.items():
            if arriving is not None and unpack.done():    # the tree is on the bench host's disk: its bytes can go
                self.submitted.discard(arriving[0])
                self.unpacks[unpack] = None
        present = workers_info(self.client)["workers"]
        gone = [(where, build) for pack, where, build in filter(None, self.unpacks.values())
                if not pack.done() and where not in present]
        if self.address in present and not gone:
            return
        for future in self.submitted:
            future.cancel()
        if self.address not in present:
            raise BenchHostLeft(f"the bench host {self.task.host} ({self.address}) left the cluster",
                                hint="start it again and run the same command: its QPS run continues")
        where, build = gone[0]
        raise BenchHostLeft(f"the worker {where} left before its build {build.label} reached the bench host",
                            hint="start that worker again with the same PGOLAB_HOME and run the same command: "
                                 "it sends its build then; without it, the same command keeps the cost run and "
                                 "the bench host builds its own for QPS")


def _busy(client) -> str:
    """Who works on what, from the scheduler."""
    busy = {w: [k.removeprefix("pgolab-") for k in keys] for w, keys in client.processing().items() if keys}
    return "; ".join(f"{w}: {', '.join(k)}" for w, k in busy.items()) or "none (waiting for workers)"
