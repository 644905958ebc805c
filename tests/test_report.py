"""The report model and its renderers, without servers: golden text from a literal report, and the
model computed from a synthetic store whose answers are known."""

import json
import math
from pathlib import Path

import pytest

from pgolab import render, report, stats
from pgolab.errors import PgolabError
from pgolab.record import BinaryInfo
from pgolab.measurement import Sample, Step
from pgolab.report import Column, Report, Table
from pgolab.store import Store
from pgolab.host import Host
from pgolab.measurement import BenchOptions

GOLDEN = Path(__file__).parent / "golden"


def literal_report() -> Report:
    e = stats.Estimate(1.25, 1.2, 1.3, 8, df=14, log_se=0.02)
    same = stats.Estimate(1.001, 0.995, 1.007, 8, df=14, log_se=0.003)
    # A cost-model figure: its interval is a bound (±0.5 %) and the repeats, with no df to report.
    cost = stats.Estimate(1.076, 1.070, 1.082, 1, log_se=0.0027, bound=0.005, bound_df=2.4e6)
    builds = Table("builds", "Per build", [Column("build", "build"), Column("qps", "rQPS on AMD EPYC [95% CI]"),
                                           Column("qps_verdict", "verdict"),
                                           Column("cycles", "rCost, estimated cycles (model) [95%: ±0.5% bound]"),
                                           Column("cycles_verdict", "verdict"), Column("sensitivity", "sensitivity")],
                   [{"build": "rel_o2nofp_native_clang", "qps": e, "qps_verdict": e.verdict(), "cycles": cost,
                     "cycles_verdict": cost.verdict(), "sensitivity": "robust"},
                    {"build": "a|b", "qps": same, "qps_verdict": same.verdict(), "cycles": None, "cycles_verdict": None,
                     "sensitivity": "rQPS fragile: without update-inlist, inconclusive"}], note="above 1 is better")
    groups = Table("groups", "Per group", [Column("group", "group"), Column("build", "build"),
                                           Column("min", "min"), Column("geomean", "geomean [95% CI]")],
                   [{"group": "point-1", "build": "rel_o2nofp_native_clang", "min": 1.1, "geomean": e}])
    micro = Table("micro", "Per microbenchmark", [Column("micro", "microbenchmark"), Column("qps", "rQPS"),
                                                  Column("qps_verdict", "verdict"),
                                                  Column("qps_holm", "verdict (Holm)"), Column("pairs", "pairs")],
                  [{"micro": "point-query", "qps": e, "qps_verdict": "faster", "qps_holm": "inconclusive", "pairs": 8},
                   {"micro": "scan", "qps": None, "qps_verdict": None, "qps_holm": None, "pairs": 0}])
    return Report("pgolab run golden", ["server mariadb; base rel_o2nofp"], [builds, groups, micro],
                  [("Noise", "CV 1.0%."), ("Method", "<paired> & geometric")], commands=["pgolab bench --base x"])


RENDERINGS = {
    "report.md": lambda r: render.MarkdownRenderer().render(r),
    "report.html": lambda r: render.HtmlRenderer().render(r),
    "micro.csv": lambda r: render.to_csv(r.table("micro")),
    "report.json": lambda r: render.to_json(r),
}


@pytest.mark.parametrize("name", sorted(RENDERINGS))
def test_renderers_match_golden_text(name):
    """The golden files are written by hand or by scripts/update_golden.py, whose diff is reviewed;
    the test only reads them, so a wrong golden file cannot pass."""
    assert RENDERINGS[name](literal_report()) == (GOLDEN / name).read_text()


def test_summary_comes_before_details_in_every_markup():
    for renderer in (render.MarkdownRenderer(), render.HtmlRenderer()):
        text = renderer.render(literal_report())
        assert text.index("Per build") < text.index("Per group") < text.index("Per microbenchmark")


def test_terminal_output_to_a_pipe_never_wraps_identifiers(tmp_path):
    with open(tmp_path / "out.txt", "w") as f:
        render.print_terminal(literal_report(), render.console_for_output(f))
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert any("rel_o2nofp_native_clang" in line for line in lines)
    assert not any(line.strip("│ ").startswith("ang") for line in lines)


