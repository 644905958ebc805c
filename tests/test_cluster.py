"""A matrix on a Dask cluster (issue 30): a real scheduler and real workers; in the fast test the
task's work is a fake cost measure (no build), in the slow one pgolab's own builds of PostgreSQL."""

import functools
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pytest
from distributed import Client

from pgolab import bench, cluster, report, runfile, shipping
from pgolab.errors import PgolabError
from pgolab.fleet import BenchTarget
from pgolab.measurement import BenchOptions
from pgolab.record import BinaryInfo, BuildRecord, SourceInfo
from pgolab.store import Store
from pgolab.variants import parse
from pgolab.workloads import parse_train

from conftest import long_test
from test_measures import FakeFleet, FakeInstallation
from test_merge import ShardCost, ShardQps

OPTIONS = BenchOptions(suite="quick", modes=("cost",), cost_write_repeats=2)
SPEEDS = {"rel_o2nofp": 1.0, "rel_lto": 1.1, "rel_pgo_use": 1.4, "rel_pgo_use_bolt": 1.45, "rel_o2nofp_native": 1.02,
          "rel_native_lto": 1.12, "rel_native": 1.01, "rel_clang": 0.95, "rel_lto_clang": 1.08,
          "rel_pgo_use_clang": 1.5}


def fake_share(share: cluster.Share) -> cluster.ShareResult:
    """What run_share does, with a fake cost measure instead of builds and servers."""
    work = Path(tempfile.mkdtemp(prefix="fake-share-"))
    targets = []
    for label in (share.base, *share.variants):
        binary = work / label
        binary.write_text(f"the {label} server")  # the same bytes on every worker, and the same as the
                                                   # build shipped (fake_builds): the anchor is one binary
        targets.append(BenchTarget(label, "binary", FakeInstallation(binary), BinaryInfo(str(binary), "", label)))
    store = Store(work / "s.sqlite")
    bench.run_bench(store, share.run_name, share.base, targets, share.options, "fake task",
                    measures=[ShardCost(SPEEDS)], fleet_factory=FakeFleet)
    runfile.export_run(store, share.run_name, work / "run.gz")
    return cluster.ShareResult(share.run_name, (work / "run.gz").read_bytes(), "a fake worker", 0)


REAL_HELD_HERE = cluster.held_here
# No dashboard, and its HTTP server on a free port (the default, 8787, is often taken: Dask warns).
NO_DASHBOARD = {"dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False}}


def fake_binaries(share: cluster.Share) -> tuple[str, ...]:
    """What a fake task's run measured, as held_here says it: each fake binary holds its label."""
    return tuple(sorted(f"{label}={hashlib.sha256(f'the {label} server'.encode()).hexdigest()}"
                        for label in (share.base, *share.variants)))


@pytest.fixture(autouse=True)
def every_worker_holds_every_task(monkeypatch):
    """The fake tasks leave nothing in a worker's home, which real ones do: say every worker holds the
    run of every task, with the fake binaries (no restriction in effect), so that a command run again
    finds its builds (a test of held_here's rule sets its own)."""
    monkeypatch.setattr(cluster, "held_here", lambda shares_: {s.run_name: fake_binaries(s) for s in shares_})


@pytest.fixture
def local_cluster():
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, resources={"build": 1},
                      **NO_DASHBOARD) as c:
        yield c.scheduler_address


def test_one_task_per_build_each_read_against_its_own_base(local_cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cluster, "run_share", fake_share)
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_pgo_use_bolt")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10), OPTIONS, "m", 2)
    assert [s.variants for s in shares] == [("rel_pgo_use", "rel_pgo_use_bolt"), ("rel_lto",)], \
        "the most costly first; a PGO build and its _bolt twin are one task"
    said = []
    store = Store(tmp_path / "client.sqlite")
    run_id = cluster.run(local_cluster, shares, store, "m", "test", say=said.append).run_id
    builds = {r["build"]: r["cycles"].value for r in report.compute(store, run_id).table("builds").rows}
    assert builds == pytest.approx({"rel_lto": 1.1, "rel_pgo_use": 1.4, "rel_pgo_use_bolt": 1.45})
    assert any(re.search(r"\[2/2\] .* built and measured on a fake worker", line) for line in said), said
    # The client killed and the same command run again: nothing new, one merged run.
    assert cluster.run(local_cluster, shares, store, "m", "test", say=said.append).run_id == run_id


