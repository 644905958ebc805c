"""bench → store → report with a fake measure and a fake fleet: the whole measuring side's logic,
no server, in well under a second (hyperfine's mock executor)."""

import random
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from pgolab import bench, measures, report
from pgolab.errors import PgolabError
from pgolab.fleet import BenchTarget
from pgolab.measurement import BenchOptions, Sample
from pgolab.measures.qps import QpsMeasure
from pgolab.record import BinaryInfo
from pgolab.store import Store

SPEED = {"a": 1.0, "b": 1.25}


@dataclass
class FakeInstallation:
    server_binary: Path
    server: str = "mariadb"
    sysbench_driver: str = "mysql"
    data_version_parts: int = 2
    cost_repeatability: float = 0.005


class FakeFleet:
    """Starts nothing: the fleet a test of bench's logic needs."""
    def __init__(self, targets, workdir, options, base):
        self.targets = {t.label: t for t in targets}
        self.prepared = self.closed = False

    def prepare(self):
        self.prepared = True

    def close(self):
        self.closed = True


class FakeExecutor:
    """QPS of SPEED[label] × 1000 with 1 % noise from a fixed seed."""
    mode = "qps"
    concurrency = 1

    def __init__(self, fleet, options, labels):
        self.fleet, self.random = fleet, random.Random(7)

    def start_instance(self, micro, instance):
        assert self.fleet.prepared

    def measure(self, micro, step):
        qps = 1000 * SPEED[step.label] * self.random.gauss(1, 0.01)
        return Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, 0.0)

    def stop_instance(self):
        pass

    def close(self):
        pass


class FakeQps(QpsMeasure):
    def executor(self, fleet, options, labels):
        return FakeExecutor(fleet, options, labels)


def fake_targets(tmp_path: Path) -> list[BenchTarget]:
    targets = []
    for label in SPEED:
        binary = tmp_path / label
        binary.write_text(label)     # the run's identity holds each binary's digest
        targets.append(BenchTarget(label, "binary", FakeInstallation(binary), BinaryInfo(str(binary), "", label)))
    return targets


def test_bench_store_and_report_run_end_to_end_on_a_fake_measure(tmp_path, monkeypatch):
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    store = Store(tmp_path / "s.sqlite")
    options = BenchOptions(suite="quick", instances=2, blocks=2)
    fleets = []

    def fleet_factory(*args):
        fleets.append(FakeFleet(*args))
        return fleets[-1]
    run_id = bench.run_bench(store, "fake", "a", fake_targets(tmp_path), options, "test",
                             measures=[FakeQps()], fleet_factory=fleet_factory)
    assert fleets[0].closed and store.run("fake").status == "finished"
    built = report.compute(store, "fake").table("builds")
    row = next(r for r in built.rows if r["build"] == "b")
    assert row["qps"].value == pytest.approx(1.25, rel=0.01) and row["qps_verdict"] == "faster"
    assert row["cpu_us"].value == pytest.approx(1.25, rel=0.01)
    # The same command again resumes the finished run: nothing is measured twice.
    samples = store.sample_count(run_id)
    bench.run_bench(store, "fake", "a", fake_targets(tmp_path), options, "test",
                    measures=[FakeQps()], fleet_factory=fleet_factory)
    assert store.sample_count(run_id) == samples


def test_each_measure_is_one_object_named_by_its_key():
    assert list(measures.MEASURES) == ["qps", "cost"]
    assert [f.key for f in measures.measure("cost").figures][:2] == ["cycles", "instructions"]
    assert measures.measure("cost").identity()["cost_method"]["cache_geometry"]
    with pytest.raises(PgolabError, match="unknown measure"):
        measures.measure("latency")


def test_a_sample_with_a_figure_the_table_does_not_define_is_refused(tmp_path):
    from pgolab.host import Host
    from pgolab.measurement import Step
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="x", base="a", suite="quick", options=BenchOptions(),
                                           host=Host.this(), identity={}, command="test")
    step = Step("qps", "point-1/point-query", 1, 1, 0, "a")
    store.add(run_id, Sample(step, {"qps": 1.0, "cpu_us": 2.0}, 1.0), "point-1")
    with pytest.raises(PgolabError, match="instructions"):
        store.add(run_id, Sample(step, {"qps": 1.0, "instructions": 5.0}, 1.0), "point-1")