def synthetic_store(tmp_path, speedup=1.25):
    """b is `speedup` times faster than a in every block, with instance and block noise that both
    targets share; block 3 of instance 1 is a 3.5x outlier that was excluded and replaced."""
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="a", suite="quick",
                                           options=BenchOptions(instances=2, blocks=4, slice_seconds=3),
                                           host=Host.from_dict({"cpu": "x", "cores": 2, "memory_gib": 1, "kernel": "k"}),
                                           identity={}, command="pgolab bench (test)")
    for label in ("a", "b"):
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for micro, group in (("point-1/point-query", "point-1"), ("writes/insert", "writes")):
        for instance in (1, 2):
            for block in range(1, 6 if instance == 1 else 5):
                drift = 1 + 0.1 * math.sin(block + 3 * instance)
                for position, label in enumerate(("a", "b")):
                    qps = 1000 * drift * (speedup if label == "b" else 1.0) * (1 + 0.001 * position)
                    if (instance, block, label) == (1, 3, "b"):
                        qps *= 3.5
                    step = Step("qps", micro, instance, block, position, label)
                    store.add(run_id, Sample(step, {"qps": qps, "cpu_us": 1e6 / qps}, 3.0), group)
        store.exclude(run_id, "qps", micro, 1, 3, "rQPS of b: robust z = +80")
    return store


def test_wall_clock_and_cost_figures_stand_side_by_side_per_group(tmp_path):
    store = synthetic_store(tmp_path)
    run_id = store.run("r").id
    for micro, group in (("point-1/point-query", "point-1"), ("writes/insert", "writes")):
        for position, label in enumerate(("a", "b")):
            cost = 1000.0 / (1.1 if label == "b" else 1.0)    # b needs 1/1.1 of a's cycles
            store.add(run_id, Sample(Step("cost", micro, 1, 1, position, label),
                                     {"cycles": cost, "instructions": cost, "i1_misses": cost / 10}, 1.0), group)
    data = report.compute(store, "r")
    rows = {(r["group"], r["build"]): r for r in data.table("modes").rows}
    assert set(rows) == {("point-1", "b"), ("writes", "b")}
    for row in rows.values():
        assert row["qps"].value == pytest.approx(1.25 * 1.001, rel=1e-3)
        assert row["cycles"].value == pytest.approx(1.1) and row["i1_misses"].value == pytest.approx(1.1)
    # A run of one mode has nothing to put side by side.
    assert "modes" not in [t.key for t in report.compute(synthetic_store(tmp_path / "one"), "r").tables]


def test_the_model_computed_from_a_store_has_the_known_answers(tmp_path):
    data = report.compute(synthetic_store(tmp_path), "r")
    build = data.table("builds").rows[0]
    assert build["build"] == "b" and build["qps"].value == pytest.approx(1.25 * 1.001, rel=1e-3)
    assert build["qps_verdict"] == "faster" and build["qps"].half_width < 0.01
    assert build["cpu_us"].value == pytest.approx(1.25 * 1.001, rel=1e-3)
    excluded = data.table("excluded").rows
    assert len(excluded) == 2 and "robust z" in excluded[0]["reason"]
    groups = data.table("groups").rows
    # Every wall-clock ratio names the CPU model it was measured on (the stored host's).
    on = " on x (family not recorded)"
    assert {(g["group"], g["figure"]) for g in groups} == {("point-1", "rQPS" + on), ("point-1", "rCPU" + on),
                                                           ("writes", "rQPS" + on), ("writes", "rCPU" + on)}
    assert all(on in c.title for t in data.tables for c in t.columns if c.key in ("qps", "cpu_us"))
    assert all(g["min"] <= g["median"] <= g["max"] for g in groups)
    notes = dict(data.notes)
    assert "coefficient of variation" in notes["Noise"] and "about" in notes["Multiple comparisons"]


def test_a_run_reread_against_another_target(tmp_path):
    store = synthetic_store(tmp_path)
    data = report.compute(store, "r", base="b")
    build = data.table("builds").rows[0]
    assert build["build"] == "a" and build["qps"].value == pytest.approx(1 / (1.25 * 1.001), rel=1e-3)
    assert build["qps_verdict"] == "slower" and "the run's own base: a" in data.facts[0]
    with pytest.raises(PgolabError, match="no target 'c'"):
        report.compute(store, "r", base="c")


