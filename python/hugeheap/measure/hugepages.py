"""How much of a run's anonymous memory huge pages backed: the largest share
seen while it ran, sampled from the run's cgroup where the kernel counts huge
pages per group (cgroup v2's memory.stat), else summed over its processes'
/proc/PID/smaps_rollup."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

# Below this much anonymous memory a share says nothing about huge pages (one
# 2 MiB page is all or nothing of it): such samples are not taken. The one
# threshold of the harness, for every way of sampling.
MIN_ANONYMOUS_BYTES = 2**20

_ROLLUP_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$", re.M)


def share(anonymous_bytes: int, huge_bytes: int) -> float | None:
    """Huge-page share of anonymous memory, None below MIN_ANONYMOUS_BYTES."""
    if anonymous_bytes < MIN_ANONYMOUS_BYTES:
        return None
    return huge_bytes / anonymous_bytes


def rollup_bytes(pid: int, proc: Path = Path("/proc")) -> dict[str, int] | None:
    """The kB fields of a process's smaps_rollup (Rss, Anonymous,
    AnonHugePages, Referenced, ...), in bytes; None once it is gone."""
    try:
        text = (proc / str(pid) / "smaps_rollup").read_text()
    except OSError:
        return None
    return {name: int(kb) * 1024 for name, kb in _ROLLUP_FIELD.findall(text)}


def process_anonymous(pid: int, proc: Path = Path("/proc")) -> tuple[int, int] | None:
    """(anonymous, of it in huge pages) bytes of a process, None once it is gone."""
    values = rollup_bytes(pid, proc)
    if values is None:
        return None
    return values.get("Anonymous", 0), values.get("AnonHugePages", 0)


def processes_anonymous(pids: list[int]) -> tuple[int, int]:
    """(anonymous, huge) bytes summed over the processes that are still there."""
    anonymous = huge = 0
    for pid in pids:
        reading = process_anonymous(pid)
        if reading is not None:
            anonymous += reading[0]
            huge += reading[1]
    return anonymous, huge


class HugeShareSampler:
    """Keeps the largest share seen. group_reading: the group's (anonymous,
    huge) bytes where the kernel counts them per group, else None; pids: the
    processes to sum over otherwise."""

    def __init__(self, group_reading: Callable[[], tuple[int, int] | None],
                 pids: Callable[[], list[int]]) -> None:
        self.group_reading, self.pids = group_reading, pids
        self.best: float | None = None

    def sample(self) -> None:
        reading = self.group_reading()
        if reading is None:
            reading = processes_anonymous(self.pids())
        value = share(*reading)
        if value is not None and (self.best is None or value > self.best):
            self.best = value