def test_the_same_command_again_sends_each_task_back_to_the_worker_that_holds_its_work(
        local_cluster, tmp_path, monkeypatch):
    """Run again (the client killed), each task goes back to the worker whose home holds its builds
    and run, not wherever Dask would put it: elsewhere a PGO build would be trained again, another
    binary. The workers here share one process, so which worker holds what is read from a file."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    ran_on = tmp_path / "ran-on"

    def share_saying_where(share):
        with ran_on.open("a") as out:
            out.write(f"{share.run_name} {cluster.worker_address()}\n")
        return fake_share(share)

    def held_by_file(shares_, dask_worker):     # Dask's client.run hands the worker to an argument of that name
        here = dask_worker.address
        mine = {name for name, where in (line.split() for line in ran_on.read_text().splitlines()) if where == here} \
            if ran_on.exists() else set()
        return {s.run_name: fake_binaries(s) for s in shares_ if s.run_name in mine}

    monkeypatch.setattr(cluster, "run_share", share_saying_where)
    monkeypatch.setattr(cluster, "held_here", held_by_file)
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_clang", "rel_lto_clang",
                                   "rel_pgo_use_clang")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10), OPTIONS, "m", 2)
    store = Store(tmp_path / "client.sqlite")
    cluster.run(local_cluster, shares, store, "m", "test", say=print)
    first = dict(line.split() for line in ran_on.read_text().splitlines())
    assert len(first) == 5
    # Say the second worker holds the work of every task but one (left alone, Dask spreads them over both).
    with Client(local_cluster) as client:
        one, two = (cluster.find_worker(cluster.workers_info(client), name) for name in ("0", "1"))
    holders = {name: two for name in first} | {shares[0].run_name: one}
    ran_on.write_text("".join(f"{name} {where}\n" for name, where in holders.items()))
    said = []
    cluster.run(local_cluster, shares, store, "m", "test", say=said.append)
    again = dict(line.split() for line in ran_on.read_text().splitlines()[5:])
    assert again == holders, (holders, again)
    assert any(line.startswith("5 of 5 tasks go back to the workers that hold their work: ") for line in said), said


def test_a_task_imported_before_whose_holder_leaves_keeps_its_cost_run(local_cluster, tmp_path, monkeypatch):
    """Run again, a task this store imported goes back to the worker holding that very run (the same
    binaries), nowhere else; when that worker leaves the cluster before measuring it (here: the client
    stops seeing it among the build workers), its cost run is kept, not built elsewhere (a PGO build
    there would be another binary, which the store refuses)."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_clang")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10), OPTIONS, "m", 2)
    store = Store(tmp_path / "client.sqlite")
    monkeypatch.setattr(cluster, "run_share", fake_share)
    first = cluster.run(local_cluster, shares, store, "m", "test", say=print)
    monkeypatch.setattr(cluster, "NEWS_EVERY", 0.2)

    def slow_share(share):
        time.sleep(1)
        return fake_share(share)

    with Client(local_cluster) as client:
        holder = cluster.find_worker(cluster.workers_info(client), "1")
    left = tmp_path / "left"     # the holder, once it has said what it holds (a file: Dask copies functions)

    def held_then_leave(shares_, dask_worker):
        if dask_worker.address != holder:
            return {}
        left.write_text(holder)
        return {s.run_name: fake_binaries(s) for s in shares_}

    build_workers = cluster.build_workers
    monkeypatch.setattr(cluster, "run_share", slow_share)
    monkeypatch.setattr(cluster, "held_here", held_then_leave)
    monkeypatch.setattr(cluster, "build_workers", lambda info: [
        w for w in build_workers(info) if not left.exists() or w != left.read_text()])
    said = []
    again = cluster.run(local_cluster, shares, store, "m", "test", say=said.append)
    assert any(line.startswith("3 of 3 tasks go back to the workers that hold their work") for line in said), said
    kept = [line for line in said
            if line.endswith("and no worker in the cluster holds its builds: its cost run is kept")]
    assert kept, said
    assert again.run_id == first.run_id and {r["build"] for r in report.compute(store, again.run_id)
                                             .table("builds").rows} == {"rel_lto", "rel_pgo_use", "rel_clang"}


def test_a_worker_says_which_tasks_its_home_holds_a_run_of_with_its_binaries(tmp_path, monkeypatch):
    """A stored run of the task's name in the worker's cluster store, with what it measured; a build
    alone (as the bench host makes for QPS) is not a task's work."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    shares = cluster.shares([parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use", "rel_clang")], "rel_o2nofp",
                            "postgresql", parse_train("mix", 10), OPTIONS, "m", 2)
    assert REAL_HELD_HERE(shares) == {}
    for label in ("rel_o2nofp", "rel_lto"):
        install = tmp_path / "home" / "builds" / "postgresql-15.18-abc" / label / "final" / "install"
        install.mkdir(parents=True)
        BuildRecord(label, label, "gcc", "postgresql", SourceInfo("/s", "15.18"), {}, {},
                    str(install / "bin" / "postgres"), str(install), "/logs").save()
    clang = next(s for s in shares if s.variants == ("rel_clang",))
    result = fake_share(clang)         # its run, in a store of its own: not this home's
    assert REAL_HELD_HERE(shares) == {}
    cluster.import_result(Store(tmp_path / "home" / "cluster-runs.sqlite"), result)
    assert REAL_HELD_HERE(shares) == {"m-rel_clang": fake_binaries(clang)}


def run_lto_and_pgo(scheduler: str, tmp_path):
    """rel_lto and rel_pgo_use beside rel_o2nofp on the cluster: (shares, client store, merged run, what was said)."""
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10), OPTIONS, "m", 2)
    said = []
    store = Store(tmp_path / "client.sqlite")
    return shares, store, cluster.run(scheduler, shares, store, "m", "test", say=said.append).run_id, said


def test_a_share_no_worker_can_measure_is_said_and_left_out_of_the_merge(local_cluster, tmp_path, monkeypatch):
    """A worker whose CPU cannot run a share's builds in cost mode (-march=native with AVX-512) builds
    nothing and says why; when every worker has said so, the merge takes the other shares; with none
    left the run is refused."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))

    def share_on_avx512(share):
        if share.variants == ("rel_lto",):
            return cluster.ShareResult(share.run_name, b"", "a fake worker", 0, "rel_lto: cost: avx512f here",
                                       cluster.worker_address())
        return fake_share(share)

    monkeypatch.setattr(cluster, "run_share", share_on_avx512)
    shares, store, run_id, said = run_lto_and_pgo(local_cluster, tmp_path)
    assert {r["build"] for r in report.compute(store, run_id).table("builds").rows} == {"rel_pgo_use"}
    assert any("rel_lto not built, which none of the 2 workers could measure (rel_lto: cost: avx512f here)" in line
               for line in said), said
    assert sum("sent to another worker" in line for line in said) == 1, "each of the 2 workers tried once"
    assert "not built: rel_lto, which none of the 2 workers could measure (rel_lto: cost: avx512f here)" in \
        report.compute(store, run_id).facts
    lto_only = [s for s in shares if s.variants == ("rel_lto",)]
    with pytest.raises(PgolabError, match="no worker could measure any of the builds"):
        cluster.run(local_cluster, lto_only, store, "m2", "test", say=said.append)