def test_cost_mode_leaves_out_a_native_build_with_avx512_and_the_report_says_why(tmp_path, monkeypatch):
    """callgrind (valgrind 3.19) cannot run AVX-512 code: such a target is left out of cost mode before
    the run, never a crash mid-run nor a silent zero; the others are measured, and the report names it
    with the reason. The record says what -march=native turned on where it was built. A run with
    nothing left to compare is refused before anything is stored."""
    from dataclasses import replace

    from pgolab.measures import COST
    from pgolab.record import BuildRecord, SourceInfo
    from test_runfile import FakeCost
    monkeypatch.setenv("PGOLAB_HOME", str(tmp_path / "home"))
    a, b = fake_targets(tmp_path)
    record = BuildRecord(label="n", variant="rel_native", description="native", server="mariadb",
                         source=SourceInfo("/s", "10.11.18"), toolchain={}, flags={},
                         server_binary="/b/final/install/bin/mariadbd", install_dir="/b/final/install",
                         logs="/b/logs", native_avx512=["avx512bw", "avx512f"])
    (tmp_path / "n").write_text("native")
    native = replace(b, label="n", kind=BuildRecord.kind, installation=FakeInstallation(tmp_path / "n"),
                     description=record)
    store = Store(tmp_path / "s.sqlite")
    options = BenchOptions(suite="quick", modes=("cost",), cost_write_repeats=2)
    run_id = bench.run_bench(store, "avx", "a", [a, b, native], options, "test", measures=[FakeCost()],
                             fleet_factory=FakeFleet)
    assert {s.step.label for s in store.samples(run_id)} == {"a", "b"}
    data = report.compute(store, run_id)
    assert "cost not measured for n: built with -march=native on a CPU with AVX-512 (avx512bw, avx512f), " \
           "which valgrind's callgrind cannot run" in "\n".join(data.facts)
    assert {r["build"] for r in data.table("builds").rows if r.get("cycles") is not None} == {"b"}
    for targets, base, refusal in (([a, native], "a", r"cost of n: built with -march=native .* nothing left to compare"),
                                   ([native, b], "n", r"cost cannot measure the base n here: built with -march=native")):
        with pytest.raises(PgolabError, match=refusal):
            bench.run_bench(store, "refused", base, targets, options, "test", measures=[COST], fleet_factory=FakeFleet)
    assert store.run("refused") is None, "refused before anything was stored"
    assert COST.unavailable([replace(native, description=replace(record, native_avx512=[]))]) == {}, \
        "no AVX-512: measured"
    # With QPS asked too, the -march=native build alone beside the base is measured in QPS; cost, left
    # with the base alone, measures nothing, and the report says why.
    both = replace(options, modes=("qps", "cost"), instances=1, blocks=2)
    run_id = bench.run_bench(store, "qps-too", "a", [a, replace(native, label="b")], both, "test", measures=[FakeQps(), COST],
                             fleet_factory=FakeFleet)
    assert {(s.step.mode, s.step.label) for s in store.samples(run_id)} == {("qps", "a"), ("qps", "b")}
    assert "cost not measured for b: built with -march=native" in "\n".join(report.compute(store, run_id).facts)


def test_what_native_turns_on_is_read_from_each_compiler():
    from pgolab.toolchains import Clang, Gcc
    assert Gcc().avx512_of("  -mavx512f                   \t[enabled]\n  -mavx512bw \t[disabled]\n") == {"avx512f"}
    assert Clang().avx512_of('"-target-feature" "+avx512f" "-target-feature" "-avx512bw"') == {"avx512f"}


