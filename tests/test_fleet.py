"""Each target's data directory: copied from the golden one, and copied again by a resuming process."""

import pytest

from pgolab.fleet import BenchTarget, Fleet
from pgolab.bench import BenchOptions
from pgolab.record import BinaryInfo
from pgolab.targets import MariaDBInstallation


def fleet_with_golden(tmp_path) -> Fleet:
    targets = [BenchTarget(label, "binary", MariaDBInstallation(tmp_path / "mariadbd", tmp_path, None, []),
                           BinaryInfo("", "", ""))
               for label in ("a", "b")]
    fleet = Fleet(targets, tmp_path / "run", BenchOptions(), "a")
    golden = tmp_path / "run" / "golden"
    golden.mkdir(parents=True, exist_ok=True)
    (golden / "table").write_text("loaded")
    fleet.golden = {t.data_family: golden for t in targets}
    return fleet


def test_a_resuming_process_replaces_the_data_an_interrupted_one_left(tmp_path):
    first = fleet_with_golden(tmp_path)
    a = first.datadir("a", "cost")
    first.datadir("b", "cost")
    (a / "table").write_text("after some writes")    # the interrupted process wrote on a, not yet on b
    assert first.datadir("a", "cost") == a and (a / "table").read_text() == "after some writes"

    again = fleet_with_golden(tmp_path)                # the resume: both start from the golden data
    assert (again.datadir("a", "cost") / "table").read_text() == "loaded"
    assert (again.datadir("b", "cost") / "table").read_text() == "loaded"
    assert not again.datadir("a", "qps").samefile(again.datadir("a", "cost"))


def test_a_run_whose_data_copies_do_not_fit_the_disk_is_refused_before_loading(tmp_path):
    import shutil

    from pgolab.errors import PgolabError
    from pgolab.fleet import check_disk
    free = shutil.disk_usage(tmp_path).free
    check_disk(tmp_path / "run", free // 4, 3)           # a folder not made yet: its parent's disk
    with pytest.raises(PgolabError, match=r"needs about .* GB on disk \(5 copies of about") as err:
        check_disk(tmp_path / "run", free // 4, 5)
    assert "--table-size" in err.value.hint and not (tmp_path / "run").exists()


def test_profile_of_sets_a_published_shape_and_refuses_a_mix():
    from pgolab.cli import _bench_options
    from pgolab.errors import PgolabError
    from pgolab.measurement import BYTES_PER_ROW
    defaults = dict(suite="quick", measure="qps", slice_seconds=3.0, instances=2, blocks=4, target_ci=None,
                    max_instances=6, pair_budget=120.0, no_pin=False, cost_scale=1.0, cost_jobs=2, threads="1",
                    tables=1, engine="", micro=[], table_size=100_000)
    medium = _bench_options(**defaults, profile_of="medium-server")
    assert (medium.tables, medium.table_size, medium.threads) == (8, 10_000_000, (12,))
    assert medium.data_bytes() == 80_000_000 * BYTES_PER_ROW
    small = _bench_options(**defaults, profile_of="small-server")
    assert (small.tables, small.table_size, small.threads) == (1, 30_000_000, (1,))
    with pytest.raises(PgolabError, match="sets the tables"):
        _bench_options(**{**defaults, "tables": 4}, profile_of="small-server")
    with pytest.raises(PgolabError, match="unknown --profile-of 'big'"):
        _bench_options(**defaults, profile_of="big")
