"""The kernel's pool of 2 MiB huge pages (vm.nr_hugepages), for tools run
with HUGEHEAP_THP=hugetlb: `hugeheap pool reserve`, `status` and `release`,
and the pool's line in `hugeheap doctor`.

Why a pool: on a virtual machine whose host backs guest memory lazily and
takes freed 2 MiB blocks back, a fresh transparent huge page costs
milliseconds at its first touch (firsttouch.py). The kernel never hands pool
pages back, so once each has been written the host keeps backing it, and a
new process pays only the kernel's zeroing of the page.

What hugeheap changed is recorded in STATE_FILE, on /run so that it lasts
until the machine restarts, as the pool itself does: the pool's size before
hugeheap's first reservation, the pages hugeheap added (a machine may have a
pool for others: hugeheap adds to it and takes back only its own), and what
a pool page cost a new process at its first touch. The record is written as
soon as the kernel has granted the pages, so that `release` can give them
back whatever happens afterwards."""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..files import write_whole
from . import firsttouch, hugetlb_hierarchy, machine

STATE_FILE = Path("/run/hugeheap/pool.json")
PAGE_BYTES = machine.POOL_PAGE_KB * 1024
ADVISED_SIZE = "2GiB"  # doctor's suggestion; what suits depends on the heaps of the tools run

# Asks the kernel for a pool of this many pages in this sysfs folder; says how
# many it holds then (set_pool_pages; tests stand in a kernel that grants fewer).
AskKernel = Callable[[int, Path], int]


@dataclass
class Record:
    """What STATE_FILE holds."""
    before_pages: int  # nr_hugepages before hugeheap's first reservation
    added_pages: int  # what hugeheap's reservations added: release takes this back
    reserved_at: str  # the last reservation, ISO 8601
    write_ms: float | None = None  # median per page of writing the free pages first
    first_touch_ms: float | None = None  # median per page, a new process's first touch
    measured_pages: int = 0  # how many pages first_touch_ms is the median of
    # The cgroup v1 hierarchy reserve mounted for the hugetlb controller
    # (hugetlb_hierarchy.move_to_v1), and whether the unified root had offered it.
    hugetlb_hierarchy: str | None = None
    unified_offered_hugetlb: bool = False


@dataclass
class Reserved:
    """What `pool reserve` did."""
    added_pages: int
    written_pages: int  # the pool's free pages, written once
    record: Record
    status: dict[str, Any]
    problem: str | None = None  # why runs' pool pages stay sampled, where moving hugetlb failed


@dataclass
class Released:
    """What `pool release` did; record None where hugeheap had reserved nothing."""
    record: Record | None
    pages_before: int  # the pool when release began
    pages_after: int  # the pool when release ended, pages that stayed included
    stayed: int  # in use by running processes: surplus, freed once they let go
    status: dict[str, Any]
    problem: str | None = None  # what could not be undone of reserve's hugetlb hierarchy


def set_pool_pages(pages: int, pool_dir: Path) -> int:
    """Asks the kernel for a pool of `pages` pages (the folder's
    nr_hugepages) and returns how many it holds then: fewer where its free
    memory has not that many whole 2 MiB pieces; more than asked on a
    shrink where pages are in use (they stay as surplus until freed)."""
    count_file = pool_dir / "nr_hugepages"
    try:
        count_file.write_text(f"{pages}\n")
    except OSError as error:
        raise HarnessError(f"{count_file}: cannot write it ({error.strerror})") from None
    held = machine.pool_file_pages(count_file)
    if held is None:
        raise HarnessError(f"{count_file}: holds no page count after writing it")
    return held


def read_record(state_file: Path = STATE_FILE) -> Record | None:
    """The record of what hugeheap reserved; None where there is none."""
    try:
        data = json.loads(state_file.read_text())
        record = Record(**data)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as error:
        raise HarnessError(f"{state_file}: not hugeheap's record of a pool ({error}); remove "
                           "it once no pool reserved by hugeheap is left") from None
    if not all(isinstance(getattr(record, name), int)
               for name in ("before_pages", "added_pages", "measured_pages")):
        raise HarnessError(f"{state_file}: not hugeheap's record of a pool (a page count that "
                           "is no whole number); remove it once no pool reserved by hugeheap "
                           "is left")
    return record


