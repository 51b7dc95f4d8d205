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
harness bounds it more tightly. There the memory group has two peak counters
of the same bytes, memory's own (memory.max_usage_in_bytes) and memsw's, and
each sample (10 ms) reads one of them in turn and sets it back. A reading
covers every moment since that counter was last set back, and the other
counter's next reading covers the few microseconds between a read and its
setting back, however late the harness was: every moment of the run is in
some reading. So the run's memory peak is the largest value read, exactly,
and its peak with pool pages is at most the largest sum of one reading and
the pool's peak so far (its counter, never set back, stays the run's exact
pool peak). Beside the upper bound the harness keeps a lower bound: the most
memory and pool pages seen held together at one moment (both read at each
sample), or either peak alone where that is more.

Its limit is the run's memory limit on each counter, reservations too where
the kernel has them (hugetlb.2MB.rsvd.*): a heap that would pass it gets no
more pool pages at mmap (the library falls back to ordinary pages, which the
memory limit holds) instead of a SIGBUS at first touch."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .cgroup_mounts import cgroup_mounts
from .cgroups import CgroupV1, CgroupV2, Hierarchies, RunGroup, discover, join_procs
from .machine import MEMINFO, POOL_PAGE_KB, meminfo_kb

PREFIX = f"hugetlb.{POOL_PAGE_KB // 1024}MB."  # the 2 MiB pool's files
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
    # v1 without swap: memory's own peak counter and memsw's, read and set
    # back in turn, one at each sample (None: no interval bound; the two
    # run-long peaks added stand)
    interval_counters: tuple[Path, Path] | None = None
    turn: int = 0  # which of the two the next sample reads
    # the largest value either counter showed: the run's memory peak (None:
    # none read, so none set back either, and the group's peak stands)
    memory_read: int | None = None
    interval_bound: int | None = 0  # the largest reading + the pool's peak then (None: unknown)

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
        that a run without pool pages costs one read (and, where the peak is
        bounded per interval, one memory peak counter read and set back and
        the pool's peak read: close_interval). Whether it holds any."""
        self.close_interval()
        held = self._read("usage_in_bytes" if self.version == "v1" else "current")
        if not held:
            return False
        self.sampled = max(self.sampled, held)
        memory = memory_now() if memory_now is not None else None
        if memory is not None:
            self.together = max(self.together, memory + held)
        return True

    def close_interval(self, last: bool = False) -> None:
        """Reads one of the two memory peak counters and sets it back, then
        the pool's peak so far: their sum bounds every moment since that
        counter was last set back. Called at each sample; after the run has
        ended (last), reads both, up to its end. A counter that cannot be
        read leaves moments no reading covers: no interval bound then (the
        two peaks added), and neither counter is set back again."""
        if self.interval_counters is None or (self.interval_bound is None and not last):
            return
        if last:
            readings = [_read_int(counter) for counter in self.interval_counters]
        else:
            readings = [_read_and_set_back(self.interval_counters[self.turn])]
            self.turn = 1 - self.turn
        pool = self._read("max_usage_in_bytes")  # read after: it covers the readings' moments
        known = [reading for reading in readings if reading is not None]
        if known:
            self.memory_read = max([self.memory_read or 0, *known])
        if len(known) < len(readings) or pool is None or self.interval_bound is None:
            self.interval_bound = None
        else:
            self.interval_bound = max(self.interval_bound, max(known) + pool)

    def memory_peak(self, group_peak: int | None) -> int | None:
        """The run's memory peak (pool pages aside): the group's, or where
        its counters were set back in turn, the largest value they showed
        (close_interval(last=True) first)."""
        if self.memory_read is None:
            return group_peak
        return max(group_peak or 0, self.memory_read)

    def peak(self) -> int | None:
        """Bytes of pool pages the run held at its peak (v2: sampled)."""
        if self.version == "v1":
            return self._read("max_usage_in_bytes")
        self.sample()
        return self.sampled

    def peak_upper_bound(self, memory_peak: int | None, pool_peak: int | None) -> int | None:
        """The most the run's peak of memory and pool pages together can be:
        the two run-long peaks added, or where every moment was in a reading
        of memory's two counters, the largest sum of one reading and the
        pool's peak then (close_interval(last=True) first); the memory peak
        alone where the pool's is not known."""
        if memory_peak is None or pool_peak is None:
            return memory_peak
        added = memory_peak + pool_peak
        if self.interval_counters is None or self.interval_bound is None:
            return added
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


def _read_and_set_back(path: Path) -> int | None:
    """A v1 peak counter's value (None where it cannot be read), then set
    back to the usage now (writing 0) on the same open file. Where it cannot
    be set back it goes on counting from before: later readings still hold."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return None
    try:
        value = int(os.pread(fd, 64, 0))
        with contextlib.suppress(OSError):
            os.write(fd, b"0")
        return value
    except (OSError, ValueError):
        return None
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


def _interval_counters(memory_group: Path | None) -> tuple[Path, Path] | None:
    """The two peak counters of a v1 memory group, memory's own and memsw's,
    where they count the same bytes (no swap); None elsewhere."""
    if memory_group is None:
        return None
    counters = (memory_group / "memory.max_usage_in_bytes",
                memory_group / "memory.memsw.max_usage_in_bytes")
    if all(counter.exists() for counter in counters) and _no_swap():
        return counters
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
            counters = _interval_counters(group.paths.get("memory"))
            return HugetlbCharge(group.paths["hugetlb"], "v1", own=False,
                                 interval_counters=counters), None
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