def test_cost_mode_knows_before_a_build_whether_it_can_measure_a_native_one():
    """Asked of the real gcc: -march=native turns AVX-512 on where this CPU has it, and only there does
    cost mode refuse a -march=native variant, before anything is built; QPS measures it anywhere."""
    import shutil

    from pgolab.measures import COST, QPS
    from pgolab.variants import parse
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    cpu_avx512 = "avx512f" in Path("/proc/cpuinfo").read_text().split()
    why = COST.variant_unavailable(parse("rel_o2nofp_native"))
    assert (why is not None) == cpu_avx512
    assert why is None or "avx512f" in why.split(" here")[0]
    assert COST.variant_unavailable(parse("rel_o2nofp")) is None
    assert QPS.variant_unavailable(parse("rel_o2nofp_native")) is None


def test_the_misprediction_term_is_shown_with_and_without():
    """A build with fewer instructions but more simulated mispredictions: the model's rCost with
    the 20-cycle term, without it, beside the clock."""
    from types import SimpleNamespace

    from pgolab.measures.cost import branch_term_table
    absolute = {("cycles", "m", "base"): 1200.0, ("mispredicts", "m", "base"): 10.0,
                ("cycles", "m", "pgo"): 1000.0 + 20 * 15, ("mispredicts", "m", "pgo"): 15.0}
    a = SimpleNamespace(base="base", labels=["pgo"], micros=["m"], absolute=absolute, suites={})
    row = branch_term_table(a).rows[0]
    assert row["with"] == pytest.approx(1200 / 1300) and row["without"] == pytest.approx(1000 / 1000)
    assert row["clock"] is None and row["tests"] == 1


def test_a_builds_saving_is_split_over_the_parts_of_the_cycle_formula():
    """PGO-like: fewer instructions and I1 misses, more mispredictions. The parts add up to what was
    saved, each test weighs alike, and the part that added cycles is named as what held it back."""
    from types import SimpleNamespace

    from pgolab.measures.callgrind import CYCLE_PRICES
    from pgolab.measures.cost import cycle_parts_table

    def counts(instructions, i1, d1, ll, mispredicts):
        parts = {"instructions": instructions, "i1_misses": i1, "d1_misses": d1, "ll_misses": ll,
                 "mispredicts": mispredicts}
        return {**parts, "cycles": sum(CYCLE_PRICES[k] * v for k, v in parts.items())}
    figures = {("g/x", "base"): counts(1000, 20, 10, 1, 10), ("g/x", "pgo"): counts(800, 10, 10, 1, 15),
               ("g/y", "base"): counts(2000, 0, 0, 0, 0), ("g/y", "pgo"): counts(2000, 0, 0, 0, 0)}
    absolute = {(k, m, label): v for (m, label), c in figures.items() for k, v in c.items()}
    a = SimpleNamespace(base="base", labels=["pgo"], micros=["g/x", "g/y"], absolute=absolute,
                        groups=lambda: ["g"], micros_of=lambda group: ["g/x", "g/y"])
    rows = {r["group"]: r for r in cycle_parts_table(a).rows}
    x_base = 1000 + 10 * 30 + 100 + 20 * 10     # 1600 cycles; the build 800 + 200 + 100 + 300 = 1400
    assert {**rows["all"], "group": "g"} == rows["g"]
    row = rows["all"]
    assert row["tests"] == 2 and row["saved"] == pytest.approx(100 * (200 / x_base + 0) / 2)
    assert row["instructions"] == pytest.approx(100 * 200 / x_base / 2)
    assert row["i1_misses"] == pytest.approx(100 * 100 / x_base / 2)
    assert row["mispredicts"] == pytest.approx(-100 * 100 / x_base / 2)
    assert row["saved"] == pytest.approx(sum(row[k] for k in CYCLE_PRICES))
    assert sum(row[f"{k}_share"] for k in CYCLE_PRICES) == pytest.approx(100)
    assert row["instructions_share"] == pytest.approx(100 * (1000 / x_base + 1) / 2)
    assert row["held_back"] == f"mispredictions: {100 * 100 / x_base / 2:.1f} points more"
    # Without the extra mispredictions, the largest part the build still spends: instructions.
    figures[("g/x", "pgo")] = counts(800, 10, 10, 1, 10)
    absolute.update({(k, m, label): v for (m, label), c in figures.items() for k, v in c.items()})
    left = 100 * ((1000 - 200) / x_base + 1) / 2
    assert cycle_parts_table(a).rows[-1]["held_back"] == f"instructions: {left:.0f} % of the base's cycles left"