def test_export_writes_every_format_with_charts_of_equal_size(tmp_path):
    data = report.compute(synthetic_store(tmp_path), "r")
    files = render.export(data, tmp_path / "out")
    assert {"markdown", "html", "json", "csv-micro", "csv-builds"} <= set(files)
    pngs = [p for k, p in files.items() if k.startswith("png-")]
    assert len(pngs) == 4
    from PIL import Image
    assert len({Image.open(p).size for p in pngs}) == 1
    page = files["html"].read_text()
    assert page.index("Per build") < page.index("data:image/png")
    assert json.loads(files["json"].read_text())["tables"]["builds"]["rows"][0]["qps"]["verdict"] == "faster"


def test_a_version_1_store_is_migrated_and_reported(tmp_path):
    import sqlite3
    path = tmp_path / "v1.sqlite"
    db = sqlite3.connect(path)
    db.executescript("""
      CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT, created TEXT, server TEXT, base TEXT, suite TEXT,
        options TEXT, host TEXT, commands TEXT, status TEXT);
      CREATE TABLE targets (run_id INTEGER, label TEXT, kind TEXT, server_binary TEXT, description TEXT);
      CREATE TABLE measurements (id INTEGER PRIMARY KEY, run_id INTEGER, micro TEXT, grp TEXT, round INTEGER,
        position INTEGER, label TEXT, qps REAL, tps REAL, seconds REAL, queries INTEGER, transactions INTEGER,
        errors INTEGER, reconnects INTEGER, latency TEXT, cpu_user_s REAL, cpu_sys_s REAL,
        cpu_us_per_query REAL, command TEXT, output TEXT, created TEXT);
      INSERT INTO runs VALUES (1, 'old', 't', 'mariadb', 'a', 'quick', '{"rounds": 3, "seconds": 3}',
        '{"cpu": "x", "cores": 2, "memory_gib": 1, "kernel": "k"}', '["pgolab bench"]', 'finished');
      INSERT INTO targets VALUES (1, 'a', 'binary', '/a', '{}'), (1, 'b', 'binary', '/b', '{}');
    """)
    for rnd in (1, 2, 3):
        for label, qps in (("a", 100.0 * rnd), ("b", 110.0 * rnd)):
            db.execute("INSERT INTO measurements (run_id, micro, grp, round, position, label, qps, tps, seconds, "
                       "queries, transactions, errors, reconnects, latency, cpu_us_per_query, command, output, "
                       "created) VALUES (1, 'point-1/point-query', 'point-1', ?, 0, ?, ?, 0, 3, 1, 1, 0, 0, '{}', "
                       "50, '', '', 't')", (rnd, label, qps))
    db.commit()
    db.close()
    data = report.compute(Store(path), "old")
    assert data.table("builds").rows[0]["qps"].value == pytest.approx(1.1)
    assert "one server instance only" in dict(data.notes)["Noise"]


def store_of_speeds(tmp_path, name: str, speed: dict[str, float]) -> Store:
    """A QPS run whose targets run at the given relative speeds in every block, under a drift that
    every target of a block shares; the first target is the base."""
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run(name, server="mariadb", base=next(iter(speed)), suite="quick",
                                           options=BenchOptions(), host=Host.this(), identity={}, command="test")
    for label in speed:
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for micro, group in (("point-1/point-query", "point-1"), ("writes/insert", "writes")):
        for instance in (1, 2):
            for block in range(1, 5):
                drift = 1 + 0.1 * math.sin(block + 3 * instance)
                for position, (label, s) in enumerate(speed.items()):
                    store.add(run_id, Sample(Step("qps", micro, instance, block, position, label),
                                             {"qps": 1000 * drift * s, "cpu_us": 1e6 / (1000 * drift * s)}, 2.0), group)
    return store