def test_a_share_one_worker_cannot_measure_goes_to_another_and_is_measured_there(local_cluster, tmp_path, monkeypatch):
    """The worker that first gets the rel_lto share cannot measure it (as a CPU with AVX-512 cannot
    run a -march=native build under callgrind); the client sends it to the other worker, where it is
    built and measured, and the merged run has it."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    refusing = tmp_path / "refusing"    # the worker that left rel_lto out (the first to get it); a
                                        # file, since Dask hands each task a copy of the function

    def share_on_two_cpus(share):
        here = cluster.worker_address()
        if share.variants == ("rel_lto",) and (not refusing.exists() or refusing.read_text() == here):
            refusing.write_text(here)
            return cluster.ShareResult(share.run_name, b"", f"worker {here}", 0, "rel_lto: cost: avx512f here", here)
        return fake_share(share)

    monkeypatch.setattr(cluster, "run_share", share_on_two_cpus)
    shares, store, run_id, said = run_lto_and_pgo(local_cluster, tmp_path)
    assert {r["build"] for r in report.compute(store, run_id).table("builds").rows} == {"rel_lto", "rel_pgo_use"}, said
    assert any(f"rel_lto left out by worker {refusing.read_text()} (rel_lto: cost: avx512f here); sent to "
                            "another worker (1 not tried)" in line for line in said), said
    assert not [f for f in report.compute(store, run_id).facts if "not built" in f]


def shipping_share(share: cluster.Share) -> cluster.ShareResult:
    """fake_share, and with share.ship each build (an install tree: a server binary of its own bytes
    and a library beside it) named as a worker names it."""
    return replace(fake_share(share), builds=fake_builds((share.base, *share.variants) if share.ship else ()),
                   address=cluster.worker_address())


def fake_builds(labels, server: str = "the {label} server") -> tuple[shipping.BuildOnWorker, ...]:
    """Each label's build as its worker names it; its server's bytes from `server` (the same as a fake
    task measured, unless a test says otherwise)."""
    builds = []
    for label in labels:
        tree = Path(tempfile.mkdtemp(prefix="fake-build-")) / label / "final" / "install"
        (tree / "bin").mkdir(parents=True)
        (tree / "lib").mkdir()
        (tree / "bin" / "postgres").write_text(server.format(label=label))
        (tree / "bin" / "postgres").chmod(0o755)
        (tree / "lib" / "libpq.so.5").write_text("a library")
        record = BuildRecord(label, label, "gcc", "postgresql", SourceInfo("/s", "15.18"), {}, {},
                             str(tree / "bin" / "postgres"), str(tree), "/logs")
        record.save()
        (record.dir / "built-by").write_text(cluster.worker_address())
        builds.append(shipping.on_worker(record))
    return tuple(builds)


@pytest.fixture
def bench_host_fakes(tmp_path, monkeypatch):
    """Fake builds on the workers (shipping_share) and a fake QPS measure on the bench host; the files
    saying what the bench host's run was given, and which worker packed which build (files: Dask
    hands each task a copy of the function)."""
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(cluster, "run_share", shipping_share)
    seen = tmp_path / "seen"     # what the bench host's run was given (a file: Dask copies the function)
    packed_where = tmp_path / "packed-where"     # which worker packed each build
    pack = shipping.pack

    def pack_and_say_where(build):
        with packed_where.open("a") as out:
            built_by = (Path(build.record_path).parent / "built-by").read_text()
            out.write(f"{build.label} {cluster.worker_address()} {built_by}\n")
        return pack(build)

    monkeypatch.setattr(shipping, "pack", pack_and_say_where)

    def qps_of_fake_servers(store, run_name, base, targets, options, command, notes=()):
        seen.write_text("\n".join(f"{t.label} {t.installation.server_binary}" for t in targets))
        fakes = [replace(t, installation=FakeInstallation(t.installation.server_binary, "postgresql", "pgsql", 1))
                 for t in targets]
        return bench.run_bench(store, run_name, base, fakes, options, command, measures=[ShardQps(SPEEDS)],
                               fleet_factory=FakeFleet, notes=notes)

    monkeypatch.setattr(cluster, "bench_on_host", functools.partial(cluster.bench_on_host,
                                                                    run_bench=qps_of_fake_servers))
    return seen, packed_where


BOTH = replace(OPTIONS, modes=("cost", "qps"), instances=1, blocks=2)


def test_every_build_travels_to_the_bench_host_and_its_qps_is_measured_there_against_one_base(
        local_cluster, tmp_path, bench_host_fakes):
    """--bench-host: the workers build and measure cost; each build's install tree goes to the one
    worker named, which unpacks it (checked by digest) and measures every build's QPS in one run on
    its machine, the client's per-machine run beside the merged cost. The same command again adds
    nothing; a tree whose server binary is not the one packed is refused."""
    seen, packed_where = bench_host_fakes
    both = BOTH
    cluster.check_options(both, "1")
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10),
                            cluster.worker_options(both), "m", 2)
    on_host = cluster.bench_host_task("1", "rel_o2nofp", both, "m")
    said = []
    store = Store(tmp_path / "client.sqlite")
    merged = cluster.run(local_cluster, shares, store, "m", "test", say=said.append, bench=on_host)
    (machine, qps_run), = merged.per_cpu.items()
    rows = {r["build"]: r for r in report.compute(store, qps_run).table("builds").rows}
    assert set(rows) == {"rel_lto", "rel_pgo_use"}
    ratios = {label: row["qps"].value for label, row in rows.items()}
    assert ratios == pytest.approx({"rel_lto": 1.1, "rel_pgo_use": 1.4}, rel=0.03)
    unpacked = tmp_path / "home" / "cluster-installs"
    given = dict(line.split() for line in seen.read_text().splitlines())
    assert set(given) == {"rel_o2nofp", "rel_lto", "rel_pgo_use"}
    assert all(Path(path).is_relative_to(unpacked) and Path(path).read_text() == f"the {label} server"
               for label, path in given.items()), given
    # Each build was packed on a worker (not the client): the one whose task built it.
    packs = [line.split() for line in packed_where.read_text().splitlines()]
    assert sorted(label for label, _, _ in packs) == ["rel_lto", "rel_o2nofp", "rel_pgo_use"], packs
    assert all(packer == builder and packer.startswith("inproc://") for _, packer, builder in packs), packs
    commands = "\n".join(report.compute(store, merged.run_id).commands)
    assert f"wall-clock figures measured on the bench host {machine}, every build on that one machine: run " \
           "m-on-bench-host" in commands
    assert "the bench host 1 receives 3 builds, each packed by the worker that built it: rel_lto, rel_o2nofp, " \
           "rel_pgo_use" in said, said
    # The client killed and the same command run again: the same runs, nothing new, nothing unpacked again.
    samples = len(store.samples(qps_run))
    unpacked_at = {p: p.stat().st_mtime_ns for p in unpacked.iterdir()}
    again = cluster.run(local_cluster, shares, store, "m", "test", say=said.append, bench=on_host)
    assert (again.run_id, again.per_cpu) == (merged.run_id, merged.per_cpu)
    assert len(store.samples(qps_run)) == samples
    assert {p: p.stat().st_mtime_ns for p in unpacked.iterdir()} == unpacked_at and len(unpacked_at) == 3
    # A tree that is not what was packed, and a bench host no worker is.
    build = shipping_share(replace(shares[0], ship=True)).builds[0]
    packed = shipping.pack(build)
    other = "Another CPU (family 1, model 2)"
    assert shipping.foreign_native("rel_o2nofp_native", packed.built_on, packed.built_on) is None
    assert shipping.foreign_native("rel_o2nofp_native", packed.built_on, other) == \
        f"built with -march=native on {packed.built_on}, not on this host's {other}"
    assert shipping.foreign_native("rel_o2nofp", packed.built_on, other) is None
    with pytest.raises(PgolabError, match=r"rel_o2nofp's install tree arrived with bin/postgres at \w+, packed at 0+"):
        shipping.unpack(replace(packed, digest="0" * 64), tmp_path / "elsewhere")
    Path(packed.record["server_binary"]).write_text("rebuilt since")
    with pytest.raises(PgolabError, match=r"rel_o2nofp was measured at \w+ and is now \w+ on its worker"):
        shipping.pack(build)
    with pytest.raises(PgolabError, match="no workers of the cluster are 'nowhere'"):
        cluster.run(local_cluster, shares, store, "m", "test", bench=replace(on_host, host="nowhere"))


def test_the_bench_host_builds_for_qps_what_no_worker_measured_and_a_native_build_of_another_cpu(
        local_cluster, tmp_path, monkeypatch, bench_host_fakes):
    """A -march=native share no worker can cost-measure (AVX-512 everywhere) is not in the cost run,
    and the bench host builds it itself for QPS; a -march=native share the workers built on another
    CPU model is in the cost run, and the bench host builds its own for QPS (the workers' may not run
    there, and is not that CPU's native build); one whose build fails there is noted in the QPS run,
    and the others are measured. The base comes from a worker's task, not built again."""
    seen, packed_where = bench_host_fakes
    other_cpu = "Another CPU (family 1, model 2)"
    rebuilt = tmp_path / "rebuilt"

    def share_on_avx512_workers_of_another_cpu(share):
        if share.variants == ("rel_o2nofp_native",):
            return cluster.ShareResult(share.run_name, b"", "a fake worker", 0,
                                       "rel_o2nofp_native: cost: avx512f here", cluster.worker_address())
        result = shipping_share(share)
        return replace(result, builds=tuple(replace(b, built_on=other_cpu) for b in result.builds))

    def fake_build_here(share):
        with rebuilt.open("a") as out:
            out.write(" ".join(share.variants) + "\n")
        if share.variants == ("rel_native",):
            raise PgolabError("the compiler of this fake bench host lacks -march=native", hint="none")
        return cluster.ShareResult(share.run_name, b"", cluster.this_worker(), 0, address=cluster.worker_address(),
                                   builds=fake_builds(share.variants, "the {label} server for this CPU"))

    monkeypatch.setattr(cluster, "run_share", share_on_avx512_workers_of_another_cpu)
    monkeypatch.setattr(cluster, "build_for_bench_host", fake_build_here)
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_o2nofp_native", "rel_native_lto", "rel_native")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10),
                            cluster.worker_options(BOTH), "m", 2)
    said = []
    store = Store(tmp_path / "client.sqlite")
    merged = cluster.run(local_cluster, shares, store, "m", "test", say=said.append,
                         bench=cluster.bench_host_task("1", "rel_o2nofp", BOTH, "m"))
    cost = report.compute(store, merged.run_id)
    assert {r["build"] for r in cost.table("builds").rows} == {"rel_lto", "rel_native_lto", "rel_native"}
    (_, qps_run), = merged.per_cpu.items()
    qps = report.compute(store, qps_run)
    rows = {r["build"]: r["qps"].value for r in qps.table("builds").rows}
    assert rows == pytest.approx({"rel_lto": 1.1, "rel_o2nofp_native": 1.02, "rel_native_lto": 1.12}, rel=0.03)
    assert sorted(rebuilt.read_text().split()) == ["rel_native", "rel_native_lto", "rel_o2nofp_native"]
    text = "\n".join(said)
    assert re.search(r"building rel_o2nofp_native on the bench host 1 for wall-clock figures alone \(not built by "
                     r"the workers, which none of the 2 workers could measure", text), text
    assert f"building rel_native_lto on the bench host 1 for wall-clock figures alone (built with -march=native on " \
           f"{other_cpu}, not on this host's" in text, text
    assert "rel_native could not be built on the bench host: the compiler of this fake bench host lacks" in text
    assert any("not built: rel_native on the bench host, whose build failed: the compiler of this fake bench host "
               "lacks -march=native" in f for f in qps.facts), qps.facts
    assert sum("built on the bench host" in c and "for wall-clock figures alone" in c for c in cost.commands) == 2
    # rel_native_lto's cost is the workers' binary, its QPS the bench host's: said; rel_o2nofp_native
    # has no cost figures to set beside, and the others are the workers' binaries in both.
    apart, = [line for line in said if line.startswith("measured on two binaries")]
    assert re.search(r": rel_native_lto \(cost: \w{12}, wall-clock: \w{12}\)$", apart), apart
    # The two native builds were packed where the bench host built them; the others where a worker did.
    with Client(local_cluster) as client:
        bench_host = cluster.find_worker(cluster.workers_info(client), "1")
    packs = {label: (packer, builder) for label, packer, builder in
             (line.split() for line in packed_where.read_text().splitlines())}
    assert set(packs) == {"rel_o2nofp", "rel_lto", "rel_o2nofp_native", "rel_native_lto"}
    assert all(packer == builder for packer, builder in packs.values()), packs
    assert {label for label, (packer, _) in packs.items() if packer == bench_host} >= \
        {"rel_o2nofp_native", "rel_native_lto"}
    assert len(seen.read_text().splitlines()) == 4


