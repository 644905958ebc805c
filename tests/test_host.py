"""The host a run records: enough to tell CPU generations apart (pure parsing, synthetic inputs)."""

from pathlib import Path

from dataclasses import replace

from pgolab.bench import run_identity
from pgolab.host import Host, cache_sizes, cpu_identity

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1

processor\t: 1
cpu family\t: 26
model\t\t: 2
stepping\t: 1
"""


def test_cpu_identity_names_family_model_and_stepping():
    assert cpu_identity(CPUINFO) == "cpu family 26, model 2, stepping 1"
    assert cpu_identity("model name\t: AMD EPYC\n") == "unknown"


def test_cache_sizes_read_sysfs_levels_and_kinds(tmp_path: Path):
    for index, (level, kind, size) in enumerate([("1", "Data", "48K"), ("1", "Instruction", "32K"),
                                                 ("2", "Unified", "1024K"), ("3", "Unified", "32768K")]):
        d = tmp_path / f"index{index}"
        d.mkdir()
        for name, value in (("level", level), ("type", kind), ("size", size)):
            (d / name).write_text(value + "\n")
    assert cache_sizes(tmp_path) == "L1d 48K, L1i 32K, L2 1024K, L3 32768K"
    assert cache_sizes(tmp_path / "missing") == "unknown"


def test_a_run_on_another_cpu_generation_is_another_experiment():
    """Two machines that both say "AMD EPYC" differ in the run identity when their family differs."""
    from pgolab.bench import BenchOptions
    here = Host.this()
    # Another generation than this machine's, whatever this one is.
    other = replace(here, cpu_id=here.cpu_id + " (another)")
    options = BenchOptions(suite="quick", modes=("qps",))
    from pgolab.measures import of_modes
    a = run_identity("mariadb", "base", [], {}, options, here, of_modes(options.modes))
    b = run_identity("mariadb", "base", [], {}, options, other, of_modes(options.modes))
    from pgolab.store import identity_difference
    assert identity_difference(a, b) == ["host.cpu_id"]


def test_a_host_stored_before_a_field_existed_still_loads():
    old = Host.from_dict({"cpu": "AMD EPYC", "cores": 2, "kernel": "6.1", "memory_gib": 24.0, "hostname": "h"})
    assert old.cpu_id == "family not recorded" and old.caches == "not recorded"
    assert Host.from_dict(old.as_dict()) == old