def test_a_version_series_compares_each_tree_with_the_first_at_equal_optimization(tmp_path):
    """11.8's -O2 build runs at 0.9 of 10.11's; its LTO build at 0.918 of 10.11's LTO build."""
    speed = {"mariadb-10.11.18:rel_o2nofp": 1.0, "mariadb-10.11.18:rel_lto": 1.05,
             "mariadb-11.8.6:rel_o2nofp": 0.9, "mariadb-11.8.6:rel_lto": 0.9 * 1.05 * 1.02}
    data = report.compute(store_of_speeds(tmp_path, "series", speed), "series")
    rows = {r["variant"]: r for r in data.table("series").rows}
    assert set(rows) == {"rel_o2nofp", "rel_lto"}
    assert rows["rel_o2nofp"]["tree"] == "mariadb-11.8.6" and rows["rel_o2nofp"]["against"] == "mariadb-10.11.18"
    assert rows["rel_o2nofp"]["qps"].value == pytest.approx(0.9) and rows["rel_o2nofp"]["qps_verdict"] == "slower"
    assert rows["rel_lto"]["qps"].value == pytest.approx(0.918)
    # The per-build table still reads everything against the base.
    builds = {r["build"]: r for r in data.table("builds").rows}
    assert builds["mariadb-11.8.6:rel_lto"]["qps"].value == pytest.approx(0.9 * 1.05 * 1.02)
    # A run of one tree has no series table.
    assert "series" not in [t.key for t in report.compute(synthetic_store(tmp_path / "one"), "r").tables]


def test_each_axis_is_read_from_the_twins_that_differ_in_it_alone(tmp_path):
    """-O3 makes a build 1.1x faster, LTO 1.05x on top; distro is on no axis."""
    speed = {"rel_o2nofp": 1.0, "rel": 1.1, "rel_lto": 1.1 * 1.05, "rel_o2nofp_lto": 1.05, "distro": 0.8}
    data = report.compute(store_of_speeds(tmp_path, "axes", speed), "axes")
    rows = {(r["axis"], r["build"], r["against"]): r for r in data.table("axes").rows}
    assert set(rows) == {("-O3", "rel", "rel_o2nofp"), ("-O3", "rel_lto", "rel_o2nofp_lto"),
                         ("LTO", "rel_o2nofp_lto", "rel_o2nofp"), ("LTO", "rel_lto", "rel")}
    assert rows[("LTO", "rel_lto", "rel")]["qps"].value == pytest.approx(1.05)
    assert rows[("-O3", "rel_lto", "rel_o2nofp_lto")]["qps"].value == pytest.approx(1.1)
    assert rows[("-O3", "rel", "rel_o2nofp")]["qps_verdict"] == "faster"
    summary = {(r["axis"], r["figure"].split(" on ")[0]): r for r in data.table("axis_summary").rows}
    assert summary[("LTO", "rQPS")]["pairs"] == 2 and summary[("LTO", "rQPS")]["geomean"] == pytest.approx(1.05)
    assert summary[("-O3", "rCPU")]["min"] == pytest.approx(1.1)
    # The per-build table still reads everything against the base; the series table is not confused by the pairs.
    assert {r["build"]: r for r in data.table("builds").rows}["rel_lto"]["qps"].value == pytest.approx(1.155)
    assert "series" not in [t.key for t in data.tables]
    # A run without twins has no axis tables.
    keys = [t.key for t in report.compute(synthetic_store(tmp_path / "one"), "r").tables]
    assert "axes" not in keys and "axis_summary" not in keys


def add_cost(store: Store, effects: dict[str, float]) -> None:
    """Cost samples of run "r": b needs 1/effect of a's cycles (and instructions, I1 misses) per query."""
    run_id = store.run("r").id
    for micro, effect in effects.items():
        group = micro.split("/")[0]
        for position, label in enumerate(("a", "b")):
            cost = 1000.0 / (effect if label == "b" else 1.0)
            store.add(run_id, Sample(Step("cost", micro, 1, 1, position, label),
                                     {"cycles": cost, "instructions": cost, "i1_misses": cost / 10}, 1.0), group)