def _write_record(state_file: Path, record: Record) -> None:
    write_whole(state_file, json.dumps(asdict(record), indent=1) + "\n")


def status(hugepages_dir: Path = machine.HUGEPAGES_DIR, meminfo: Path = machine.MEMINFO,
           state_file: Path = STATE_FILE) -> dict[str, Any]:
    """The pool's pages and what hugeheap reserved of it, as JSON shows them;
    needs no root. A record that cannot be read is a `problem`, not an error:
    the pool's figures are still shown, and doctor's other findings."""
    pool = machine.hugetlb_pool_record(hugepages_dir, meminfo)
    counts = {field.name: None for field in fields(machine.HugetlbPool)}
    try:
        record, problem = read_record(state_file), None
    except HarnessError as error:
        record, problem = None, str(error)
    return {"supported": pool is not None, "page_bytes": PAGE_BYTES,
            **(pool if pool is not None else {**counts, "available": None}),
            "hugeheap": asdict(record) if record is not None else None,
            "state_file": str(state_file), "problem": problem,
            "peaks": hugetlb_hierarchy.counting()}


def _pool_dir(hugepages_dir: Path, command: str) -> Path:
    """The pool's sysfs folder, or the error of a kernel without one."""
    folder = machine.hugetlb_pool_dir(hugepages_dir)
    if not folder.is_dir():
        raise HarnessError(f"{command}: this kernel has no pool of 2 MiB huge pages (no "
                           f"{folder}: built without hugetlb support); use a kernel with "
                           "CONFIG_HUGETLBFS, or run tools without a pool (HUGEHEAP_THP=on)")
    return folder


def _check_may_write(count_file: Path, command: str) -> None:
    if os.access(count_file, os.W_OK):
        return
    if os.geteuid() != 0:
        raise HarnessError(f"{command}: needs root (it writes {count_file}); run it with sudo")
    raise HarnessError(f"{command}: cannot write {count_file} even as root (/sys is read-only, "
                       "as in a container); manage the pool on the host")


def _pages_now(pool_dir: Path) -> int:
    count_file = pool_dir / "nr_hugepages"
    pages = machine.pool_file_pages(count_file)
    if pages is None:
        raise HarnessError(f"{count_file}: cannot be read as a page count")
    return pages


def _size_text(size: int) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"