def test_a_task_measured_before_whose_worker_is_gone_keeps_its_cost_and_is_built_on_the_bench_host_for_qps(
        local_cluster, tmp_path, monkeypatch, bench_host_fakes):
    """Run again after every worker that measured the tasks left (no worker holds their work): the
    client keeps their imported cost runs instead of building them elsewhere (a PGO build there would
    be another binary), and the bench host builds them, and the base, for QPS."""
    seen, _ = bench_host_fakes
    rebuilt = tmp_path / "rebuilt"

    def fake_build_here(share):
        with rebuilt.open("a") as out:
            out.write(" ".join(share.variants) + "\n")
        return cluster.ShareResult(share.run_name, b"", cluster.this_worker(), 0, address=cluster.worker_address(),
                                   builds=fake_builds(share.variants, "the {label} server, trained again"))

    monkeypatch.setattr(cluster, "build_for_bench_host", fake_build_here)
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_pgo_use")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10),
                            cluster.worker_options(BOTH), "m", 2)
    store = Store(tmp_path / "client.sqlite")
    on_host = cluster.bench_host_task("1", "rel_o2nofp", BOTH, "m")
    first_said = []
    first = cluster.run(local_cluster, shares, store, "m", "test", say=first_said.append, bench=on_host)
    assert not rebuilt.exists()
    assert not [line for line in first_said if "two binaries" in line], first_said
    tasks = tmp_path / "tasks"

    def no_task_expected(share):
        tasks.write_text(share.run_name)
        return shipping_share(share)

    monkeypatch.setattr(cluster, "held_here", lambda shares_: [])
    monkeypatch.setattr(cluster, "run_share", no_task_expected)
    said = []
    again = cluster.run(local_cluster, shares, store, "m", "test", say=said.append, bench=on_host)
    assert again.run_id == first.run_id and not tasks.exists(), "the cost runs kept, no task sent"
    assert sum(line.endswith("and no worker in the cluster holds its builds: its cost run is kept")
               for line in said) == 2, said
    assert sorted(rebuilt.read_text().split()) == ["rel_lto", "rel_o2nofp", "rel_pgo_use"]
    assert any("building rel_o2nofp on the bench host 1 for wall-clock figures alone (no worker in the cluster "
               "holds a build of it)" in line for line in said), said
    # Each build's cost and wall-clock figures are of two binaries, side by side in what was said and
    # in the merged run's commands; the first run's were one binary each, and said nothing.
    digest = {text: hashlib.sha256(text.encode()).hexdigest()[:12]
              for label in ("rel_o2nofp", "rel_lto", "rel_pgo_use")
              for text in (f"the {label} server", f"the {label} server, trained again")}
    apart = [line for line in said if re.match(r"measured on two binaries, cost and wall-clock figures \(run "
                                               r"m-on-bench-host-\w+\): ", line)]
    assert len(apart) == 1 and all(
        f"{label} (cost: {digest[f'the {label} server']}, wall-clock: {digest[f'the {label} server, trained again']})"
        in apart[0] for label in ("rel_o2nofp", "rel_lto", "rel_pgo_use")), said
    commands = report.compute(store, again.run_id).commands
    assert apart[0] in commands and sum(c.startswith("measured on two binaries") for c in commands) == 1, commands
    # The first run's line of its bench-host run is replaced by this run's, which measured other binaries.
    (clock_id,) = again.per_cpu.values()
    assert clock_id != first.per_cpu[next(iter(first.per_cpu))]
    assert [c for c in commands if c.startswith(cluster.ON_BENCH_HOST)] == [
        f"{cluster.ON_BENCH_HOST}{next(iter(again.per_cpu))}, every build on that one machine: run "
        f"{store.run(clock_id).name}"], commands
    assert len(seen.read_text().splitlines()) == 3
    # A third run, whose bench host is spelt otherwise, says the bench host's lines (one per build it
    # made itself) anew, in place of the second run's. (The measured-apart line names the QPS run,
    # the same binaries' run each time: its replacement is not shown here.)
    prefixes = (cluster.ON_BENCH_HOST, cluster.BUILT_ON_BENCH_HOST, cluster.MEASURED_APART)
    assert [sum(c.startswith(p) for c in commands) for p in prefixes] == [1, 3, 1], commands
    host_lines = [c for c in commands if c.startswith(prefixes[:2])]
    monkeypatch.setattr(cluster, "this_worker", lambda: "the bench host, renamed")
    third = cluster.run(local_cluster, shares, store, "m", "test", say=lambda line: None, bench=on_host)
    commands = report.compute(store, third.run_id).commands
    assert [sum(c.startswith(p) for c in commands) for p in prefixes] == [1, 3, 1], commands
    renamed = [c for c in commands if c.startswith(prefixes[:2])]
    assert all("the bench host, renamed" in c for c in renamed) and not set(host_lines) & set(commands), commands


