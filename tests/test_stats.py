import numpy as np
import pytest

from pgolab import stats


def test_identical_series_give_exactly_one():
    e = stats.ratio_estimate([100, 120, 90], [100, 120, 90])
    assert e.value == pytest.approx(1.0) and e.low == pytest.approx(1.0) and e.no_difference


def test_a_clear_speedup_is_flagged_faster():
    base = [1000, 1100, 950, 1050, 1020]
    e = stats.ratio_estimate([b * 1.3 * f for b, f in zip(base, [1.01, 0.99, 1.0, 1.02, 0.98])], base)
    assert e.verdict() == "faster" and e.low > 1.2 and e.high < 1.4


def test_two_noisy_rounds_do_not_claim_a_difference():
    # Bootstrap over two rounds would give [0.9, 1.3] here and call it a difference only by luck;
    # the t interval is wide, as two rounds deserve.
    e = stats.ratio_estimate([90, 130], [100, 100])
    assert e.no_difference and e.low < 0.5 and e.high > 2


def test_one_round_has_no_interval():
    e = stats.ratio_estimate([110], [100])
    assert e.low is None and e.verdict() == "too few rounds"


def test_coverage_of_the_interval_on_simulated_a_a_runs():
    """95% intervals on same-distribution data should contain 1.0 about 95% of the time."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(2000):
        base = rng.lognormal(0, 0.2, size=4)
        variant = rng.lognormal(0, 0.2, size=4)
        hits += stats.ratio_estimate(list(variant), list(base)).no_difference
    assert 0.93 <= hits / 2000 <= 0.97


def test_summary_keeps_rounds_together_and_group_summary_shape():
    v = [[110, 111, 109], [220, 222, 218]]
    b = [[100, 100, 100], [200, 200, 200]]
    avg = stats.summary_estimate(v, b, "avg")
    assert avg.value == pytest.approx(1.1, rel=1e-3) and avg.verdict() == "faster"
    assert stats.group_summary([0.9, 1.0, 1.3]) == pytest.approx({"min": 0.9, "max": 1.3, "avg": 1.0666666, "median": 1.0})
