"""The huge-page share of a run: one threshold below which no share is taken,
whichever way the memory is read (the cgroup's count, or the processes')."""

from __future__ import annotations

import os

import pytest

from hugeheap.measure.hugepages import (
    MIN_ANONYMOUS_BYTES,
    HugeShareSampler,
    process_anonymous,
    share,
)


def test_small_heaps_give_no_share() -> None:
    assert share(MIN_ANONYMOUS_BYTES - 4096, 0) is None
    assert share(MIN_ANONYMOUS_BYTES, MIN_ANONYMOUS_BYTES // 2) == pytest.approx(0.5)


def test_the_threshold_holds_for_a_cgroup_reading_too() -> None:
    """cgroup v2 counts a group's anon and anon_thp: half a MiB, all of it
    'huge', is still too small to say anything."""
    sampler = HugeShareSampler(lambda: (512 * 1024, 512 * 1024), lambda: [])
    sampler.sample()
    assert sampler.best is None


def test_the_largest_share_is_kept() -> None:
    readings = iter([(64 << 20, 16 << 20), (64 << 20, 48 << 20), (64 << 20, 32 << 20)])
    sampler = HugeShareSampler(lambda: next(readings), lambda: [])
    for _ in range(3):
        sampler.sample()
    assert sampler.best == pytest.approx(0.75)


def test_without_a_group_count_the_processes_are_summed() -> None:
    sampler = HugeShareSampler(lambda: None, lambda: [os.getpid(), 999_999_999])
    sampler.sample()  # a process that is gone counts nothing
    reading = process_anonymous(os.getpid())
    assert reading is not None and reading[0] >= MIN_ANONYMOUS_BYTES  # this Python's heap
    assert sampler.best is not None and 0.0 <= sampler.best <= 1.0
