"""`pgolab machines`: one binary's cost per query from runs on two machines, side by side; refused
for two binaries under one label or for runs of other options. Synthetic stores, known answers."""

import pytest

from pgolab import machines, merge
from pgolab.errors import PgolabError
from pgolab.host import Host
from pgolab.measurement import BenchOptions, Sample, Step
from pgolab.record import BinaryInfo
from pgolab.store import Store


def _run(store, name, cpu, digest, cycles, options=None, suite="quick"):
    run_id, _ = store.create_or_resume_run(
        name, server="mariadb", base="a", suite=suite, options=options or BenchOptions(modes=("cost",)),
        host=Host.from_dict({"cpu": cpu, "cpu_id": "cpu family 1", "cores": 2, "memory_gib": 1, "kernel": "k"}),
        identity={"suite": suite, "options": {"cost_scale": (options or BenchOptions()).cost_scale},
                  "host": {"cpu": cpu}, "targets": {"a": digest}, "cost_method": {"guest_cpu": cpu}},
        command="pgolab bench (test)")
    store.add_target(run_id, "a", "binary", "/bin/a", digest, BinaryInfo("/bin/a", "", "a"))
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
    with pytest.raises(PgolabError, match="not one binary"):
        machines.compare(merge.load(store, ["one", "two"]), "a")
    with pytest.raises(PgolabError, match="options.cost_scale differ"):
        machines.compare(merge.load(store, ["one", "scaled"]), "a")
    with pytest.raises(PgolabError, match="has no target 'b'"):
        machines.compare(merge.load(store, ["one", "full"]), "b")
    # Another suite is compared on the tests both ran.
    assert len(machines.compare(merge.load(store, ["one", "full"]), "a").table("machines").rows) == 3
