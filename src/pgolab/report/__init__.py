"""The report of a stored run as one typed model (document.py); render.py writes it out.

pgolab.analysis estimates, tables.py defines every table once, notes.py writes the prose; a measure
adds its own tables and notes. Ratios read the same way everywhere: > 1 means the variant is
better (faster, or fewer CPU seconds, instructions or misses per query). A wall-clock ratio is
printed with the CPU model it was measured on; a cost-model ratio is called the model's, and its
verdicts "cheaper"/"costlier", never "faster".
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import PgolabError
from ..measures import MEASURES
from ..store import MergedShards, Store, StoredRun, not_built
from ..analysis import Analysis, analyse, series_pairs
from ..document import Chart, Column, Report, Table, words
from .notes import METHOD_NOTE, concurrency_note, multiple_comparisons_note, noise_note
from .tables import (axes_table, axis_summary_table, bolt_summary, build_cost_table, builds_list_table,
                     builds_table, charts, replicates_table, excluded_table, groups_table, micro_table, model_agreement_table,
                     modes_table, series_table, shards_table, targets_table, threads_table)


def analysis_of(store: Store, run_ref: str | int | None, base: str | None = None) -> tuple[StoredRun, Analysis]:
    """A stored run and its analysis against `base` (default: the run's own)."""
    run = store.run(run_ref)
    if run is None:
        raise PgolabError(f"no stored run {run_ref!r}" if run_ref else "the store holds no run yet",
                          hint=f"`pgolab report --list` shows stored runs (store: {store.path})")
    labels = [t.label for t in store.targets(run.id)]
    base = base or run.base
    if base not in labels:
        raise PgolabError(f"run {run.name!r} has no target {base!r}",
                          hint=f"its targets: {', '.join(labels)}")
    tolerances = {m.key: m.tolerance(run.options) for m in MEASURES.values()}
    return run, analyse(store, run.id, base, labels, tolerances, run.host, store.samples(run.id), run.options,
                        merged=run.merged is not None)


@contextmanager
def analyses_apart(runs: list[dict], base: str | None = None) -> Iterator[list[tuple[StoredRun, Analysis]]]:
    """Each run's rows (a stored run's, or a run file's) analysed alone, as its own report reads it,
    each in a store of its own, thrown away after: for tables that set runs side by side."""
    with tempfile.TemporaryDirectory(prefix="pgolab-runs-") as folder:
        found = []
        for i, rows in enumerate(runs):
            store = Store(Path(folder) / f"{i}.sqlite")
            run_id, _ = store.add_rows(rows)
            found.append(analysis_of(store, run_id, base))
        yield found


def compute(store: Store, run_ref: str | int | None, base: str | None = None) -> Report:
    """The report of a stored run; `base` re-reads it against another of its targets (every target
    ran in every block, so any two pair as the run's base and a build do)."""
    run, a = analysis_of(store, run_ref, base)
    base = a.base
    targets = store.targets(run.id)
    measures = list(MEASURES.values())
    samples = store.samples(run.id)
    tables = [builds_table(a)]
    tables += [t for t in (replicates_table(a),) if t]
    tables += [t for t in (threads_table(a), series_table(a), groups_table(a), axis_summary_table(a), axes_table(a), modes_table(a),
                           model_agreement_table(a)) if t]
    micro = micro_table(a)
    tables.append(micro)
    tables += [t for m in measures for t in m.tables(a)]
    tables += [t for t in (build_cost_table(targets, base), shards_table(run.merged)) if t]
    method_columns = [m.method_column for m in measures if m.method_column]
    methods = {m.method_column.key: m.methods(samples) for m in measures if m.method_column}
    tables += [excluded_table(a), targets_table(targets, methods, method_columns)]
    measured = [m for m in measures if any(s.step.mode == m.key for s in samples)]
    based = base if base == run.base else f"{base} (the run's own base: {run.base})"
    facts = [f"server {run.server}; base {based}; suite {run.suite}; measured {', '.join(run.options.modes)}; "
             f"{len(samples)} samples; status {run.status}",
             f"sysbench: {workload_text(run.options)}",
             f"host: {run.host.describe()}"]
    if run.merged:     # a merged run's stored host is its first shard's
        facts[-1] = f"host of the first shard: {run.host.describe()}"
        facts += merged_facts(run.merged)
    facts += [line for m in measured for line in m.facts(samples)]
    facts += [f"{m.key} not measured for {label}: {reason}" for m in measures if m.key in run.options.modes
              for label, reason in m.unavailable(targets).items()]
    facts += not_built(run.commands)
    notes = [("Method", METHOD_NOTE), ("Noise", noise_note(a, run.options, measures)),
             ("Multiple comparisons", multiple_comparisons_note(micro, run.options, measured))]
    cores = run.host.cores if isinstance(run.host.cores, int) else None
    concurrency = concurrency_note(run.options, measured, cores)
    if concurrency:
        notes.append(("Concurrency", concurrency))
    notes += [n for m in measures for n in m.notes(a)]
    return Report(f"pgolab run {run.name}", facts, tables, notes, charts(a), run.commands)


def merged_facts(merged: MergedShards) -> list[str]:
    """What a merged run's report says of its shards: the CPU model each ran on and where the
    wall-clock figures went when they were not merged across models."""
    count = sum(map(len, merged.by_cpu_model.values()))
    facts = [f"merged from {count} shard{'s' if count > 1 else ''}: " +
             "; ".join(f"on {model}: {', '.join(names)}" for model, names in merged.by_cpu_model.items())]
    if merged.clock_per_cpu:
        facts.append("wall-clock figures are not merged across CPU models; each model's: " +
                     ", ".join(f"{run} ({model})" for model, run in merged.clock_per_cpu.items()))
    return facts


def workload_text(options) -> str:
    """What each test ran on: '1 table of 100,000 rows, threads 1, 2 and 4, prepared statements'."""
    threads = (f"threads {words(options.threads)}" if len(options.threads) > 1
               else f"{options.threads[0]} thread{'s' if options.threads[0] > 1 else ''}")
    tables = f"{options.tables} table{'s' if options.tables > 1 else ''}"
    return (f"{tables} of {options.table_size:,} rows, {threads}, "
            f"{'prepared statements' if options.prepared else 'plain queries'}")


__all__ = ["Analysis", "Chart", "Column", "Report", "Table", "analyse", "bolt_summary", "builds_list_table",
           "compute", "series_pairs"]
