"""What a run may use (CPU time, wall time, memory, cores, processes), and
the check of it that runner.run makes before anything starts."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import HarnessError

DEFAULT_PIDS_LIMIT = 4096  # contains fork storms


@dataclass
class Limits:
    cpu_s: float | None = None
    wall_s: float | None = None
    memory_bytes: int | None = None
    cores: list[int] | None = None
    pids: int | None = DEFAULT_PIDS_LIMIT


def check_limits(limits: Limits) -> None:
    """HarnessError, naming the limit, for one that no run could keep."""
    for name, value in (("cpu time", limits.cpu_s), ("wall time", limits.wall_s),
                        ("memory", limits.memory_bytes), ("pids", limits.pids)):
        if value is not None and value <= 0:
            raise HarnessError(f"the {name} limit must be more than zero (it is {value})")
    if limits.cores is not None:
        usable = os.sched_getaffinity(0)
        outside = sorted(set(limits.cores) - usable)
        if not limits.cores or outside:
            raise HarnessError(f"--cores: {outside or 'no cores'} not among the cores this "
                               f"process may use ({sorted(usable)})")
