"""Every axis's effect on one server, from several runs, in one table (`pgolab axes`).

An axis (LTO, PGO, BOLT, LLVM 19, an allocator, a layout option) is measured wherever a run holds a
build and its twin without that axis: a matrix, a proof of one axis, a round of `pgolab best`. Each
run's report reads those pairs in its per-axis table; this puts the pairs of many runs (stored here,
or files written by `pgolab export`) side by side, each read as its own report reads it, with the run
and the machine it comes from, in both measures where a run has both. Rows of one axis from several
runs are other builds, and often other machines: their spread is not an interval, and they are not
combined.
"""

from __future__ import annotations

from . import merge
from .analysis import Analysis
from .document import Column, Report, Table, words
from .errors import PgolabError
from .store import StoredRun


def machine_of(run: StoredRun, a: Analysis, labels: tuple[str, ...]) -> str:
    """The CPU model a pair was measured on: the run's, or in a merged run, those of the shards that
    measured either build (a merged run's own host is its first shard's)."""
    if run.merged is None:
        return a.cpu()
    shards = [s for s in run.merged.shards if set(labels) & set(s.builds)] or list(run.merged.shards)
    return "; ".join(dict.fromkeys(s.cpu for s in shards))


def axes_report(shards: list[merge.Shard]) -> Report:
    """One row per axis pair per run, with each headline figure's suite ratio and verdict."""
    from .report import analyses_apart
    from .report.tables import SENSITIVITY_NOTE, figure_name, pair_cells

    servers = sorted({s.rows["run"]["server"] for s in shards})
    if len(servers) > 1:
        raise PgolabError(f"these runs measured {words(servers)}: one table is one server's",
                          hint="give the runs of one server, and make one table per server")
    rows, titles, facts = [], {}, []
    with analyses_apart([s.rows for s in shards]) as analysed:
        for run, a in analysed:
            figs = a.headline()
            for f in figs:
                titles.setdefault(f.key, f"{figure_name(a, f, on_cpu=False)} [95%]")
            facts.append(f"run {run.name} ({run.created[:10]}), suite {run.suite}, "
                         f"{'/'.join(run.options.modes)}, on {a.cpu()}: "
                         + (f"{len(a.axes)} axis pair(s)" if a.axes else "no axis pair"))
            rows += [{"axis": p.axis, "build": p.with_, "against": p.without, "run": run.name,
                      "machine": machine_of(run, a, (p.with_, p.without)), **pair_cells(a, figs, p.without, p.with_)}
                     for p in a.axes]
    if not rows:
        raise PgolabError("none of these runs holds a build and its twin without one axis",
                          hint="give runs whose report has a per-axis table (e.g. rel_lto beside rel)")
    # A run without a measure has empty cells in its columns (null in JSON, as every row has every key).
    rows = sorted(({**{k: None for key in titles for k in (key, f"{key}_verdict")}, **row} for row in rows),
                  key=lambda r: (r["axis"], r["build"], r["run"]))
    columns = [Column("axis", "axis"), Column("build", "build"), Column("against", "against")]
    columns += [c for key, title in titles.items()
                for c in (Column(key, title), Column(f"{key}_verdict", "verdict"))]
    columns += [Column("sensitivity", "sensitivity"), Column("machine", "machine"), Column("run", "run")]
    note = ("Each row is one build against its twin without that axis, in one run, from that run's paired "
            "blocks, as its own report's per-axis table reads it: the geometric mean over the run's suite, above "
            "1 the axis helps. A model figure's interval is the server's repeatability bound plus the repeats; a "
            "wall-clock figure is a claim about the machine named. Rows of one axis from several runs are other "
            f"builds, suites or machines, and are not combined: their spread is no interval. {SENSITIVITY_NOTE}")
    table = Table("axes_over_runs", f"Per axis, {servers[0]}: each build against its twin, over {len(shards)} run(s)",
                  columns, rows, note=note)
    axes = list(dict.fromkeys(r["axis"] for r in rows))
    return Report(f"pgolab axes: {servers[0]}", facts + [f"axes measured: {', '.join(axes)}"], [table], notes=[])
