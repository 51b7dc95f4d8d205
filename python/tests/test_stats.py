import math
import random

import pytest

from hugeheap.report.stats import geometric_mean, par2, saved_percent, speedup, wilcoxon_p


def test_par2_counts_unsolved_twice_the_limit() -> None:
    assert par2([1.0, None, 3.0], timeout=10) == pytest.approx(8.0)
    assert par2([None], timeout=60) == 120


def test_saved_percent() -> None:
    assert saved_percent(200.0, 150.0) == pytest.approx(25.0)
    assert saved_percent(100.0, 110.0) == pytest.approx(-10.0)


def test_geometric_mean() -> None:
    assert geometric_mean([1, 4, 16]) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        geometric_mean([1, 0])


def test_speedup_exact_when_every_instance_agrees() -> None:
    result = speedup([2.0, 8.0, 30.0], [1.0, 4.0, 15.0])
    assert (result.geomean, result.low, result.high) == pytest.approx((2.0, 2.0, 2.0))


def test_bootstrap_interval_contains_the_true_ratio() -> None:
    rng = random.Random(7)
    true_ratio = 1.5
    baseline = [rng.uniform(1, 100) for _ in range(200)]
    other = [b / (true_ratio * math.exp(rng.gauss(0, 0.2))) for b in baseline]
    result = speedup(baseline, other, seed=1)
    assert result.low < true_ratio < result.high
    assert result.low < result.geomean < result.high
    assert result.high - result.low < 0.15


def test_wilcoxon_known_answers() -> None:
    # Ten pairs, all in one direction: exact two-sided p = 2 / 2**10.
    assert wilcoxon_p([2.0 + i for i in range(10)], [1.0 + 0.5 * i for i in range(10)]) == \
        pytest.approx(2 / 1024)
    # Differences 1, -2, 3, 4, 5: ranks 1..5, the negative ranks sum to W = 2.
    # Of the 2**5 equally likely sign patterns, 3 give W <= 2 (no negative
    # rank, rank 1 alone, rank 2 alone): two-sided p = 2 * 3 / 32.
    assert wilcoxon_p([2.0, 1.0, 4.0, 5.0, 6.0], [1.0, 3.0, 1.0, 1.0, 1.0]) == \
        pytest.approx(6 / 32)
    # Differences -1, 2, -3, 4, 5, 6 (n = 6): W- = 1 + 3 = 4; sign patterns
    # with a negative-rank sum of at most 4: {}, {1}, {2}, {3}, {4}, {1,2},
    # {1,3}: 7 of 64, so p = 2 * 7 / 64.
    assert wilcoxon_p([1.0, 3.0, 1.0, 5.0, 6.0, 7.0], [2.0, 1.0, 4.0, 1.0, 1.0, 1.0]) == \
        pytest.approx(14 / 64)


def test_wilcoxon_edge_cases() -> None:
    assert wilcoxon_p([1.0], [2.0]) is None
    assert wilcoxon_p([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]) == 1.0
