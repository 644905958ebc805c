"""`pgolab axes`: every axis pair of several runs of one server in one table, each read as its own
report reads it; refused for runs of two servers and for runs without an axis pair. Real committed
proof stores (copied: opening a store may write to it), known answers from their own reports."""

import shutil
from pathlib import Path

import pytest

from pgolab import axis_table, merge, report
from pgolab.errors import PgolabError
from pgolab.store import Store

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def stored(tmp_path, proof: str, run: str, file: str = "results.sqlite") -> tuple[Store, list[merge.Shard]]:
    copy = tmp_path / f"{proof}-{file}"
    shutil.copy(RESULTS / proof / file, copy)
    store = Store(copy)
    return store, merge.load(store, [run], at_least=1)


def test_the_axis_pairs_of_two_runs_read_as_each_runs_own_report_reads_them(tmp_path):
    llvm19_store, llvm19 = stored(tmp_path, "postgresql-15-llvm19", "pg15-llvm19-fbb18832")
    _, layout = stored(tmp_path, "postgresql-15-layout", "pg15-layout-bacf128c")
    data = axis_table.axes_report(llvm19 + layout)
    rows = data.table("axes_over_runs").rows
    assert {r["run"] for r in rows} == {"pg15-llvm19-fbb18832", "pg15-layout-bacf128c"}
    own = {(r["build"], r["against"]): r for r in report.compute(llvm19_store, "pg15-llvm19-fbb18832").table("axes").rows}
    mine = {(r["build"], r["against"]): r for r in rows if r["run"] == "pg15-llvm19-fbb18832"}
    assert mine.keys() == own.keys() and len(mine) == 2
    for key, row in mine.items():
        for figure in ("cycles", "qps"):
            assert (row[figure].value, row[figure].low, row[figure].high) == \
                (own[key][figure].value, own[key][figure].low, own[key][figure].high)
            assert row[f"{figure}_verdict"] == own[key][f"{figure}_verdict"]
    llvm = mine[("rel_lto_pgo_use_clang19", "rel_lto_pgo_use_clang")]
    assert llvm["axis"] == "LLVM 19" and llvm["machine"].startswith("AMD EPYC")
    assert [r["axis"] for r in rows] == sorted(r["axis"] for r in rows)
    assert "axes measured:" in data.facts[-1] and "BOLT" in data.facts[-1]


def test_runs_of_two_servers_or_without_an_axis_pair_are_refused(tmp_path):
    _, postgres = stored(tmp_path, "postgresql-15-llvm19", "pg15-llvm19-fbb18832")
    _, mariadb = stored(tmp_path, "mariadb-10.11-bolt", "mariadb-bolt-870196ce")
    with pytest.raises(PgolabError, match="measured mariadb and postgresql: one table is one server's"):
        axis_table.axes_report(postgres + mariadb)
    _, lto = stored(tmp_path, "mysql-9.7-lto", "mysql-lto-6e3c51bc")    # rel_lto against rel_o2nofp: two axes apart
    with pytest.raises(PgolabError, match="none of these runs holds a build and its twin"):
        axis_table.axes_report(lto)


def test_a_merged_runs_pair_names_the_cpus_of_the_shards_that_measured_it(tmp_path):
    """A merged run's own host is its first shard's: the -march=native pairs of PostgreSQL's matrix
    were measured by its piece on a CPU without AVX-512, the rest on the shards' CPU."""
    _, matrix = stored(tmp_path, "postgresql-15-matrix-shards", "pg15-matrix-cost-merged", "merged.sqlite")
    rows = {(r["build"], r["against"]): r["machine"] for r in axis_table.axes_report(matrix).table("axes_over_runs").rows}
    assert rows[("rel_native_lto", "rel_native")] == "AMD EPYC (family 25, model 1)"
    assert rows[("rel_pgo_use", "rel")] == "AMD EPYC (family 26, model 2)"
    assert rows[("rel_o2nofp_native", "rel_o2nofp")] == "AMD EPYC (family 26, model 2); AMD EPYC (family 25, model 1)"


def test_a_csv_keeps_an_intervals_columns_beside_it_when_the_first_row_has_none(tmp_path):
    """The matrix's cost-only pairs come first (by axis) and hold no QPS: the QPS interval's low and
    high columns still sit beside its value, and those rows leave them empty."""
    import csv
    import io

    from pgolab.render import to_csv
    _, matrix = stored(tmp_path, "postgresql-15-matrix-shards", "pg15-matrix-cost-merged", "merged.sqlite")
    _, layout = stored(tmp_path, "postgresql-15-layout", "pg15-layout-bacf128c")
    table = axis_table.axes_report(matrix + layout).table("axes_over_runs")
    assert table.rows[0]["qps"] is None
    rows = list(csv.DictReader(io.StringIO(to_csv(table))))
    header = list(rows[0])
    assert header[header.index("qps"):header.index("qps") + 4] == ["qps", "qps_low", "qps_high", "qps_verdict"]
    assert rows[0]["qps_low"] == "" and any(r["qps_low"] for r in rows)
