"""Watching the tool while it runs, and ending it: its exit seen without
reaping it (a pidfd, or waitid polled where the kernel has none), the time
limits checked meanwhile and the run's counters sampled (the huge-page
share, the pool pages of cgroup v2), every process of the run killed at its
end, and the tool tied to the harness's life."""

from __future__ import annotations

import ctypes
import errno
import os
import select
import signal
import time
from collections.abc import Callable

from . import machine
from .cgroups import RunGroup
from .limits import Limits

CPU_CHECK_INTERVAL_S = 0.1  # at most, per core, between checks of the CPU-time limit near it
SAMPLE_INTERVAL_S = 0.1  # between readings of the counters the kernel keeps no peak of
# Between readings of memory and pool pages together while a run holds pool
# pages: the least its peak can be is the most seen at one reading, and a
# heap grows a few MiB in this time (two small files read: cheap).
TOGETHER_INTERVAL_S = 0.01


class ExitWatch:
    """Waits for a process to exit without reaping it: through a pidfd
    (Linux 5.3+), or by polling waitid where the kernel has no pidfd_open."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
        except OSError as error:
            if error.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
                raise
        if self.pidfd is not None:
            self.poller = select.poll()
            self.poller.register(self.pidfd, select.POLLIN)

    def exited_within(self, seconds: float) -> bool:
        if self.pidfd is not None:
            return bool(self.poller.poll(seconds * 1000))
        deadline = time.monotonic() + seconds
        while True:
            if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.005))

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def supervise(watch: ExitWatch, group: RunGroup | None, limits: Limits, start: float,
              sample: Callable[[], float]) -> tuple[str | None, float]:
    """Waits until the main process ends (None) or a time limit is reached
    (the termination reason); also returns how late the harness woke at worst.
    sample reads the counters and says in how many seconds to call it again.
    The process is not reaped here."""
    cores = len(limits.cores) if limits.cores else (os.cpu_count() or 1)
    next_sample = start + 0.01
    lateness = 0.0
    while True:
        now = time.monotonic()
        wait = 0.5
        if limits.wall_s is not None:
            wait = min(wait, max(0.0, start + limits.wall_s - now))
        if limits.cpu_s is not None:
            used = (group.cpu().total if group is not None
                    else machine.process_cpu_seconds(watch.pid))
            if used >= limits.cpu_s:
                return "cputime", lateness
            # Check more often as the limit nears: the run overshoots by at
            # most CPU_CHECK_INTERVAL_S per core it keeps busy.
            wait = min(wait, max(0.005, min(CPU_CHECK_INTERVAL_S, (limits.cpu_s - used) / cores)))
        wait = min(wait, max(0.0, next_sample - now))
        if watch.exited_within(wait):
            return None, lateness
        woke = time.monotonic()
        lateness = max(lateness, woke - (now + wait))
        if limits.wall_s is not None and woke - start >= limits.wall_s:
            return "walltime", lateness
        if woke >= next_sample:
            next_sample = woke + sample()


def end_everything(pid: int, group: RunGroup | None) -> None:
    """Kills every process of the run: the group's, or without a group those
    of the tool's session."""
    if group is not None:
        group.kill_all()
        return
    try:
        os.killpg(pid, signal.SIGKILL)  # the tool's session: all we can reach without cgroups
    except (ProcessLookupError, PermissionError):
        pass


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child between fork and exec may not


def die_with_parent() -> None:
    """SIGKILL for the calling process when its parent ends (Linux prctl)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
