"""The pages of the hugetlb pool a run holds, counted by the kernel's hugetlb
controller. The memory controller charges them to no group (unless cgroup v2
is mounted with memory_hugetlb_accounting, Linux 6.6+), so without this a
run that maps its heap from the pool (HUGEHEAP_THP=hugetlb) would show a
memory peak without its heap and escape its memory limit.

Where the controller is:
- cgroup v1 with hugetlb mounted: the run's group in that hierarchy (made
  with its other v1 groups, cgroups.CgroupV1); the kernel keeps its peak,
  hugetlb.2MB.max_usage_in_bytes.
- cgroup v2: the run's own group (cgroups.CgroupV2 enables the controller
  where its parent offers it). v2 keeps no peak of it (hugetlb.2MB.current,
  .max, .events, .events.local and .numa_stat only; the kernel's cgroup-v2
  docs), so the harness samples .current while the run runs, as often as
  the huge-page share: the peak is the largest sample, and pages held
  between two samples only are missed.
- a hybrid machine (v1 for memory, the controller only in the unified
  hierarchy beside it, as here): a v2 group of its own for the run, named
  as its v1 groups (leftover_groups.end_leftover_groups finds it), sampled as on v2.

The run's peak is then at most its memory peak plus its hugetlb peak. The
two peaks may fall at different moments (a tool whose own table doubles in
ordinary memory before its heap's pool pages peak), so the sum may overstate
the true peak by the smaller of the two. On cgroup v1 without swap the
harness bounds it more tightly: memory's own peak counter
(memory.max_usage_in_bytes) is not the one the memory peak reads (memsw's,
the same bytes where there is no swap), so at every sample (10 ms) it reads
it and sets it back; each interval between two samples then has its own
memory peak, and the run's peak is at most the largest sum of one
interval's memory peak and the pool's peak so far (its counter, never set
back, stays the run's exact pool peak). Memory taken and given back
between the read and the setting back would be missed: the two are timed,
and where they came further apart than GAP_NS (the harness descheduled:
about one pair in 3,000 here) while the run held pool pages, that moment
counts with memory's run-long peak so far. Beside the upper bound the
harness keeps a lower bound: the most memory and pool pages seen held
together at one moment (both read at each sample), or either peak alone
where that is more.

Its limit is the run's memory limit on each counter, reservations too where
the kernel has them (hugetlb.2MB.rsvd.*): a heap that would pass it gets no
more pool pages at mmap (the library falls back to ordinary pages, which the
memory limit holds) instead of a SIGBUS at first touch."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cgroup_mounts import cgroup_mounts
from .cgroups import CgroupV1, CgroupV2, Hierarchies, RunGroup, discover, join_procs
from .machine import MEMINFO, POOL_PAGE_KB, meminfo_kb

PREFIX = f"hugetlb.{POOL_PAGE_KB // 1024}MB."  # the 2 MiB pool's files
# The most time between reading memory's own peak counter and setting it
# back for the interval's peak to stand: within it a program can fault in
# and give back a few dozen 4 KiB pages at most.
GAP_NS = 50_000
NOT_COUNTED = ("the hugetlb cgroup controller is not there: the memory peak and limit leave "
               "out pages of the hugetlb pool")


@dataclass
class HugetlbCharge:
    """The run's counter of pool pages: in path, of cgroup version."""
    path: Path
    version: str  # "v1": the kernel keeps the peak; "v2": sampled
    own: bool  # made here, beside a v1 run group: joined and removed here
    sampled: int = 0  # the most pool pages seen held (v2's peak: it keeps none)
    together: int = 0  # the most memory and pool pages seen held at one moment
    # v1 without swap: memory's own peak counter, read and set back at each
    # sample (None: no interval bound; the two run-long peaks added stand)
    interval_memory: Path | None = None
    interval_bound: int = 0  # the largest interval's memory peak + the pool's peak then

    def procs_file(self) -> str | None:
        """Where the tool's process writes its pid, for a group made here."""
        return str(self.path / "cgroup.procs") if self.own else None

    def set_limit(self, memory: int) -> None:
        names = ("limit_in_bytes", "rsvd.limit_in_bytes") if self.version == "v1" else \
            ("max", "rsvd.max")
        for name in names:
            target = self.path / (PREFIX + name)
            if target.exists():
                target.write_text(str(memory))

    def sample(self, memory_now: Callable[[], int | None] | None = None) -> bool:
        """Reads the pool pages held now and, where the run holds some, the
        run group's memory right after (memory_now: RunGroup.memory_now), so
        that a run without pool pages costs one read (two counters more, read
        and set back, where intervals are bounded). Whether it holds any."""
        self.close_interval()
        held = self._read("usage_in_bytes" if self.version == "v1" else "current")
        if not held:
            return False
        self.sampled = max(self.sampled, held)
        memory = memory_now() if memory_now is not None else None
        if memory is not None:
            self.together = max(self.together, memory + held)
        return True

    def close_interval(self) -> None:
        """Ends the interval since the last sample (since the run began, at
        the first): its memory peak and the pool's peak so far added bound
        it. Called at each sample and once more after the run has ended; a
        counter that cannot be read or set back in time leaves the run
        without interval bounds."""
        if self.interval_memory is None:
            return
        memory, in_time = _read_and_set_back(self.interval_memory)
        pool = self._read("max_usage_in_bytes")  # read after: it covers the interval
        if memory is not None and pool and not in_time:
            # The gap before the setting back is seen by no interval: memory's
            # peak so far (memsw's, never set back) stands for it.
            memory = _read_int(self.interval_memory.with_name("memory.memsw.max_usage_in_bytes"))
        if memory is None or pool is None:
            self.interval_memory, self.interval_bound = None, 0
            return
        self.interval_bound = max(self.interval_bound, memory + pool)

    def peak(self) -> int | None:
        """Bytes of pool pages the run held at its peak (v2: sampled)."""
        if self.version == "v1":
            return self._read("max_usage_in_bytes")
        self.sample()
        return self.sampled

    def peak_upper_bound(self, memory_peak: int | None, pool_peak: int | None) -> int | None:
        """The most the run's peak of memory and pool pages together can be:
        the two run-long peaks added, or the largest interval's where every
        interval was bounded (close_interval after the run's end first); the
        memory peak alone where the pool's is not known."""
        if memory_peak is None or pool_peak is None:
            return memory_peak
        added = memory_peak + pool_peak
        if self.interval_memory is None:
            return added
        # Never under what is known held (an interval may miss the few
        # pages taken and given back between a read and its setting back).
        return max(min(added, self.interval_bound), self.together, memory_peak, pool_peak)

    def peak_lower_bound(self, memory_peak: int | None, pool_peak: int | None) -> int | None:
        """The least the run's true peak of memory and pool pages together can
        be: the most seen together at one moment, or either peak alone where
        that is more; None where the memory peak is not known, or the run held
        no pool pages (its memory peak is then exact)."""
        if memory_peak is None or not pool_peak:
            return None
        return max(self.together, memory_peak, pool_peak)

    def remove(self) -> None:
        if self.own:
            CgroupV2.existing(self.path).remove()

    def _read(self, name: str) -> int | None:
        return _read_int(self.path / (PREFIX + name))


