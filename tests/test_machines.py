"""`pgolab machines`: one binary's cost per query from runs on two machines, side by side; refused
for two binaries under one label or for runs of other options. Synthetic stores, known answers."""

import math

import pytest

from pgolab import machines, merge
from pgolab.errors import PgolabError
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample, Step
from pgolab.record import BinaryInfo
from pgolab.store import Store


def _run(store, name, cpu, digest, cycles, options=None, suite="quick", description=None, geometry="fixed"):
    run_id, _ = store.create_or_resume_run(
        name, server="mariadb", base="a", suite=suite, options=options or BenchOptions(modes=("cost",)),
        host=Host.from_dict({"cpu": cpu, "cpu_id": "cpu family 1", "cores": 2, "memory_gib": 1, "kernel": "k"}),
        identity={"suite": suite, "options": {"cost_scale": (options or BenchOptions()).cost_scale},
                  "host": {"cpu": cpu}, "targets": {"a": digest},
                  "cost_method": {"guest_cpu": cpu, "cache_geometry": geometry}},
        command="pgolab bench (test)")
    description = description or BinaryInfo("/bin/a", "", "a")
    store.add_target(run_id, "a", description.kind, "/bin/a", digest, description)
    for micro, value in cycles.items():
        store.add(run_id, Sample(Step("cost", micro, 1, 1, 0, "a"),
                                 {"cycles": value, "instructions": value / 2, "i1_misses": value / 100}, 1.0), "g")


