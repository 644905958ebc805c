"""Reports from a real SQLite store: rQPS and rCPU summaries per variant and per group."""

import json

import pytest

from pgolab import report
from pgolab.store import Measurement, Store


def stored_run(tmp_path):
    store = Store(tmp_path / "results.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="base", suite="quick",
                                           options={"rounds": 3, "seconds": 5}, host={"cpu": "x", "cores": 2,
                                           "memory_gib": 1, "kernel": "k"}, command="pgolab bench (test)")
    for label in ("base", "fast"):
        store.add_target(run_id, label, "binary", f"/bin/{label}", {"description": label})
    # "fast" spends 20% less server CPU per query in every round; its QPS moves with the noise.
    for micro, group in (("point-1/point-query", "point-1"), ("writes/insert", "writes")):
        for rnd, noise in ((1, 1.0), (2, 1.3), (3, 0.8)):
            for position, (label, cpu) in enumerate((("base", 50.0), ("fast", 40.0))):
                qps = 1000 * noise * (1.02 if label == "fast" else 1.0)
                store.add(run_id, Measurement(micro, group, rnd, position, label, qps, qps, 5, int(qps * 5),
                                              int(qps * 5), 0, 0, {}, 1.0, 0.1, cpu * noise ** 0.01))
    return store


def test_rcpu_is_summarised_per_variant_and_per_group(tmp_path):
    data = report.compute(stored_run(tmp_path), "r")
    summary = data["summaries"]["fast"]
    assert summary["cpu_avg"].value > 1.2 and summary["cpu_avg"].verdict() == "faster"
    assert summary["avg"].value > 1.0
    assert data["groups"][("writes", "fast", "cpu")]["min"] > 1.2
    assert data["groups"][("writes", "fast", "qps")]["avg"] < 1.1
    text = report.markdown(data)
    assert "## Per group (rCPU" in text and "## Per group (rQPS)" in text
    groups = json.loads(report.to_json(data))["groups"]
    assert {g["metric"] for g in groups} == {"rqps", "rcpu"}


def test_group_summaries_carry_intervals(tmp_path):
    data = report.compute(stored_run(tmp_path), "r")
    cpu = data["groups"][("writes", "fast", "cpu")]
    # 20% less CPU per query in every round: a narrow interval around 1.25 that excludes 1.0.
    assert 1.0 < cpu["avg_low"] <= cpu["avg"] <= cpu["avg_high"] < 1.3
    assert report.group_estimate(cpu, "median").verdict() == "faster"
    qps = data["groups"][("writes", "fast", "qps")]
    assert qps["avg_low"] <= qps["avg"] <= qps["avg_high"] and qps["avg"] == pytest.approx(1.02)
    assert "| writes | fast | 1.250 | 1.250 | 1.2" in report.markdown(data)