def _read_and_set_back(path: Path) -> tuple[int | None, bool]:
    """A v1 peak counter's value (None where it cannot be read or set
    back), then set back to the usage now (writing 0), on one open file so
    the two follow each other closely; and whether they came within GAP_NS."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None, False
    try:
        before = time.monotonic_ns()
        value = int(os.pread(fd, 64, 0))
        os.write(fd, b"0")
        return value, time.monotonic_ns() - before <= GAP_NS
    except (OSError, ValueError):
        return None, False
    finally:
        os.close(fd)


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def _no_swap() -> bool:
    """Whether the machine has no swap: memory's counter and memsw's then
    count the same bytes (not where /proc/meminfo does not say)."""
    return meminfo_kb(MEMINFO).get("SwapTotal") == 0


def _interval_memory(memory_group: Path | None) -> Path | None:
    """memory.max_usage_in_bytes of a v1 memory group, where setting it back
    leaves the run's memory peak alone (that is memsw's: RunGroup.memory_peak)
    and counts the same bytes (no swap); None elsewhere."""
    if memory_group is None:
        return None
    own = memory_group / "memory.max_usage_in_bytes"
    if (memory_group / "memory.memsw.max_usage_in_bytes").exists() and own.exists() \
            and _no_swap():
        return own
    return None


def in_memory_controller(mountinfo: str | None = None) -> bool:
    """Whether cgroup v2 is mounted with memory_hugetlb_accounting: the memory
    controller then charges pool pages itself (memory.peak holds them)."""
    return any(mount.unified and "memory_hugetlb_accounting" in mount.options
               for mount in cgroup_mounts(mountinfo))


def attach(group: RunGroup, hierarchies: Hierarchies | None = None,
           mountinfo: str | None = None) -> tuple[HugetlbCharge | None, str | None]:
    """The run group's counter of pool pages (making a v2 group beside a v1
    one where only the unified hierarchy has the controller), or None with
    why the memory peak leaves them out (None too where memory.peak already
    holds them: no reason then)."""
    if isinstance(group, CgroupV2):
        if in_memory_controller(mountinfo):
            return None, None
        if (group.path / (PREFIX + "current")).exists():
            return HugetlbCharge(group.path, "v2", own=False), None
        return None, NOT_COUNTED
    if isinstance(group, CgroupV1):
        if "hugetlb" in group.paths:
            return HugetlbCharge(group.paths["hugetlb"], "v1", own=False,
                                 interval_memory=_interval_memory(group.paths.get("memory"))), None
        unified = (hierarchies or discover()).v2
        if unified is not None:
            return _beside_v1(unified, group.paths["freezer"].name)
    return None, NOT_COUNTED


def _beside_v1(unified: Path, name: str) -> tuple[HugetlbCharge | None, str | None]:
    """A group of the unified hierarchy for the hugetlb controller alone."""
    try:
        if "hugetlb" not in (unified / "cgroup.controllers").read_text().split():
            return None, NOT_COUNTED
        enabled = (unified / "cgroup.subtree_control").read_text().split()
        if "hugetlb" not in enabled:
            (unified / "cgroup.subtree_control").write_text("+hugetlb")
        path = unified / name
        path.mkdir()
    except OSError as error:
        return None, (f"no hugetlb group could be made in {unified} ({error.strerror}): the "
                      "memory peak and limit leave out pages of the hugetlb pool")
    return HugetlbCharge(path, "v2", own=True), None


def join(charge: HugetlbCharge | None) -> None:
    """Moves the calling process into a group made here (cgroups.join_procs):
    for the child between fork and exec, after RunGroup.join."""
    procs = charge.procs_file() if charge is not None else None
    if procs is not None:
        join_procs([procs])


def fallback_warnings(free_at_start: int, hugetlb_peak: int | None) -> list[str]:
    """What a run with HUGEHEAP_THP=hugetlb says of the pool: that it found
    it empty, or held none of it. The library counts its fallbacks
    (hugetlb_fallbacks of HUGEHEAP_STATS), but turning its statistics on
    changes what it does while the tool runs, so the harness judges by the
    pool pages the run held instead."""
    if free_at_start == 0:
        return ["the hugetlb pool had no free page when the run started: the library fell "
                "back to transparent huge pages for its heap; `sudo hugeheap pool reserve "
                "SIZE` adds pages"]
    if hugetlb_peak == 0:
        return [f"the run held no page of the hugetlb pool ({free_at_start} were free at its "
                "start): the heap stayed under the library's huge threshold (small heaps "
                "stay in 4 KiB pages), or the library fell back to transparent huge pages"]
    return []