def test_what_the_bench_host_builds_itself_a_native_base_of_another_cpu_too():
    """Pure logic: a share no worker built, a -march=native build of another CPU model (one per
    share, however many it holds), and the base when it is such a build; nothing for builds of the
    bench host's own CPU or without -march=native."""
    here, other = "This CPU (family 1, model 1)", "Another CPU (family 1, model 2)"

    def built(label, cpu):
        return shipping.BuildOnWorker(label, "ab" * 32, f"/w/{label}/build.json", cpu)

    native_base = [cluster.Share("postgresql", variants, "rel_o2nofp_native", parse_train("mix", 10), OPTIONS,
                                 f"m-{variants[0]}", 2) for variants in [("rel_native_lto",), ("rel_lto",),
                                                                         ("rel_native",), ("rel_clang",)]]
    outcome = cluster.SharesOutcome(builds={
        "m-rel_native_lto": ("w1", (built("rel_o2nofp_native", other), built("rel_native_lto", other))),
        "m-rel_lto": ("w2", (built("rel_o2nofp_native", here), built("rel_lto", other))),
        "m-rel_native": ("w2", (built("rel_o2nofp_native", here), built("rel_native", here)))},
        no_build={"m-rel_clang": "not built by the workers, which a fake worker could not measure"})
    again = outcome.for_bench_host(native_base, here)
    assert [(s.variants, why.split(" on ")[0]) for s, why in again] == [
        (("rel_native_lto",), "built with -march=native"),
        (("rel_clang",), "not built by the workers, which a fake worker could not measure"),
        (("rel_o2nofp_native",), "built with -march=native")], "the base from m-rel_native_lto, built elsewhere"
    assert [s.variants for s, _ in outcome.for_bench_host(native_base, other)] == [("rel_native",), ("rel_clang",)]