def test_other_work_is_the_machines_busy_time_beyond_the_server_and_pgolab_itself():
    from pgolab.processes import CpuReading, other_work, parse_machine_cpu
    tick = __import__("os").sysconf("SC_CLK_TCK")
    # user nice system idle iowait irq softirq steal guest guest_nice
    stat = (f"cpu  {3 * tick} {1 * tick} {2 * tick} {50 * tick} {4 * tick} {tick // 2} {1 * tick} {2 * tick} "
            f"{1 * tick} {tick // 4}\ncpu0 1 2 3\n")
    # busy: user+nice+system+irq+softirq; iowait and idle are not busy, steal is apart, and guest
    # and guest_nice are already inside user and nice
    assert parse_machine_cpu(stat) == pytest.approx((7.5, 2.0))
    before = CpuReading(wall=10.0, busy=100.0, steal=1.0, own=5.0)
    # 2 s of wall time, 3.0 busy seconds: 1.2 the server's, 0.6 pgolab's and its client's, 1.2 other
    after = CpuReading(wall=12.0, busy=103.0, steal=1.4, own=5.6)
    other, steal = other_work(before, after, server_cpu=1.2)
    assert other == pytest.approx(0.6) and steal == pytest.approx(0.2)
    # tick rounding can read a little under zero: kept as read, so an idle machine's accuracy shows
    assert other_work(before, CpuReading(12.0, 101.78, 1.0, 5.6), server_cpu=1.2)[0] == pytest.approx(-0.01)


def test_live_children_cpu_is_what_the_process_own_figure_leaves_out():
    import os
    import subprocess
    import sys
    from pgolab.processes import child_pids, live_children_cpu_seconds, process_cpu_seconds
    # a parent that sleeps while its live child spins, as a postmaster beside its checkpointer
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "c = subprocess.Popen([sys.executable, '-c', 'while True: pass']); "
                               "time.sleep(30)"])
    try:
        # Wait for the child's CPU, not a fixed time: on a loaded machine it got 0.49 s in 1.5 s.
        deadline = time.monotonic() + 30
        while live_children_cpu_seconds(parent.pid) <= 0.5 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(process_cpu_seconds(parent.pid)) < 0.3 and live_children_cpu_seconds(parent.pid) > 0.5
    finally:
        for child in child_pids(parent.pid):
            os.kill(child, 9)
        parent.kill()
        parent.wait()


def test_qps_facts_say_when_the_machine_was_not_idle():
    from pgolab.measurement import Step
    from pgolab.store import StoredSample

    def samples(loads, steal=0.0):
        return [StoredSample(Step("qps", "t", 1, i, 1, "a"), "g", {"qps": 1.0}, 1.0,
                             {"other_cores": load, "steal_cores": steal}) for i, load in enumerate(loads)]
    qps = QpsMeasure()
    idle = qps.facts(samples([0.0, 0.02, 0.0, 0.3, 0.0, -0.02, 0.01, 0.0]))
    assert len(idle) == 1 and "median 0.00 core" in idle[0] and "1 of 8 slices" in idle[0]
    assert "readings -0.02 to 0.30" in idle[0] and "NOT IDLE" not in idle[0]
    busy = qps.facts(samples([0.9, 0.8, 0.0, 1.1]))
    assert "NOT IDLE (other work ran beside most slices)" in busy[0] and "median 0.85 core" in busy[0]
    # a job that ran for a quarter of the run leaves the median idle but disturbed a quarter of the pairs
    part = qps.facts(samples([0.0] * 6 + [0.9, 1.0]))
    assert "median 0.00 core" in part[0] and "NOT IDLE (other work ran beside 2 of 8 slices)" in part[0]
    stolen = qps.facts(samples([0.0] * 4, steal=0.5))
    assert "stole a median 0.50 core" in stolen[0] and "NOT IDLE (the hypervisor took CPU time" in stolen[0]
    older = [StoredSample(Step("qps", "t", 1, 1, 1, "a"), "g", {"qps": 1.0}, 1.0, {})]
    assert qps.facts(older) == []    # runs stored before the figure was recorded say nothing