def reserve(size: int, hugepages_dir: Path = machine.HUGEPAGES_DIR,
            meminfo: Path = machine.MEMINFO, state_file: Path = STATE_FILE,
            ask_kernel: AskKernel = set_pool_pages) -> Reserved:
    """Adds `size` bytes (in whole 2 MiB pages) to the pool, writes every
    free page of it once so that the host backs it, and measures what a
    pool page costs a new process at its first touch. Everything is checked
    before the kernel is asked; a kernel that grants fewer pages gets them
    back, and the error says so."""
    command = "pool reserve"
    pool_dir = _pool_dir(hugepages_dir, command)
    _check_may_write(pool_dir / "nr_hugepages", command)
    pages = -(-size // PAGE_BYTES)
    available_kb = machine.meminfo_kb(meminfo).get("MemAvailable")
    if available_kb is not None and pages * PAGE_BYTES > available_kb * 1024:
        raise HarnessError(f"{command}: {_size_text(pages * PAGE_BYTES)} is more than the memory "
                           f"available now ({_size_text(available_kb * 1024)}); ask for less")
    if firsttouch.MAP_HUGETLB is None:
        raise HarnessError(f"{command}: cannot map pool pages from Python here (MAP_HUGETLB's "
                           "value is known for x86-64 and AArch64 only)")
    earlier = read_record(state_file)
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HarnessError(f"{command}: cannot make {state_file.parent} for its record "
                           f"({error.strerror})") from None

    pages_before = _pages_now(pool_dir)
    recorded = False
    try:
        held = ask_kernel(pages_before + pages, pool_dir)
        if held < pages_before + pages:
            raise HarnessError(
                f"{command}: the kernel granted only {max(held - pages_before, 0)} of the "
                f"{pages} pages of 2 MiB asked (its free memory is too fragmented for whole "
                "2 MiB pieces), and hugeheap gave those back; reserve early after boot, or run "
                "`echo 1 > /proc/sys/vm/compact_memory` and try again")
        record = Record(earlier.before_pages if earlier else pages_before,
                        (earlier.added_pages if earlier else 0) + pages,
                        datetime.now().astimezone().isoformat(timespec="seconds"),
                        hugetlb_hierarchy=earlier.hugetlb_hierarchy if earlier else None,
                        unified_offered_hugetlb=bool(earlier and
                                                     earlier.unified_offered_hugetlb))
        _write_record(state_file, record)
        recorded = True
    finally:
        # Pages granted and not recorded (too few, no record written,
        # Ctrl-C) go back at once: no one could release them later.
        if not recorded:
            ask_kernel(pages_before, pool_dir)
    # Recorded: from here on `pool release` gives the pages back, whatever happens.
    pool = machine.hugetlb_pool(hugepages_dir, meminfo)
    free = pool.available if pool is not None else 0
    if free:
        try:
            written = firsttouch.pool_touch_times(free)
            record.first_touch_ms = round(firsttouch.pool_first_touch_ms(free), 3)
        except OSError as error:  # another process took free pages meanwhile, say
            raise HarnessError(f"{command}: the pool's {free} free pages could not be "
                               f"written ({error}); `sudo hugeheap pool release` gives back "
                               "what hugeheap added") from None
        record.write_ms = round(statistics.median(written), 3)
        record.measured_pages = min(free, firsttouch.POOL_SAMPLE)
        _write_record(state_file, record)
    # So that the runs' peaks hold their pool pages exactly, not as sampled.
    moved, problem = hugetlb_hierarchy.move_to_v1()
    if moved is not None:
        record.hugetlb_hierarchy = str(moved.mount_point)
        record.unified_offered_hugetlb = moved.unified_offered
        _write_record(state_file, record)
    return Reserved(pages, free, record, status(hugepages_dir, meminfo, state_file), problem)


def release(hugepages_dir: Path = machine.HUGEPAGES_DIR, meminfo: Path = machine.MEMINFO,
            state_file: Path = STATE_FILE, ask_kernel: AskKernel = set_pool_pages) -> Released:
    """Gives back the pages hugeheap's reservations added and removes the
    record. Nothing to do without a record: hugeheap reserved nothing."""
    command = "pool release"
    record = read_record(state_file)
    if record is None:
        pool = machine.hugetlb_pool(hugepages_dir, meminfo)
        total = pool.total if pool is not None else 0
        return Released(None, total, total, 0, status(hugepages_dir, meminfo, state_file))
    pool_dir = _pool_dir(hugepages_dir, command)
    _check_may_write(pool_dir / "nr_hugepages", command)
    pages_before = _pages_now(pool_dir)
    # What others changed since hugeheap's reservation stays changed.
    wanted = max(pages_before - record.added_pages, 0)
    held = ask_kernel(wanted, pool_dir)
    problem = None
    if record.hugetlb_hierarchy is not None:
        problem = hugetlb_hierarchy.move_back(hugetlb_hierarchy.Moved(
            Path(record.hugetlb_hierarchy), record.unified_offered_hugetlb))
    try:
        state_file.unlink()
    except OSError as error:
        raise HarnessError(f"{command}: gave the pages back but cannot remove {state_file} "
                           f"({error.strerror}); remove it") from None
    return Released(record, pages_before, held, max(held - wanted, 0),
                    status(hugepages_dir, meminfo, state_file), problem)


def advice(first_touch: dict[str, Any], pool: dict[str, Any]) -> str | None:
    """One line for doctor where a pool would help: fresh huge pages cost
    more here than small ones (firsttouch's figures, as a record, where THP
    gave huge pages) and no pool page is free for a new process. None
    otherwise."""
    fresh, small = first_touch.get("fresh_huge_ms"), first_touch.get("small_pages_ms")
    if not (isinstance(fresh, (int, float)) and isinstance(small, (int, float))):
        return None
    if (not first_touch.get("huge_pages_backed") or fresh <= small
            or not pool["supported"] or pool["available"]):
        return None
    return (f"a fresh huge page costs {fresh:.2f} ms here against {small:.2f} ms for 512 small "
            f"pages, and no huge-page pool is free: reserve one (`sudo hugeheap pool reserve "
            f"{ADVISED_SIZE}`) and run with HUGEHEAP_THP=hugetlb")
