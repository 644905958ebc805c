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

Wall-clock QPS belongs to one machine: a cluster run measures cost only, and says so if asked for
QPS (measure the winners on one machine with `pgolab bench`).
"""

from __future__ import annotations

import platform
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import debian, matrix, merge, paths, runfile
from .matrix import training_groups
from .errors import PgolabError
from .measurement import BenchOptions
from .measures import MEASURES
from .phases import QuietReporter
from .runner import home_runner
from .schedule import Progress
from .store import NOT_BUILT, Store
from .variants import Variant, parse
from .workloads import TrainingSpec

RESOURCE = "build"


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


@dataclass(frozen=True)
class ShareResult:
    run_name: str
    run_file: bytes          # empty when the worker could measure none of the share's builds
    worker: str              # the worker's host name and CPU
    samples: int
    left_out: str | None = None     # why the worker built nothing (a -march=native share on AVX-512)
    address: str = ""               # the Dask worker's address: a share it left out goes to another


class _QuietMatrix:
    def left_out(self, variant, reason):
        pass

    def build_started(self, index, total, variant):
        return QuietReporter()

    def build_finished(self, index, total, result, seconds):
        pass

    def bench_step(self, state: Progress):
        pass


def run_share(share: Share) -> ShareResult:
    """On a worker: build the share and the base in this worker's pgolab home, measure their cost,
    and return the run as a run file; nothing, and why, when this worker can measure none of them."""
    from .host import Host
    host = Host.this()
    worker = f"{platform.node()} ({host.cpu}, {host.cpu_id})"
    left = matrix.unmeasurable_here([parse(v) for v in share.variants], share.base, share.options)
    if len(left) == len(share.variants):
        return ShareResult(share.run_name, b"", worker, 0, "; ".join(f"{v}: {why}" for v, why in left.items()),
                           worker_address())
    tree = debian.resolve(share.source, home_runner("cluster-source"))
    request = matrix.MatrixRequest(sources=[tree], variants=[parse(v) for v in share.variants], base=share.base,
                                   train=share.train, options=share.options, run_name=share.run_name, jobs=share.jobs)
    store = Store(paths.home() / "cluster-runs.sqlite")
    matrix.run_matrix(request, store, _QuietMatrix(), f"pgolab cluster task {share.run_name}")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.gz"
        samples = runfile.export_run(store, share.run_name, out)
        data = out.read_bytes()
    return ShareResult(share.run_name, data, worker, samples, address=worker_address())


def worker_address() -> str:
    """The address of the Dask worker running this task; empty outside a worker."""
    from distributed import get_worker
    try:
        return get_worker().address
    except ValueError:
        return ""


def build_workers(scheduler_info: dict) -> list[str]:
    """The addresses of the workers that offer the resource every task needs."""
    return sorted(a for a, w in scheduler_info["workers"].items() if w.get("resources", {}).get(RESOURCE))


def shares(variants: list[Variant], base: str, source: str, train: TrainingSpec, options: BenchOptions,
           run_name: str, jobs: int) -> list[Share]:
    """One share per training group (a PGO build with its _bolt twin), most costly first."""
    groups = training_groups([v for v in variants if v.name != base])
    return [Share(source, tuple(v.name for v in group), base, train, options, f"{run_name}-{group[0].name}", jobs)
            for group in groups]


def check_options(options: BenchOptions) -> None:
    clock = [m for m in options.modes if MEASURES[m].machine_bound]
    if clock:
        raise PgolabError(f"a cluster run measures cost only: {', '.join(clock)} belongs to one machine",
                          hint="--measure cost; then measure the builds you choose on one machine with pgolab bench")


def run(address: str, shares_: list[Share], store: Store, name: str, command: str,
        say: Callable[[str], None] = print) -> "merge.Merged":
    """Every share on the cluster; each result imported as it arrives, then all merged into `name`."""
    try:
        from distributed import Client, wait
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
        info = client.scheduler_info()
        workers = info["workers"]
        if not build_workers(info):
            raise PgolabError(f"no worker of {address} offers the resource {RESOURCE!r}; the tasks would wait forever",
                              hint=f"start workers with `dask worker {address} --nthreads 1 --resources {RESOURCE}=1`")
        say(f"cluster {address}: {len(workers)} workers, {len(shares_)} tasks (one build each, beside the base)")
        futures = {client.submit(run_share, s, resources={RESOURCE: 1}, pure=False, key=f"pgolab-{s.run_name}"): s
                   for s in shares_}
        # A share a worker cannot measure (a -march=native build on AVX-512, in cost mode) goes to each
        # other build worker in turn; only when every one has left it out is it not built.
        refused: dict[str, set[str]] = {}
        pending, done, measured, not_built = set(futures), 0, [], []
        while pending:
            try:
                finished, pending = wait(pending, timeout=60, return_when="FIRST_COMPLETED")
            except TimeoutError:    # a minute without news: who works on what
                busy = {w: [k.removeprefix("pgolab-") for k in keys]
                        for w, keys in client.processing().items() if keys}
                say(f"{done}/{len(shares_)} done; working: " +
                    ("; ".join(f"{w}: {', '.join(k)}" for w, k in busy.items()) or "none (waiting for workers)"))
                continue
            for future in finished:
                result: ShareResult = future.result()
                share = futures[future]
                if result.left_out:
                    variants = ', '.join(share.variants)
                    tried = refused.setdefault(share.run_name, set())
                    tried.add(result.address)
                    others = [w for w in build_workers(client.scheduler_info()) if w not in tried]
                    if result.address and others:
                        say(f"{variants} left out by {result.worker} ({result.left_out}); "
                            f"sent to another worker ({len(others)} not tried)")
                        again = client.submit(run_share, share, resources={RESOURCE: 1}, pure=False,
                                              workers=others, allow_other_workers=False,
                                              key=f"pgolab-{share.run_name}-try{len(tried) + 1}")
                        futures[again] = share
                        pending.add(again)
                        continue
                    done += 1
                    say(f"[{done}/{len(shares_)}] {variants} not built on {result.worker}, "
                        f"which cannot measure it: {result.left_out}")
                    not_built.append(f"{NOT_BUILT}{variants}, which none of the {len(tried)} workers could measure "
                                     f"(the last, {result.worker}: {result.left_out})" if len(tried) > 1 else
                                     f"{NOT_BUILT}{variants}, which worker {result.worker} could not measure "
                                     f"({result.left_out})")
                    continue
                done += 1
                measured.append(result.run_name)
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / "run.gz"
                    path.write_bytes(result.run_file)
                    imported = runfile.import_run(store, path)
                say(f"[{done}/{len(shares_)}] {', '.join(futures[future].variants)} built and measured on "
                    f"{result.worker}: {result.samples} samples ({imported.samples_added} new here)")
    finally:
        client.close()
    if not measured:
        raise PgolabError("no worker could measure any of the builds",
                          hint="add workers on a CPU without AVX-512 for -march=native builds in cost mode")
    return merge.merge(store, [s.run_name for s in shares_ if s.run_name in measured], name, command, at_least=1,
                       notes=not_built)