def test_a_worker_that_leaves_before_packing_a_build_ends_the_bench_host_run_with_what_to_do(
        local_cluster, tmp_path, monkeypatch):
    """A build the bench host waits for, on a worker no longer in the cluster: said within a minute of
    quiet, not waited for forever."""
    monkeypatch.setattr(cluster, "NEWS_EVERY", 0.5)
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    build = shipping.BuildOnWorker("rel_lto", "ab" * 32, str(tmp_path / "build.json"), "a CPU")
    with Client(local_cluster) as client:
        bench_host = cluster.find_worker(cluster.workers_info(client), "0")
        task = cluster.bench_host_task("0", "rel_o2nofp", replace(OPTIONS, modes=("qps",)), "m")
        host = cluster._BenchHost(client, task, bench_host, print)
        host.receive([("tcp://127.0.0.1:9", build)])
        waiting = host.submit(cluster.bench_on_host, task, list(host.unpacks), "test", key="m")
        with pytest.raises(cluster.BenchHostLeft, match="the worker tcp://127.0.0.1:9 left before its build rel_lto "
                                                        "reached the bench host"):
            host.result(waiting)
        time.sleep(0.5)
        assert len(host.submitted) == 3 and all(f.status == "cancelled" for f in host.submitted), \
            [f.status for f in host.submitted]


