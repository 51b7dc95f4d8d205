"""What a finished run's figures mean: how it ended (its status, termination
reason, exit code and signal, judged from the wait status, the reason the
harness ended it for, the group's OOM kills and its memory peak), and which
CPU time to believe (the cgroup's, cross-checked against rusage as BenchExec
does)."""

from __future__ import annotations

import os
import signal
from typing import Any, NamedTuple

from .cgroups import CpuTimes

# BenchExec's cross-check of the two CPU times: rusage (the main process and
# what it waited for, counted from the fork) exceeding the cgroup's (every
# process, counted from joining) by more than this means a process left the
# group while it ran; BenchExec then warns and reports the rusage figure.
RUSAGE_CHECK_FROM_S = 0.5
RUSAGE_TOLERANCE = 0.95  # rusage * this > cgroup: beyond the tolerance
# A tool killed by SIGKILL with its peak this near the memory limit was
# killed for memory, also where the kernel counts no OOM kill for the group.
MEMORY_NEAR_LIMIT = 0.95


class Ending(NamedTuple):
    status: str  # ok, timeout, memout, signal, error
    # cputime, walltime, memory, killed, failed; None when the tool ended by itself
    reason: str | None
    exit_code: int | None
    signal: int | None


def how_it_ended(reason: str | None, wait_status: int | None, oom_kills: int,
                 peak: int | None, memory_limit: int | None) -> Ending:
    """The run's ending. reason: why the harness ended it (None: it ended by
    itself); wait_status: None where the tool never started."""
    exit_code = sig = None
    if wait_status is not None:
        exit_code = os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None
        sig = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None
    if reason is None and oom_kills > 0:
        reason = "memory"
    status = {"cputime": "timeout", "walltime": "timeout", "memory": "memout",
              "killed": "signal", "failed": "error"}.get(
        reason or "", "signal" if sig is not None else "ok")
    if reason is None and sig == signal.SIGKILL and memory_limit and \
            peak is not None and peak >= MEMORY_NEAR_LIMIT * memory_limit:
        status, reason = "memout", "memory"
    return Ending(status, reason, exit_code, sig)


def cross_checked(group_cpu: CpuTimes, usage: Any, warnings: list[str]) -> CpuTimes:
    """The group's CPU time, or rusage's where it exceeds the group's beyond
    BenchExec's tolerance (a process left the group), with a warning."""
    waited = usage.ru_utime + usage.ru_stime
    if waited <= RUSAGE_CHECK_FROM_S or waited * RUSAGE_TOLERANCE <= group_cpu.total:
        return group_cpu
    warnings.append(f"CPU time by rusage ({waited:.3f} s) exceeds the cgroup's "
                    f"({group_cpu.total:.3f} s) by more than BenchExec tolerates (5%, above "
                    f"{RUSAGE_CHECK_FROM_S} s): a process left the run's cgroup while it ran; "
                    "the CPU time given is rusage's")
    return CpuTimes(waited, usage.ru_utime, usage.ru_stime)