def test_one_binary_on_two_machines_side_by_side(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    _run(store, "amd", "AMD EPYC", "d" * 64, {"point-1/point-query": 1000.0, "writes/insert": 2000.0})
    _run(store, "intel", "Intel Xeon", "d" * 64, {"point-1/point-query": 1005.0, "writes/insert": 2400.0})
    data = machines.compare(merge.load(store, ["amd", "intel"]), "a")
    rows = {(r["test"], r["figure"]): r for r in data.table("machines").rows}
    assert rows[("point-1/point-query", "cycles")]["spread"] == pytest.approx(0.5)
    assert rows[("point-1/point-query", "cycles")]["within"] == "yes"
    assert rows[("writes/insert", "cycles")]["within"] == "no" and rows[("writes/insert", "cycles")]["run 2"] == 2400.0
    assert "within the bound in 1 of 2 tests" in " ".join(data.facts)
    assert "cost_method.guest_cpu" in dict(data.notes)["Identities"]


def test_two_binaries_or_other_options_are_refused(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    _run(store, "one", "AMD EPYC", "d" * 64, {"point-1/point-query": 1000.0})
    _run(store, "two", "Intel Xeon", "e" * 64, {"point-1/point-query": 1000.0})
    _run(store, "scaled", "Intel Xeon", "d" * 64, {"point-1/point-query": 1000.0}, BenchOptions(cost_scale=0.25))
    _run(store, "full", "Intel Xeon", "d" * 64, {"point-1/point-query": 1001.0}, suite="full")
    _run(store, "other-cache", "Intel Xeon", "d" * 64, {"point-1/point-query": 1000.0}, geometry="the host's")
    with pytest.raises(PgolabError, match="not one binary"):
        machines.compare(merge.load(store, ["one", "two"]), "a")
    with pytest.raises(PgolabError, match="options.cost_scale differ"):
        machines.compare(merge.load(store, ["one", "scaled"]), "a")
    # What the cost method records of the host may differ (guest_cpu above); the simulation may not.
    with pytest.raises(PgolabError, match="cost_method.cache_geometry differ"):
        machines.compare(merge.load(store, ["one", "other-cache"]), "a")
    with pytest.raises(PgolabError, match="has no target 'b'"):
        machines.compare(merge.load(store, ["one", "full"]), "b")
    # Another suite is compared on the tests both ran.
    assert len(machines.compare(merge.load(store, ["one", "full"]), "a").table("machines").rows) == 3


def _paired_run(store, name, cpu, speedup, noise_seed, cost_ratio=1.25):
    """A run of base "a" and variant "b" (one binary each, the same in every run) on one machine:
    QPS in 2 instances of 3 paired blocks, b faster by `speedup`; cost per query b cheaper by cost_ratio."""
    import random
    rng = random.Random(noise_seed)
    options = BenchOptions(modes=("cost", "qps"))
    run_id, _ = store.create_or_resume_run(
        name, server="mariadb", base="a", suite="quick", options=options,
        host=Host.from_dict({"cpu": cpu, "cpu_id": "cpu family 1", "cores": 2, "memory_gib": 1, "kernel": "k"}),
        identity={"suite": "quick", "options": {"cost_scale": options.cost_scale}, "host": {"cpu": cpu},
                  "targets": {"a": "a" * 64, "b": "b" * 64},
                  "cost_method": {"guest_cpu": cpu, "cache_geometry": "fixed"}},
        command="pgolab bench (test)")
    for label, digest in (("a", "a" * 64), ("b", "b" * 64)):
        store.add_target(run_id, label, "binary", f"/bin/{label}", digest, BinaryInfo(f"/bin/{label}", "", label))
    for m, micro in enumerate(["point-1/point-query", "point-1/range", "writes/insert", "writes/update"]):
        cycles = 1000.0 * (m + 1)
        store.add(run_id, Sample(Step("cost", micro, 1, 1, 0, "a"), {"cycles": cycles, "instructions": cycles / 2}, 1.0), "g")
        store.add(run_id, Sample(Step("cost", micro, 1, 1, 1, "b"),
                                 {"cycles": cycles / cost_ratio, "instructions": cycles / 2 / cost_ratio}, 1.0), "g")
        for inst in (1, 2):
            for block in (1, 2, 3):
                qps = 5000.0 * rng.lognormvariate(0, 0.05)
                for pos, (label, factor) in enumerate((("a", 1.0), ("b", speedup))):
                    value = qps * factor * rng.lognormvariate(0, 0.01)
                    store.add(run_id, Sample(Step("qps", micro, inst, block, pos, label),
                                             {"qps": value, "cpu_us": 1e6 / value}, 1.0), "g")


def test_a_ratio_on_two_machines_shows_the_machine_to_machine_component(tmp_path):
    """The same two binaries on two machines: QPS 10 % faster on one, 30 % on the other (far beyond
    each run's ~0.5 % error) gives a machine-to-machine SD near the log distance's; the cost model,
    the same on both, gives none; both ratios are printed per machine with its CPU."""
    store = Store(tmp_path / "s.sqlite")
    _paired_run(store, "amd", "AMD EPYC", 1.10, 1)
    _paired_run(store, "intel", "Intel Xeon", 1.30, 2)
    data = machines.compare(merge.load(store, ["amd", "intel"]), "b")
    rows = data.table("ratios").rows
    qps = {r["machine"].split(":")[0]: r for r in rows if r["figure"] == "rQPS"}
    assert qps["AMD EPYC (cpu family 1)"]["ratio"].value == pytest.approx(1.10, rel=0.01)
    assert qps["Intel Xeon (cpu family 1)"]["ratio"].value == pytest.approx(1.30, rel=0.01)
    over = qps["over the 2 machines"]
    # Two machines, log ratios log 1.1 and log 1.3: their SD is |difference| / sqrt 2 = 11.8 %.
    assert over["between"] == pytest.approx(100 * abs(math.log(1.3 / 1.1)) / math.sqrt(2), rel=0.1)
    assert over["within"] < 1.0 and over["ratio"].low < 1.10 and over["ratio"].high > 1.30
    cost = [r for r in rows if r["figure"].startswith("rCost") and r["machine"].startswith("over")]
    assert cost and cost[0]["between"] == 0 and cost[0]["ratio"].value == pytest.approx(1.25)


def test_no_ratio_when_the_base_is_another_binary_somewhere(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    _paired_run(store, "amd", "AMD EPYC", 1.10, 1)
    _run(store, "other", "Intel Xeon", "b" * 64, {"point-1/point-query": 800.0})   # base "a" here is "b"'s digest
    other = store.run("other")
    store.add_target(other.id, "b", "binary", "/bin/b", "b" * 64, BinaryInfo("/bin/b", "", "b"))
    data = machines.compare(merge.load(store, ["amd", "other"]), "b")
    assert all(t.key != "ratios" for t in data.tables)
    assert "not one binary in every run (amd: aaaaaaaaaaaa, other: bbbbbbbbbbbb)" in dict(data.notes)["Against a base"]


def test_runs_are_compared_on_the_tests_every_run_measured_and_one_run_twice_is_refused(tmp_path):
    """A QPS and cost run on two machines where one ran one more test: each figure over the tests both
    ran (the extra test, 3x faster, would move the AMD figure far from 1.10); the same run twice is refused."""
    store = Store(tmp_path / "s.sqlite")
    _paired_run(store, "amd", "AMD EPYC", 1.10, 1)
    _paired_run(store, "intel", "Intel Xeon", 1.30, 2)
    amd = store.run("amd")
    for inst in (1, 2):
        for block in (1, 2, 3):
            for pos, (label, value) in enumerate((("a", 1000.0), ("b", 3000.0))):
                store.add(amd.id, Sample(Step("qps", "range-1/extra", inst, block, pos, label),
                                         {"qps": value, "cpu_us": 1e6 / value}, 1.0), "g")
    rows = machines.compare(merge.load(store, ["amd", "intel"]), "b").table("ratios").rows
    qps = {r["machine"].split(":")[0]: r for r in rows if r["figure"] == "rQPS"}
    assert qps["AMD EPYC (cpu family 1)"]["ratio"].value == pytest.approx(1.10, rel=0.01)
    model = [r for r in rows if r["figure"].startswith("rCost") and r["machine"].startswith("over")]
    assert model[0]["verdict"] == "(model: read its SD)"
    with pytest.raises(PgolabError, match="one run given twice"):
        merge.load(store, ["amd", "amd"])


def test_a_build_whose_files_differ_in_symbol_names_only_is_one_binary(tmp_path):
    """A clang ThinLTO build of one tree at two paths: two file digests, one digest of what it runs
    (recorded since build.json version 9); another loaded digest, or none recorded, is still refused."""
    from pgolab.record import BuildRecord, SourceInfo

    def record(digest, code):
        return BuildRecord("a", "rel_lto_clang", "clang", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l",
                           binary_digest=digest, code_digest=code)

    store = Store(tmp_path / "s.sqlite")
    for name, cpu, digest, code in (("amd", "AMD EPYC", "d" * 64, "c" * 64), ("intel", "Intel Xeon", "e" * 64, "c" * 64),
                                    ("other", "Intel Xeon", "f" * 64, "9" * 64), ("old", "Intel Xeon", "0" * 64, None)):
        _run(store, name, cpu, digest, {"point-1/point-query": 1000.0}, description=record(digest, code))
    # A record whose file is not the one the run measured vouches for nothing.
    _run(store, "stale", "Intel Xeon", "1" * 64, {"point-1/point-query": 1000.0}, description=record("2" * 64, "c" * 64))
    data = machines.compare(merge.load(store, ["amd", "intel"]), "a")
    assert f"a: loaded sha256 {'c' * 12} (file sha256 {'d' * 12}, {'e' * 12}" in data.facts[0]
    for other in ("other", "old", "stale"):
        with pytest.raises(PgolabError, match="not one binary"):
            machines.compare(merge.load(store, ["amd", other]), "a")


def test_a_label_is_said_measured_on_two_binaries_only_when_no_cost_target_of_it_is_its_wall_clock_binary():
    """Pure logic (binaries.measured_apart): each shard measured its own base, so a wall-clock base that
    is one of them is no news; one binary by its loaded code is one binary; a label without a digest,
    or measured on one side alone, is left out; a rebuilt one is named with every digest."""
    from pgolab.binaries import measured_apart
    from pgolab.record import BuildRecord, SourceInfo
    from pgolab.store import StoredTarget

    def target(label, digest, code=None):
        record = BuildRecord(label, label, "gcc", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l",
                             binary_digest=digest, code_digest=code)
        return StoredTarget(label, "variant", "/b/postgres", digest, record)

    cost = [target("rel_o2nofp", "a" * 64), target("rel_o2nofp", "b" * 64), target("rel_pgo_use", "c" * 64),
            target("rel_lto_clang", "d" * 64, "e" * 64), target("rel_lto", ""), target("rel_clang", "f" * 64)]
    clock = [target("rel_o2nofp", "b" * 64), target("rel_pgo_use", "1" * 64), target("rel_lto_clang", "2" * 64, "e" * 64),
             target("rel_lto", "3" * 64), target("rel_clang", ""), target("rel_native", "4" * 64)]
    assert measured_apart(cost, clock) == [f"rel_pgo_use (cost: {'c' * 12}, wall-clock: {'1' * 12})"]
    assert measured_apart(cost, [target("rel_o2nofp", "5" * 64)]) == [
        f"rel_o2nofp (cost: {'a' * 12}, cost: {'b' * 12}, wall-clock: {'5' * 12})"]