def test_a_bench_host_that_leaves_during_its_own_build_ends_with_what_to_do_and_the_cost_run_merged(
        local_cluster, tmp_path, monkeypatch, bench_host_fakes):
    """The bench host retired from the cluster (a real leave) while it builds a share no worker could
    measure: within a minute of quiet the client says so and what to do, its pinned tasks are
    cancelled, and the merged cost run stays in the store."""
    monkeypatch.setattr(cluster, "NEWS_EVERY", 0.5)
    building = tmp_path / "building"     # a file: Dask hands each task a copy of the function

    def share_no_worker_measures(share):
        if share.variants == ("rel_o2nofp_native",):
            return cluster.ShareResult(share.run_name, b"", "a fake worker", 0,
                                       "rel_o2nofp_native: cost: avx512f here", cluster.worker_address())
        return shipping_share(share)

    released = tmp_path / "released"     # the test's end: the build's thread may go

    def long_build_here(share):
        (tmp_path / "building.new").write_text(cluster.worker_address())
        (tmp_path / "building.new").rename(building)     # whole, or not there: the retiring thread reads it
        deadline = time.monotonic() + 60
        while not released.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        raise PgolabError("this build outlived the test", hint="none")

    monkeypatch.setattr(cluster, "run_share", share_no_worker_measures)
    monkeypatch.setattr(cluster, "build_for_bench_host", long_build_here)
    variants = [parse(v) for v in ("rel_o2nofp", "rel_lto", "rel_o2nofp_native")]
    shares = cluster.shares(variants, "rel_o2nofp", "postgresql", parse_train("mix", 10),
                            cluster.worker_options(BOTH), "m", 2)

    def retire_the_bench_host_once_it_builds():
        while not building.exists() and not released.exists():
            time.sleep(0.1)
        if building.exists():
            with Client(local_cluster) as client:
                client.retire_workers([building.read_text()], close_workers=True, remove=True)

    hosts = []     # the client's side of the bench host, to see its tasks cancelled

    class SeenBenchHost(cluster._BenchHost):
        def __init__(self, *args):
            super().__init__(*args)
            hosts.append(self)

    monkeypatch.setattr(cluster, "_BenchHost", SeenBenchHost)
    import threading
    retiring = threading.Thread(target=retire_the_bench_host_once_it_builds, daemon=True)
    retiring.start()
    store = Store(tmp_path / "client.sqlite")
    said = []
    try:
        with pytest.raises(PgolabError, match=r"the bench host 1 \(\S+\) left the cluster; the cost run m is "
                                              r"merged") as left:
            cluster.run(local_cluster, shares, store, "m", "test", say=said.append,
                        bench=cluster.bench_host_task("1", "rel_o2nofp", BOTH, "m"))
    finally:
        released.touch()
        retiring.join(timeout=30)
    assert any(line.startswith("[1/1] building rel_o2nofp_native on the bench host 1") for line in said), said
    assert not [line for line in said if "could not be built" in line], "left while building, not after"
    assert not retiring.is_alive()
    (host,) = hosts
    assert host.submitted and all(f.status == "cancelled" for f in host.submitted), \
        [f.status for f in host.submitted]
    assert left.value.hint == "start it again and run the same command: its QPS run continues"
    assert {r["build"] for r in report.compute(store, store.run("m").id).table("builds").rows} == {"rel_lto"}


@pytest.mark.parametrize("python_filter", [True, False], ids=["python-filter", "by-hand"])
def test_an_install_tree_that_leads_outside_itself_is_refused(tmp_path, monkeypatch, python_filter):
    """A packed tree is unpacked with its programs' modes; a member or a link leading outside the folder
    is refused, by Python's own filter (3.11.4 on) or, before it (Debian 12's 3.11.2), by hand."""
    import io
    import tarfile
    if not python_filter:
        monkeypatch.delattr(tarfile, "data_filter")

    def tree(*members):
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for name, link in members:
                info = tarfile.TarInfo(name)
                if link:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                    tar.addfile(info)
                else:
                    info.size, info.mode = 1, 0o755
                    tar.addfile(info, io.BytesIO(b"x"))
        buffer.seek(0)
        return tarfile.open(fileobj=buffer, mode="r:gz")

    shipping.extract(tree(("./bin/postgres", None), ("./lib/libpq.so", "libpq.so.5")), tmp_path / "good")
    assert (tmp_path / "good" / "bin" / "postgres").stat().st_mode & 0o777 == 0o755
    assert (tmp_path / "good" / "lib" / "libpq.so").is_symlink()
    for i, bad in enumerate([("../evil", None), ("./lib/l", "/etc/passwd"), ("./lib/l", "../../x")]):
        with pytest.raises(PgolabError, match="names a path outside itself"):
            shipping.extract(tree(bad), tmp_path / f"bad{i}")


def test_a_cluster_without_build_workers_or_asked_for_qps_says_what_to_do(tmp_path):
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, **NO_DASHBOARD) as c:
        with pytest.raises(PgolabError, match="resource 'build'"):
            cluster.run(c.scheduler_address, [], Store(tmp_path / "s.sqlite"), "m", "test")
    with pytest.raises(PgolabError, match="qps belongs to one machine") as refused:
        cluster.check_options(BenchOptions(modes=("qps", "cost")))
    assert "--bench-host" in refused.value.hint
    with pytest.raises(PgolabError, match="none is asked for"):
        cluster.check_options(BenchOptions(modes=("cost",)), bench_host="bench")
    with pytest.raises(PgolabError, match="cost is not asked for"):
        cluster.check_options(BenchOptions(modes=("qps",)), bench_host="bench")
    cluster.check_options(BenchOptions(modes=("qps", "cost")), bench_host="bench")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def native_cost_here() -> bool:
    """Whether cost mode can measure a -march=native build on this CPU (not with AVX-512)."""
    from pgolab.measures import COST
    return COST.variant_unavailable(parse("rel_o2nofp_native")) is None


