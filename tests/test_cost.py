"""Cost mode's pure parts: which functions a toggle pattern names, and the per-query arithmetic."""

from pathlib import Path

import pytest

from pgolab.targets.base import CostEntry
from pgolab.measures.callgrind import (Counts, function_names, guest_cpu, guest_cpu_from_diagnostics, new_files,
                                       output_files)
from pgolab.measures.counting import run_sysbench
from pgolab.errors import PgolabError
from pgolab.runner import Runner
from pgolab.targets import MariaDBInstallation

from conftest import need

# As `nm -C` names them in a gcc PGO build of MariaDB 10.11: the hot/cold split leaves a second function.
PGO_NAMES = {"do_command(THD*, bool)", "do_command(THD*, bool) [clone .cold]",
             "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool)",
             "dispatch_command(enum_server_command, THD*, char*, unsigned int, bool) [clone .cold]",
             "do_handle_one_connection(CONNECT*, bool)"}


def test_a_toggle_pattern_names_the_function_and_not_its_cold_part():
    assert CostEntry("do_command(*)").matches(PGO_NAMES) == {"do_command(THD*, bool)"}
    assert len(CostEntry("dispatch_command(*)").matches(PGO_NAMES)) == 1
    # The pattern used before: it matched the cold part too, and callgrind toggled collection off
    # inside the command whenever the cold part ran (20x too few instructions on read-only transactions).
    assert len(CostEntry("do_command(*").matches(PGO_NAMES)) == 2
    assert CostEntry("PostgresMain").matches({"PostgresMain", "PostgresMain.cold"}) == {"PostgresMain"}


def test_every_default_mariadb_toggle_names_one_function_in_debians_server(tmp_path):
    need("mariadbd")
    names = function_names(Path("/usr/sbin/mariadbd"), Runner(tmp_path / "nm.log"))   # stripped: dynamic symbols only
    for entry in MariaDBInstallation.cost_entry_points:
        assert len(entry.matches(names)) == 1, entry


def test_counts_parse_sum_and_per_query():
    text = "events: Ir I1mr D1mr D1mw ILmr DLmr DLmw Bcm Bim\nsummary: 1000 10 5 5 1 1 0 2 1\n"
    c = Counts.parse(text) + Counts.parse(text)
    assert c.get("Ir") == 2000
    per = c.per_query(4)
    assert per["instructions"] == 500 and per["i1_misses"] == 5 and per["d1_misses"] == 5
    # cycles ≈ Ir + 10·(I1mr+D1mr+D1mw) + 100·(ILmr+DLmr+DLmw) + 20·(Bcm+Bim), per query
    assert per["cycles"] == pytest.approx((2000 + 10 * 40 + 100 * 4 + 20 * 6) / 4)


def test_a_file_written_over_under_a_repeated_pid_counts_as_new(tmp_path):
    """After a container restart pids begin again: a backend writes callgrind.out.<pid> over an
    earlier backend's file, and that file is the run's output although its name is not new."""
    old = tmp_path / "callgrind.out.22953"
    old.write_text("summary: 5\n")
    untouched = tmp_path / "callgrind.out.100"
    untouched.write_text("summary: 7\n")
    before = output_files(tmp_path)
    old.write_text("events: Ir\nsummary: 549315930\n")
    (tmp_path / "callgrind.out.22954").write_text("summary: 9\n")
    assert new_files(tmp_path, before, wait_s=0) == [old, tmp_path / "callgrind.out.22954"]
    assert new_files(tmp_path, output_files(tmp_path), wait_s=0) == []


SLOW_START_SCRIPT = """
n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}
if [ "$n" -lt {misses} ]; then echo 'FATAL: Worker threads failed to initialize within 30 seconds!'; exit 1; fi
echo 'General statistics:'
"""


def slow_start_argv(tmp_path, misses: int) -> list[str]:
    return ["sh", "-c", SLOW_START_SCRIPT.format(count=tmp_path / "count", misses=misses)]


def test_a_sysbench_run_that_missed_its_thread_start_runs_again(tmp_path):
    runner = Runner(tmp_path / "log")
    result = run_sysbench(runner, slow_start_argv(tmp_path, misses=2), "cost warm-up")
    assert result.returncode == 0 and (tmp_path / "count").read_text().strip() == "3"
    assert (tmp_path / "log").read_text().count("missed its 30 s start") == 2


def test_a_third_missed_start_or_any_other_failure_is_an_error(tmp_path):
    runner = Runner(tmp_path / "log")
    with pytest.raises(PgolabError, match="failed .exit 1"):
        run_sysbench(runner, slow_start_argv(tmp_path, misses=3), "cost warm-up")
    assert (tmp_path / "count").read_text().strip() == "3"
    with pytest.raises(PgolabError, match="failed .exit 2"):
        run_sysbench(runner, ["sh", "-c", "echo FATAL: no such table; exit 2"], "cost warm-up")


DIAGNOSTICS = """dso.libc="libc.so.6"
x86.cpu_features.basic.kind=0x1
x86.cpu_features.basic.family=0x6
x86.cpu_features.basic.model=0x3c
x86.cpu_features.preferred.Prefer_No_AVX512=0x1
x86.cpu_features.rep_movsb_threshold=0x2000
uname.nodename="vm"
"""


def test_the_processor_glibc_sees_is_named_and_digested_from_its_feature_lines_only():
    seen = guest_cpu_from_diagnostics(DIAGNOSTICS)
    assert seen.startswith("family 0x6 model 0x3c, glibc's view ")
    assert guest_cpu_from_diagnostics(DIAGNOSTICS.replace('"vm"', '"other-host"')) == seen, \
        "the host's name is no part of it"
    assert guest_cpu_from_diagnostics(DIAGNOSTICS.replace("0x2000", "0x840")) != seen, "a threshold is"
    assert guest_cpu_from_diagnostics("").startswith("unknown")


def test_under_valgrind_glibc_sees_valgrinds_processor_not_the_hosts(tmp_path):
    need("valgrind")
    seen = guest_cpu(Runner(tmp_path / "probe.log"))
    from pgolab.host import Host
    family = int(Host.this().cpu_id.split(",")[0].split()[-1])      # "cpu family 25, model 1, ..."
    assert seen.startswith("family 0x"), seen
    if family != 6:          # an Intel family 6 host could be shown as itself
        assert f"family {family:#x} " not in seen, seen
    assert guest_cpu(Runner(tmp_path / "again.log")) == seen, "the same on every call"
