"""Each target's data directory: copied from the golden one, and copied again by a resuming process."""

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