@pytest.mark.slow
@long_test("builds PostgreSQL five times on two workers (29 min here beside another test, before the fifth)")
def test_a_postgresql_matrix_on_a_scheduler_and_two_workers_with_homes_of_their_own():
    """dask scheduler and two dask workers on 127.0.0.1 (each its own pgolab home, one build at a
    time), pgolab matrix --cluster: every build once (two measurable shares, so that each worker
    builds the base even where neither can measure the -march=native one), one merged run of
    their cost, which a one-host cost run of the same binaries matches within cost's bound; QPS on
    the bench host w1, which receives every build's install tree from the worker that built it, builds
    itself the -march=native one no worker could cost-measure (on AVX-512), and measures them all
    there; the same command again sends each task back to the worker holding its run and measures
    nothing anew. The two homes are of different depths and the workers compile without ccache, so
    the two bases are two builds of one source in two places: they must be the same binary, bit for
    bit (issue 30)."""
    dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    # Homes the unprivileged user PostgreSQL runs as can reach (pytest's own folders are root's alone).
    tmp_path = Path(tempfile.mkdtemp(prefix="pgolab-cluster-test-"))
    tmp_path.chmod(0o755)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "logs"
    logs.mkdir()
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              stdout=open(logs / "scheduler.log", "w"), stderr=subprocess.STDOUT)]
    try:
        time.sleep(5)
        homes = {1: tmp_path / "worker1", 2: tmp_path / "second" / "much" / "deeper" / "worker2"}
        for i, home in homes.items():
            home.mkdir(parents=True)
            for folder in (home, *home.parents):
                if folder == tmp_path:
                    break
                folder.chmod(0o755)
            env = {**os.environ, "PGOLAB_HOME": str(home), "CCACHE_DISABLE": "1"}
            procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                           "--resources", "build=1", "--no-dashboard", "--name", f"w{i}"],
                                          env=env, stdout=open(logs / f"worker{i}.log", "w"), stderr=subprocess.STDOUT))
        time.sleep(5)
        matrix = [sys.executable, "-m", "pgolab", "matrix", "postgresql", "--variants",
                  "rel_o2nofp,rel_o2nofp_native,rel_o2nofp_clang,rel_o2nofp_lto", "--measure", "cost,qps",
                  "--suite", "quick", "--cost-scale", "0.1", "--instances", "1", "--blocks", "2",
                  "--seconds", "1", "--cluster", address, "--bench-host", "w1", "--run", "ci-cluster",
                  "--store", str(tmp_path / "client.sqlite")]
        client_env = {**os.environ, "PGOLAB_HOME": str(tmp_path / "client")}
        result = subprocess.run(matrix, capture_output=True, text=True, timeout=3600, env=client_env)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:] + \
            "".join(f"\n{p.name}:\n" + p.read_text()[-2000:] for p in sorted(logs.glob("*.log")))
        # The same command again: each task back to the worker holding its run, nothing built or measured anew.
        again = subprocess.run(matrix, capture_output=True, text=True, timeout=1800, env=client_env)
        said_again = " ".join(again.stderr.split())
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
        measured = 2 + native_cost_here()
        assert f"{measured} of 3 tasks go back to the workers that hold their work" in said_again, said_again[-3000:]
        assert said_again.count("(0 new here)") == measured + 1, said_again[-3000:]
        assert "[3/3]" in result.stderr and "rel_o2nofp_clang" in result.stdout
        # A worker on a CPU with AVX-512 does not build a -march=native share it cannot measure in cost.
        native_measured = native_cost_here()
        assert ("rel_o2nofp_native not built," in result.stderr) != native_measured, result.stderr
        # Each worker built the base in its own home: the same code (merge's anchor: one binary, or the
        # same per-test cost within its bound).
        from pgolab.record import BuildRecord
        records = [BuildRecord.load(next(home.glob("builds/*/rel_o2nofp/build.json"))) for home in homes.values()]
        assert records[0].server_binary != records[1].server_binary
        assert records[0].binary_digest, "build.json records the binary's digest"
        assert records[0].binary_digest == records[1].binary_digest, "the two workers' bases differ"
        assert records[0].code_digest and records[0].code_digest == records[1].code_digest
        store = Store(tmp_path / "client.sqlite")
        rows = {r["build"]: r for r in report.compute(store, "ci-cluster").table("builds").rows}
        assert set(rows) == {"rel_o2nofp_clang", "rel_o2nofp_lto"} | ({"rel_o2nofp_native"} if native_measured else set())
        assert all(rows[b]["cycles"] is not None for b in rows)
        # QPS: every build the workers measured, in one run on w1, from trees unpacked in w1's home.
        assert "Wall-clock figures measured on" in result.stderr, result.stderr[-3000:]
        qps_run = next((r for r in store.runs() if r.name.startswith("ci-cluster-on-bench-host-")), None)
        assert qps_run is not None, result.stderr[-3000:]
        qps_rows = {r["build"]: r for r in report.compute(store, qps_run.id).table("builds").rows}
        assert set(qps_rows) == set(rows) | {"rel_o2nofp_native"} and all(r["qps"].value > 0 for r in qps_rows.values())
        said = " ".join(result.stderr.split())     # as printed, folded to the console's width
        assert ("building rel_o2nofp_native on the bench host w1 for wall-clock figures alone (not built by the "
                "workers, which none of the 2 workers could measure" in said) != native_measured, said[-3000:]
        binaries = {t.label: Path(t.server_binary) for t in store.targets(qps_run.id)}
        assert all(b.is_relative_to(homes[1] / "cluster-installs") for b in binaries.values()), binaries
        # The same binaries measured on one host in one cost run: each build's cost against the base
        # equals what the cluster merged (each read against its own worker's base), within cost's bound.
        built = {}
        for home in homes.values():
            for path in sorted(home.glob("builds/*/*/build.json")):
                record = BuildRecord.load(path)
                built.setdefault(record.label, record.server_binary)
        one_host = subprocess.run([sys.executable, "-m", "pgolab", "bench", "--base", "rel_o2nofp",
                                   *[a for label in ["rel_o2nofp", *rows] for a in ("--binary", f"{label}={built[label]}")],
                                   "--measure", "cost", "--suite", "quick", "--cost-scale", "0.1", "--run", "one-host",
                                   "--store", str(tmp_path / "client.sqlite")],
                                  capture_output=True, text=True, timeout=1800,
                                  env={**os.environ, "PGOLAB_HOME": str(tmp_path / "client")})
        assert one_host.returncode == 0, one_host.stdout[-3000:] + one_host.stderr[-3000:]
        single = {r["build"]: r["cycles"].value for r in report.compute(store, "one-host").table("builds").rows}
        merged = {b: r["cycles"].value for b, r in rows.items()}
        assert single == pytest.approx(merged, rel=0.015), (single, merged)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp_path, ignore_errors=True)