def test_cost_figures_are_claims_about_the_model_with_a_bound_and_no_degrees_of_freedom(tmp_path):
    store = synthetic_store(tmp_path)
    add_cost(store, {"point-1/point-query": 1.1, "writes/insert": 1.1})
    data = report.compute(store, "r")
    build = data.table("builds").rows[0]
    assert build["cycles_verdict"] == "cheaper" and build["qps_verdict"] == "faster"
    titles = {c.key: c.title for c in data.table("builds").columns}
    assert titles["cycles"] == "rCost, estimated cycles (model) [95%: ±0.5% bound + repeats]"
    assert titles["qps"] == "rQPS on x (family not recorded) [95% CI]"
    cell = json.loads(render.to_json(data))["tables"]["builds"]["rows"][0]["cycles"]
    assert cell["df"] is None and cell["bound"] == 0.005 and cell["verdict"] == "cheaper"
    assert cell["low"] == pytest.approx(1.1 / 1.005, rel=1e-3)
    notes = dict(data.notes)
    assert "'cheaper' or 'costlier'" in notes["Multiple comparisons"] and "a bound, not an estimate" in \
        notes["Multiple comparisons"]
    # No cost verdict anywhere says "faster"; the per-microbenchmark rows say it with Holm beside.
    for t in data.tables:
        for row in t.rows:
            for key in ("cycles_verdict", "cycles_holm", "instructions_verdict", "i1_misses_verdict"):
                assert row.get(key) in (None, "cheaper", "costlier", "same", "inconclusive")


def test_the_model_is_read_against_the_wall_clock_per_group_and_over_the_suite(tmp_path):
    """Four tests whose QPS effects differ; the model sees each squared (log effects twice the
    clock's): r = 1 and the ratio of log effects 2, per group and over the suite."""
    effects = {"point-1/a": 1.02, "point-1/b": 1.05, "point-1/c": 1.10, "writes/d": 1.03}
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="a", suite="quick",
                                           options=BenchOptions(instances=2, blocks=3), host=Host.from_dict(
                                               {"cpu": "AMD EPYC", "cpu_id": "cpu family 26, model 2, stepping 1"}),
                                           identity={}, command="test")
    for label in ("a", "b"):
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for micro, effect in effects.items():
        group = micro.split("/")[0]
        for instance in (1, 2):
            for block in (1, 2, 3):
                drift = 1 + 0.1 * math.sin(block + 3 * instance)
                for position, label in enumerate(("a", "b")):
                    qps = 1000 * drift * (effect if label == "b" else 1.0) * math.exp(0.002 * (block - 2) * position)
                    store.add(run_id, Sample(Step("qps", micro, instance, block, position, label),
                                             {"qps": qps, "cpu_us": 1e6 / qps}, 1.0), group)
    add_cost(store, {m: e ** 2 for m, e in effects.items()})
    data = report.compute(store, "r")
    rows = {r["group"]: r for r in data.table("model_agreement").rows}
    assert set(rows) == {"point-1", "writes", "all"}
    assert rows["point-1"]["tests"] == 3 and rows["point-1"]["r"] == pytest.approx(1.0, abs=0.01)
    assert rows["writes"]["r"] is None             # one test: no correlation
    assert rows["all"]["ratio"] == pytest.approx(2.0, rel=0.05)
    assert rows["all"]["model"].value == pytest.approx(rows["all"]["clock"].value ** 2, rel=1e-3)
    titles = [c.title for c in data.table("model_agreement").columns]
    assert "rQPS on AMD EPYC (family 26, model 2) [95% CI]" in titles
    # A run of one measure has no such table.
    assert "model_agreement" not in [t.key for t in report.compute(synthetic_store(tmp_path / "one"), "r").tables]


def test_per_microbenchmark_verdicts_carry_their_holm_verdict(tmp_path):
    data = report.compute(synthetic_store(tmp_path), "r")
    micro = data.table("micro")
    assert [c.key for c in micro.columns][3:9] == ["qps", "qps_verdict", "qps_holm", "cpu_us", "cpu_us_verdict",
                                                   "cpu_us_holm"]
    expected = stats.adjusted_verdicts([r["qps"] for r in micro.rows])
    assert [r["qps_holm"] for r in micro.rows] == expected
    assert "qps_holm" in render.to_csv(micro).splitlines()[0]
    groups = data.table("groups").rows
    assert all(g["holm"] in ("faster", "slower", "same", "inconclusive") for g in groups)
    assert "Holm" in dict(data.notes)["Method"] and "hold under Holm's correction" in \
        dict(data.notes)["Multiple comparisons"]


