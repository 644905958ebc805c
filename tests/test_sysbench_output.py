"""The parser on sysbench output recorded here (1.0.20) and in 1.1's format."""

from pathlib import Path

import pytest

from pgolab.sysbench_output import SysbenchParseError, parse

DATA = Path(__file__).parent / "data"


def test_sysbench_1_0_general_statistics_with_histogram():
    r = parse((DATA / "sysbench-1.0.20-histogram.txt").read_text())
    assert r.qps == pytest.approx(1556.73) and r.tps == pytest.approx(1556.73)
    assert r.queries == 3116 and r.transactions == 3116
    assert r.seconds == pytest.approx(2.0013)
    assert r.errors == 0 and r.reconnects == 0 and r.fatal == []
    assert r.latency_ms["min"] == 0.23 and r.latency_ms["p95"] == 1.16 and r.latency_ms["max"] == 8.76
    # p50/p99 come from the histogram and must sit between min and max.
    assert 0.23 <= r.latency_ms["p50"] <= r.latency_ms["p99"] <= 8.76


def test_sysbench_1_1_throughput_block_and_error_counts():
    r = parse((DATA / "sysbench-1.1-throughput.txt").read_text())
    assert r.qps == pytest.approx(2046.60) and r.seconds == pytest.approx(10.0019)
    assert r.errors == 3 and r.reconnects == 1


def test_fatal_error_lines_are_reported():
    with pytest.raises(SysbenchParseError, match="Lost connection"):
        parse((DATA / "sysbench-1.0.20-fatal.txt").read_text())


def test_a_run_that_died_without_a_report_is_an_error():
    # Recorded here: sysbench 1.0.20 ends silently after its connection is killed,
    # leaving only the per-second lines (with their err/s and reconn/s columns).
    text = (DATA / "sysbench-1.0.20-died-after-kill.txt").read_text()
    assert "reconn/s" in text
    with pytest.raises(SysbenchParseError, match="no final report"):
        parse(text)
