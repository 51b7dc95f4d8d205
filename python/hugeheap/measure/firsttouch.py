"""What the first touch of memory costs on this machine, per 2 MiB: a fresh
huge page, a recycled huge page, and the same 2 MiB in 4 KiB pages.

On a virtual machine whose host backs guest memory lazily, the first touch of
guest memory the host has not backed yet costs a host fault on top of the
guest's: a fresh 2 MiB huge page costs milliseconds, while a recycled one
(memory the guest freed recently, still backed) costs only its zeroing. On
bare metal the two are alike, and a huge page costs less per byte than 512
small ones. Which of these the machine is decides what a THP measurement on it
can show: the report quotes these figures.

Which memory is fresh cannot be chosen: the kernel hands out the pages it
freed most recently first. So the sample keeps taking memory, 2 MiB at a time,
until it has met enough fresh pages (each costs several times a recycled one)
or has taken SAMPLE_LIMIT bytes; pages are told apart by their cost, measured
one by one. A machine where no page of the sample costs more than a recycled
one backs memory eagerly (or is bare metal), and its fresh cost is the
sample's median.

About 0.1 to 0.5 s and, for that moment, up to SAMPLE_LIMIT bytes: run once
per campaign session.

Pages of the kernel's hugetlb pool (`hugeheap pool reserve`) are measured
apart, with the same timing: the pool keeps its pages when a process frees
them, so once written they stay backed by the host, and a new process pays
only the kernel's zeroing (pool_first_touch_ms)."""

from __future__ import annotations

import ctypes
import mmap
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from typing import Any, Literal

from . import machine

HUGE = 2 * 2**20
SMALL = 4096
CHUNK = 16 * HUGE  # memory taken per step of the sample
SAMPLE_LIMIT = 1 * 2**30
FRESH_WANTED = 16  # fresh pages that settle the fresh cost
FRESH_FACTOR = 4.0  # a page this many times dearer than a recycled one was fresh
POOL_SAMPLE = 64  # pool pages a new process touches to measure their cost
# Python's mmap (3.11 to 3.13) does not name MAP_HUGETLB; Linux gives it this
# value on x86-64 and AArch64 (other architectures differ: None there).
MAP_HUGETLB: int | None = getattr(
    mmap, "MAP_HUGETLB", 0x40000 if platform.machine() in ("x86_64", "aarch64") else None)


@dataclass
class FirstTouch:
    """Milliseconds per 2 MiB of first touch; None where it could not be measured."""
    fresh_huge_ms: float | None
    recycled_huge_ms: float | None
    small_pages_ms: float | None  # 512 pages of 4 KiB, on recycled memory
    fresh_pages: int  # how many of the sampled huge pages were fresh
    sampled_pages: int
    huge_pages_backed: bool  # whether the kernel gave huge pages where advised
    note: str

    @property
    def lazy_host(self) -> bool:
        """Fresh huge pages cost more per byte than small pages: a host that
        backs memory lazily (THP results understate bare metal)."""
        return (self.fresh_huge_ms is not None and self.small_pages_ms is not None
                and self.fresh_huge_ms > self.small_pages_ms)

    def as_record(self) -> dict[str, Any]:
        """The figures with the conclusion drawn from them, as stored."""
        return {**asdict(self), "lazy_host": self.lazy_host}


class _Region:
    """An anonymous mapping with a 2 MiB-aligned part of `pages` huge pages:
    transparent huge pages (`huge`), 4 KiB pages (`small`), or pages of the
    hugetlb pool (`pool`: OSError where the pool has not that many free)."""

    def __init__(self, pages: int, kind: Literal["huge", "small", "pool"]) -> None:
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        if kind == "pool":
            if MAP_HUGETLB is None:
                raise OSError(f"MAP_HUGETLB's value on {platform.machine()} is not known here")
            # The kernel aligns hugetlb mappings to their page size itself.
            self.map = mmap.mmap(-1, pages * HUGE, flags=flags | MAP_HUGETLB)
        else:
            self.map = mmap.mmap(-1, (pages + 1) * HUGE, flags=flags)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self.map))
        self.start = (-address) % HUGE
        self.address = address + self.start
        self.pages = pages
        if kind != "pool":
            advice = mmap.MADV_HUGEPAGE if kind == "huge" else mmap.MADV_NOHUGEPAGE
            self.map.madvise(advice, self.start, pages * HUGE)

    def touch(self, page: int, step: int) -> float:
        """Milliseconds to write one byte in every `step` bytes of a 2 MiB page."""
        buffer = self.map
        base = self.start + page * HUGE
        began = time.perf_counter_ns()
        for offset in range(base, base + HUGE, step):
            buffer[offset] = 1
        return (time.perf_counter_ns() - began) / 1e6

    def huge_bytes(self) -> int:
        """AnonHugePages of this mapping, from /proc/self/smaps."""
        return machine.anon_huge_bytes(self.address - self.start)

    def close(self) -> None:
        self.map.close()