def test_a_verdict_carried_by_one_test_is_fragile(tmp_path):
    """Three tests where b equals a and one where it is 30 % faster: the suite reads 'faster' only
    because of that one."""
    speed_of = {"point-1/a": 1.0, "point-1/b": 1.0, "point-1/c": 1.0, "point-1/big": 1.3}
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="a", suite="quick", options=BenchOptions(),
                                           host=Host.this(), identity={}, command="test")
    for label in ("a", "b"):
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for n, (micro, speed) in enumerate(speed_of.items()):
        for instance in (1, 2):
            for block in (1, 2, 3):
                wobble = 1 + 0.003 * math.sin(7 * n + 3 * instance + block)
                for position, label in enumerate(("a", "b")):
                    qps = 1000 * (speed * wobble if label == "b" else 1.0)
                    store.add(run_id, Sample(Step("qps", micro, instance, block, position, label),
                                             {"qps": qps, "cpu_us": 1e6 / qps}, 1.0), "point-1")
    data = report.compute(store, "r")
    build = data.table("builds").rows[0]
    assert build["qps_verdict"] == "faster"
    assert build["sensitivity"].startswith("rQPS fragile: without big, ")
    group = next(g for g in data.table("groups").rows if g["figure"].startswith("rQPS"))
    assert group["sensitivity"].startswith("fragile: without big, ")


def test_a_verdict_that_rests_on_an_exclusion_is_fragile(tmp_path):
    """b equals a (in every block) but for one excluded 3.5x block: 'same' as measured, not with that
    block put back."""
    data = report.compute(synthetic_store(tmp_path, speedup=1 / 1.001), "r")
    build = data.table("builds").rows[0]
    assert build["qps_verdict"] == "same"
    assert "rQPS fragile: with the excluded blocks, " in build["sensitivity"]
    assert "without" not in build["sensitivity"].split("rCPU")[0]


def test_a_pooled_instance_variance_of_under_one_degree_of_freedom_is_not_printed_as_one(tmp_path):
    """Two tests of two instances whose means differ a little more than their 5 % blocks allow: the
    pool is positive with far under one degree of freedom (a quick-suite run printed '3.2 %
    (pooled over the suite, 0 df)')."""
    store = Store(tmp_path / "s.sqlite")
    run_id, _ = store.create_or_resume_run("r", server="mariadb", base="a", suite="quick",
                                           options=BenchOptions(instances=2, blocks=3), host=Host.this(),
                                           identity={}, command="test")
    for label in ("a", "b"):
        store.add_target(run_id, label, "binary", f"/bin/{label}", "0" * 64, BinaryInfo(f"/bin/{label}", "", label))
    for micro in ("point-1/a", "point-1/b"):
        for instance, u in ((1, 0.0216), (2, -0.0216)):
            for block, e in ((1, 0.05), (2, -0.05), (3, 0.0)):
                for position, label in enumerate(("a", "b")):
                    qps = 1000 * (math.exp(u + e) if label == "b" else 1.0)
                    store.add(run_id, Sample(Step("qps", micro, instance, block, position, label),
                                             {"qps": qps, "cpu_us": 1e6 / qps}, 1.0), "point-1")
    data = report.compute(store, "r")
    component = data.table("builds")     # the analysis behind it pooled next to nothing
    noise = dict(data.notes)["Noise"]
    assert "0 df" not in noise and "pooled over the suite" not in noise
    assert "next to nothing to pool" in noise and component.rows[0]["qps"].low is not None


def test_the_builds_list_gives_the_file_and_the_loaded_digest():
    from pgolab.record import BuildRecord, SourceInfo
    from pgolab.report.tables import builds_list_table
    new = BuildRecord("a", "rel_lto_clang", "clang", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l",
                      binary_digest="d" * 64, code_digest="c" * 64)
    old = BuildRecord("b", "rel", "gcc", "postgresql", SourceInfo(), {}, {}, "/b/postgres", "/i", "/l",
                      binary_digest="e" * 64)
    rows = builds_list_table([new, old], "builds").rows
    assert [r["sha256"] for r in rows] == [f"{'d' * 12} / {'c' * 12}", f"{'e' * 12} / -"]
