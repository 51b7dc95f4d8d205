"""The statistics of a campaign, as the THP-for-reasoners paper reports them
and as a reviewer asks for: solved counts, PAR-2, time on commonly solved
instances, saved %, the geometric-mean speed-up with a bootstrap confidence
interval over instances, and a paired Wilcoxon signed-rank test."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats


def par2(times: Sequence[float | None], timeout: float) -> float:
    """Mean penalised runtime: an unsolved instance (None) counts twice the limit."""
    if not times:
        raise ValueError("PAR-2 of no instances")
    return sum(2 * timeout if t is None else t for t in times) / len(times)


def saved_percent(baseline_total: float, other_total: float) -> float:
    """How much of the baseline's time the other configuration saves, in %."""
    if baseline_total <= 0:
        raise ValueError("saved %: the baseline's total time must be positive")
    return 100.0 * (baseline_total - other_total) / baseline_total


def geometric_mean(values: Sequence[float]) -> float:
    if not values or any(v <= 0 for v in values):
        raise ValueError("geometric mean needs positive values")
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class Speedup:
    geomean: float
    low: float  # 95% bootstrap confidence interval
    high: float
    instances: int


def speedup(baseline: Sequence[float], other: Sequence[float], resamples: int = 10_000,
            seed: int = 0) -> Speedup:
    """Geometric-mean speed-up of `other` over `baseline` (paired per
    instance), with a percentile bootstrap interval that resamples instances."""
    if len(baseline) != len(other) or not baseline:
        raise ValueError("speed-up needs the same instances, at least one, for both")
    logs = np.log(np.asarray(baseline, dtype=float) / np.asarray(other, dtype=float))
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(logs), size=(resamples, len(logs)))
    means = logs[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return Speedup(float(np.exp(logs.mean())), float(np.exp(low)), float(np.exp(high)),
                   len(logs))


def wilcoxon_p(baseline: Sequence[float], other: Sequence[float]) -> float | None:
    """Two-sided p-value of the paired Wilcoxon signed-rank test; None when
    there are too few pairs to test, 1.0 when every pair is a tie."""
    if len(baseline) != len(other):
        raise ValueError("the Wilcoxon test pairs instances: give both the same ones")
    differences = [b - o for b, o in zip(baseline, other, strict=True)]
    if len(differences) < 2:
        return None
    if all(d == 0 for d in differences):
        return 1.0
    return float(scipy_stats.wilcoxon(baseline, other).pvalue)