def _recycled_region(pages: int, huge: bool) -> _Region:
    """A region over memory this process has just touched and freed: the
    kernel hands those pages out first, and the host has backed them."""
    kind: Literal["huge", "small"] = "huge" if huge else "small"
    warm = _Region(pages, kind)
    for page in range(pages):
        warm.touch(page, HUGE if huge else SMALL)
    warm.close()
    return _Region(pages, kind)


def _recycled_huge_ms() -> tuple[float, bool]:
    """Median cost of huge pages the process just freed, and whether they were huge."""
    pages = CHUNK // HUGE
    again = _recycled_region(pages, huge=True)
    try:
        times = [again.touch(page, HUGE) for page in range(pages)]
        backed = again.huge_bytes() >= HUGE
    finally:
        again.close()
    return statistics.median(times), backed


def _small_pages_ms() -> float:
    """Cost of 512 first touches of 4 KiB pages (recycled memory), less the
    cost of the same writes once the pages are there."""
    pages = 8
    region = _recycled_region(pages, huge=False)
    try:
        first = [region.touch(page, SMALL) for page in range(pages)]
        second = [region.touch(page, SMALL) for page in range(pages)]
    finally:
        region.close()
    return max(statistics.median(first) - statistics.median(second), 0.0)


def measure() -> FirstTouch:
    """The first-touch costs of this machine (see the module's comment)."""
    try:
        recycled, backed = _recycled_huge_ms()
        fresh: list[float] = []
        sampled: list[float] = []
        held: list[_Region] = []
        try:
            while len(fresh) < FRESH_WANTED and len(held) * CHUNK < SAMPLE_LIMIT:
                region = _Region(CHUNK // HUGE, "huge")
                held.append(region)
                for page in range(region.pages):
                    cost = region.touch(page, HUGE)
                    sampled.append(cost)
                    if cost > FRESH_FACTOR * recycled:
                        fresh.append(cost)
        finally:
            for region in held:
                region.close()
        small = _small_pages_ms()
    except (OSError, ValueError, AttributeError) as error:  # no MADV_HUGEPAGE here, say
        return FirstTouch(None, None, None, 0, 0, False, f"not measured: {error}")
    if not backed:
        note = ("the kernel gave no huge pages where advised (THP off?): huge-page figures "
                "are those of small pages")
    elif len(fresh) >= FRESH_WANTED // 4:
        note = (f"{len(fresh)} of {len(sampled)} sampled huge pages were fresh (over "
                f"{FRESH_FACTOR:g}x a recycled one's cost)")
    else:
        note = (f"no fresh page in {len(sampled)} sampled: memory is backed eagerly "
                "(bare metal, or a host that does not back lazily); fresh is the sample's "
                "median")
    fresh_ms = statistics.median(fresh if len(fresh) >= FRESH_WANTED // 4 else sampled)
    return FirstTouch(round(fresh_ms, 3), round(recycled, 3), round(small, 3), len(fresh),
                      len(sampled), backed, note)


def pool_touch_times(pages: int) -> list[float]:
    """Milliseconds of the first touch of each of `pages` pages of the
    hugetlb pool, in this process (one write faults a whole page in, and the
    kernel zeroes it); OSError where the pool has not that many free."""
    region = _Region(pages, "pool")
    try:
        return [region.touch(page, HUGE) for page in range(pages)]
    finally:
        region.close()


def pool_first_touch_ms(pages: int) -> float:
    """Median milliseconds per 2 MiB of the first touch of pool pages (up to
    POOL_SAMPLE of them) by a process that never touched them: a fresh one,
    started for it, as a tool's would be. OSError as pool_touch_times."""
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as fresh:
        times = fresh.submit(pool_touch_times, min(pages, POOL_SAMPLE)).result()
    return statistics.median(times)


def what_it_means(facts: dict[str, object]) -> str:
    """What a THP measurement on a machine with these first-touch costs (a
    FirstTouch as a dict, as machine records keep it) can and cannot show."""
    fresh, recycled, small = (facts.get(k) for k in ("fresh_huge_ms", "recycled_huge_ms",
                                                      "small_pages_ms"))
    if not all(isinstance(v, (int, float)) for v in (fresh, recycled, small)):
        return f"First-touch cost of memory not measured ({facts.get('note', 'no record')})."
    assert isinstance(fresh, (int, float)) and isinstance(small, (int, float))
    figures = (f"first touch per 2 MiB: a fresh huge page {fresh:.2f} ms, a recycled one "
               f"{recycled:.2f} ms, 512 small pages {small:.2f} ms")
    if not facts.get("huge_pages_backed"):
        return (f"This machine gave no huge pages where advised ({figures}): THP modes cannot "
                "differ from the others here.")
    if fresh > small:
        return (f"On this machine fresh huge pages cost more per byte than small pages "
                f"({figures}): its host backs guest memory lazily. THP results from it "
                "understate what bare metal gives. User time carries the TLB effect and can be "
                "compared; system time carries the host's cost, so total and wall-time gains "
                "of THP modes here are lower bounds, and a THP mode slower in system time "
                "says nothing about bare metal.")
    return (f"On this machine huge pages cost no more per byte than small pages ({figures}): "
            "user, system and wall time of THP modes can be compared as on bare metal.")
