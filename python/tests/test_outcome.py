"""How a run ended and which CPU time it gives, judged from figures handed in
(measure/outcome.py): the endings test_run.py cannot provoke on every kernel,
such as a memory kill the kernel did not count."""

from __future__ import annotations

import signal
from types import SimpleNamespace

from hugeheap.measure.cgroups import CpuTimes
from hugeheap.measure.outcome import Ending, cross_checked, how_it_ended

EXITED_3 = 3 << 8  # wait statuses as wait4 gives them
KILLED = signal.SIGKILL
GIB = 2**30


def test_how_a_run_ended() -> None:
    assert how_it_ended(None, EXITED_3, 0, None, None) == Ending("ok", None, 3, None)
    assert how_it_ended(None, signal.SIGSEGV, 0, None, None) == \
        Ending("signal", None, None, signal.SIGSEGV)
    assert how_it_ended("cputime", KILLED, 0, None, None) == \
        Ending("timeout", "cputime", None, KILLED)
    assert how_it_ended("killed", KILLED, 0, None, None) == Ending("signal", "killed", None, KILLED)
    assert how_it_ended("failed", None, 0, None, None) == Ending("error", "failed", None, None)


def test_a_memory_kill_is_told_by_the_oom_count_or_the_peak() -> None:
    assert how_it_ended(None, KILLED, 1, GIB // 2, GIB) == Ending("memout", "memory", None, KILLED)
    # No OOM kill counted (cgroup v1, say), but the peak at the limit: memory.
    assert how_it_ended(None, KILLED, 0, GIB, GIB) == Ending("memout", "memory", None, KILLED)
    assert how_it_ended(None, KILLED, 0, GIB // 2, GIB) == Ending("signal", None, None, KILLED)
    assert how_it_ended(None, KILLED, 0, GIB, None) == Ending("signal", None, None, KILLED)


def test_rusage_is_believed_only_beyond_benchexecs_tolerance() -> None:
    warnings: list[str] = []
    group = CpuTimes(1.0, 0.8, 0.2)
    agreeing = SimpleNamespace(ru_utime=0.85, ru_stime=0.2)
    assert cross_checked(group, agreeing, warnings) is group and warnings == []
    left = SimpleNamespace(ru_utime=1.5, ru_stime=0.5)
    assert cross_checked(group, left, warnings) == CpuTimes(2.0, 1.5, 0.5)
    assert len(warnings) == 1 and "a process left the run's cgroup" in warnings[0]
