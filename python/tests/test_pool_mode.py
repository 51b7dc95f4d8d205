"""The mode hugeheap-pool (hugeheap with HUGEHEAP_THP=hugetlb) and the pool
pages a run holds: the mode refused, naming the fix, where no pool is
reserved; the hugetlb controller's counters read from fake cgroup folders
(v1: the kernel's peak; v2: sampled); and, as root with a pool, a real run
that holds pool pages has them in its memory peak and under its limit."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from campaign_helpers import SUITE, bench, make_campaign, rows
from hugeheap_cli import cli

from hugeheap.campaign.coordinator import run_campaign
from hugeheap.campaign.executors import LocalExecutor
from hugeheap.campaign.modes import parse_modes_option
from hugeheap.campaign.suite_file import load
from hugeheap.errors import HarnessError
from hugeheap.measure import cgroups, hugetlb, hugetlb_cgroup, machine
from hugeheap.measure.allocators import resolve
from hugeheap.measure.cgroups import CgroupV1, CgroupV2, Hierarchies, discover
from hugeheap.measure.hugetlb_cgroup import HugetlbCharge, attach, fallback_warnings
from hugeheap.measure.hugetlb_hierarchy import counting, move_to_v1
from hugeheap.measure.leftover_groups import end_leftover_groups
from hugeheap.measure.limits import Limits
from hugeheap.measure.runner import run

MIB = 2**20
PAGE = 2 * MIB
EMPTY = machine.HugetlbPool(total=0, free=0, reserved=0, surplus=0)
RESERVED = machine.HugetlbPool(total=8, free=8, reserved=0, surplus=0)


@pytest.fixture
def library(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A library hugeheap finds (the modes only need it to be there)."""
    found = tmp_path / "libhugeheap.so"
    found.write_bytes(b"")
    monkeypatch.setenv("HUGEHEAP_LIBRARY", str(found))
    return found


# ------------------------------------------------------------------ the mode

def test_the_mode_preloads_hugeheap_mapping_from_the_pool(
        library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(machine, "hugetlb_pool", lambda: RESERVED)
    mode = resolve("hugeheap-pool")
    assert mode.missing is None
    assert mode.env == {"LD_PRELOAD": str(library), "HUGEHEAP_THP": "hugetlb"}
    assert mode.library == str(library)


@pytest.mark.parametrize("pool,problem", [
    (EMPTY, "no pool of 2 MiB huge pages is reserved here (nr_hugepages is 0); reserve one as "
            "root: `sudo hugeheap pool reserve SIZE`"),
    (None, "this kernel has no pool of 2 MiB huge pages"),
])
def test_without_a_pool_the_mode_cannot_run_and_names_the_fix(
        library: Path, monkeypatch: pytest.MonkeyPatch, pool: machine.HugetlbPool | None,
        problem: str) -> None:
    monkeypatch.setattr(machine, "hugetlb_pool", lambda: pool)
    assert problem in (resolve("hugeheap-pool").missing or "")
    assert resolve("hugeheap").missing is None  # the other modes of the library are not touched
    with pytest.raises(HarnessError) as raised:
        parse_modes_option("system,hugeheap-pool", at_least=2)
    assert "mode 'hugeheap-pool' cannot run here" in str(raised.value)
    assert problem in str(raised.value)


def empty_pool_here() -> str | None:
    pool = machine.hugetlb_pool()
    return None if pool is not None and pool.total == 0 else "a pool is reserved here"


@pytest.mark.skipif(empty_pool_here() is not None, reason="needs a machine without a pool")
@pytest.mark.parametrize("args", [
    ["run", "--alloc", "hugeheap-pool", "--", "true"],
    ["compare", "--modes", "system,hugeheap-pool", "--", "true"],
])
def test_the_commands_refuse_the_mode_without_a_pool(args: list[str]) -> None:
    done = cli(*args, env={"HUGEHEAP_LIBRARY": sys.executable})  # any file is a library here
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert "hugeheap-pool" in done.stderr and "sudo hugeheap pool reserve SIZE" in done.stderr


# ------------------------------------------------- the counter, from fakes

def control_files(path: Path, **values: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in values.items():
        (path / f"hugetlb.2MB.{name.replace('_rsvd_', '.rsvd.')}").write_text(text)
    return path


def test_v1_reads_the_kernels_peak_and_sets_both_limits(tmp_path: Path) -> None:
    path = control_files(tmp_path / "hugetlb" / "run", max_usage_in_bytes=f"{3 * PAGE}\n",
                         limit_in_bytes="max\n", **{"rsvd.limit_in_bytes": "max\n"})
    group = CgroupV1.existing({"freezer": tmp_path / "freezer" / "run", "hugetlb": path})
    charge, uncounted = attach(group, Hierarchies(None, {}))
    assert uncounted is None and charge is not None and charge.version == "v1"
    charge.set_limit(64 * MIB)
    assert (path / "hugetlb.2MB.limit_in_bytes").read_text() == str(64 * MIB)
    assert (path / "hugetlb.2MB.rsvd.limit_in_bytes").read_text() == str(64 * MIB)
    assert charge.peak() == 3 * PAGE
    assert charge.procs_file() is None  # CgroupV1 makes, joins and removes it


def test_v2_keeps_no_peak_so_current_is_sampled(tmp_path: Path) -> None:
    path = control_files(tmp_path / "run", current="0\n", max="max\n")
    charge = HugetlbCharge(path, "v2", own=False)
    for pages in (1, 5, 2):  # the run holds 5 pages for a while, then gives 3 back
        (path / "hugetlb.2MB.current").write_text(f"{pages * PAGE}\n")
        charge.sample()
    (path / "hugetlb.2MB.current").write_text("0\n")  # the run has ended
    assert charge.peak() == 5 * PAGE
    charge.set_limit(32 * MIB)
    assert (path / "hugetlb.2MB.max").read_text() == str(32 * MIB)
    assert not (path / "hugetlb.2MB.rsvd.max").exists()  # written only where the kernel has it


@pytest.mark.parametrize("version, now", [("v1", "usage_in_bytes"), ("v2", "current")])
def test_the_peaks_bounds_from_both_counters_read_together(
        tmp_path: Path, version: str, now: str) -> None:
    """The two peaks added are the most the run's peak can be; the least is
    the most seen held together at one moment, or either peak alone."""
    path = control_files(tmp_path / "run", **{now: "0\n"})

    memory_reads: list[int] = []

    def sampled(moments: list[tuple[int, int]]) -> HugetlbCharge:
        charge = HugetlbCharge(path, version, own=False)
        for memory, pages in moments:
            (path / f"hugetlb.2MB.{now}").write_text(f"{pages * PAGE}\n")

            def memory_now(memory: int = memory) -> int:
                memory_reads.append(memory)
                return memory

            charge.sample(memory_now)
        return charge

    # A table of 100 MiB in ordinary memory, given back before the heap takes
    # 20 pool pages: the peaks added say 140 MiB, memory's alone is the least.
    charge = sampled([(100 * MIB, 0), (10 * MIB, 20), (30 * MIB, 10)])
    # Memory is read only beside pool pages (10 MiB + 40, 30 MiB + 20); its
    # peak alone counts all the same.
    assert memory_reads == [10 * MIB, 30 * MIB]
    assert charge.together == 50 * MIB
    assert charge.peak_lower_bound(100 * MIB, 20 * PAGE) == 100 * MIB
    # 20 MiB beside 20 pool pages: more than either peak alone (30 MiB, 40 MiB).
    charge = sampled([(30 * MIB, 10), (20 * MIB, 20), (5 * MIB, 0)])
    assert charge.peak_lower_bound(30 * MIB, 20 * PAGE) == 60 * MIB
    assert charge.peak_lower_bound(None, 20 * PAGE) is None  # no memory peak: no bound
    charge.sample(lambda: None)  # memory unreadable: the pool pages are still sampled
    assert charge.together == 60 * MIB and charge.sampled == 20 * PAGE


def test_v1_without_swap_bounds_the_peak_by_readings_of_two_counters(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On v1 without swap, memory's own peak counter and memsw's count the
    same bytes: each sample reads one in turn and sets it back, each reading
    counts beside the pool's peak so far, and the memory peak is the largest
    reading. A table in ordinary memory given back before the heap takes pool
    pages no longer counts beside them."""
    memory = tmp_path / "memory" / "run"
    memory.mkdir(parents=True)
    counters = [memory / "memory.max_usage_in_bytes", memory / "memory.memsw.max_usage_in_bytes"]
    path = control_files(tmp_path / "hugetlb" / "run", usage_in_bytes="0\n",
                         max_usage_in_bytes="0\n")
    group = CgroupV1.existing({"freezer": tmp_path / "freezer" / "run", "memory": memory,
                               "hugetlb": path})
    meminfo = tmp_path / "meminfo"
    monkeypatch.setattr(hugetlb_cgroup, "MEMINFO", meminfo)

    def sampled(swap_kib: int, intervals: list[tuple[int, int, int]],
                unreadable: Path | None = None) -> HugetlbCharge:
        """A run of these intervals between samples: memory's peak in each,
        the pool's peak so far and its pages at the sample (a counter gone
        once the run has begun where unreadable)."""
        meminfo.write_text(f"MemTotal: 1000 kB\nSwapTotal: {swap_kib} kB\n")
        since_set_back = [0, 0]  # what each counter shows, as the kernel would
        for counter in counters:
            counter.write_text("0\n")
        charge, _ = attach(group, Hierarchies(None, {}))
        assert charge is not None
        if unreadable is not None:
            unreadable.unlink()
        for memory_peak, pool_peak, pool_now in intervals:
            for which, counter in enumerate(counters):
                since_set_back[which] = max(since_set_back[which], memory_peak)
                if counter != unreadable:
                    counter.write_text(f"{since_set_back[which]}\n")
            (path / "hugetlb.2MB.max_usage_in_bytes").write_text(f"{pool_peak * PAGE}\n")
            (path / "hugetlb.2MB.usage_in_bytes").write_text(f"{pool_now * PAGE}\n")
            charge.sample(lambda: 0)
            # a counter set back has a 0 written over its first digit
            set_back = [counter != unreadable and counter.read_text().startswith("0")
                        and shown > 0
                        for counter, shown in zip(counters, since_set_back, strict=True)]
            if charge.interval_counters is None or unreadable is not None:
                assert set_back == [False, False]
            else:
                assert sum(set_back) == 1
                since_set_back[set_back.index(True)] = 0
        if unreadable is not None:
            unreadable.write_text("0\n")
        charge.close_interval(last=True)
        return charge

    # 100 MiB, given back; a quiet sample; 20 pool pages beside 10 MiB; the run's end.
    intervals = [(100 * MIB, 0, 0), (10 * MIB, 0, 0), (10 * MIB, 20, 20), (12 * MIB, 20, 0)]
    charge = sampled(0, intervals)
    assert charge.peak() == 20 * PAGE
    # The group's peak (memsw's) was set back on the way; the readings keep it.
    assert charge.memory_peak(12 * MIB) == 100 * MIB
    assert charge.peak_upper_bound(100 * MIB, 20 * PAGE) == 100 * MIB  # not 140
    # The table and the pool pages one sample apart: the counter read second
    # saw both (each reading spans two intervals).
    charge = sampled(0, [(100 * MIB, 0, 0), (10 * MIB, 20, 20), (12 * MIB, 20, 0)])
    assert charge.peak_upper_bound(100 * MIB, 20 * PAGE) == 140 * MIB
    # Where swap is, memsw and memory count different bytes: the peaks added,
    # and the group's own peak stands.
    charge = sampled(1024, intervals)
    assert charge.interval_counters is None
    assert charge.memory_peak(100 * MIB) == 100 * MIB
    assert charge.peak_upper_bound(100 * MIB, 20 * PAGE) == 140 * MIB
    # A counter that cannot be read leaves moments no reading covers: the
    # peaks added, and no counter is set back after.
    charge = sampled(0, intervals, unreadable=counters[0])
    assert charge.peak_upper_bound(100 * MIB, 20 * PAGE) == 140 * MIB
    assert charge.memory_peak(100 * MIB) == 100 * MIB
    # Never under either peak, nor the pool peak unknown.
    assert charge.peak_upper_bound(150 * MIB, None) == 150 * MIB


def v2_group(tmp_path: Path, with_hugetlb: bool) -> CgroupV2:
    path = tmp_path / "v2" / "run"
    path.mkdir(parents=True)
    (path / "cgroup.controllers").write_text("memory pids hugetlb\n" if with_hugetlb
                                             else "memory pids\n")
    if with_hugetlb:
        control_files(path, current="0\n")
    return CgroupV2.existing(path)


MOUNTINFO = "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw{options}\n"


def test_a_v2_group_gets_the_controller_where_its_parent_offers_it(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "cgroup.controllers").write_text("cpu memory pids hugetlb\n")
    (parent / "cgroup.subtree_control").write_text("")
    CgroupV2(parent, name="run")
    assert "+hugetlb" in (parent / "cgroup.subtree_control").read_text().split()


def test_v2_counts_in_the_group_unless_memory_already_does(tmp_path: Path) -> None:
    group = v2_group(tmp_path, with_hugetlb=True)
    charge, uncounted = attach(group, mountinfo=MOUNTINFO.format(options=""))
    assert charge is not None and charge.path == group.path and uncounted is None
    # Mounted with memory_hugetlb_accounting, memory.peak holds the pool pages: no second count.
    assert attach(group, mountinfo=MOUNTINFO.format(
        options=",memory_hugetlb_accounting")) == (None, None)


def test_without_the_controller_the_record_says_the_peak_leaves_them_out(
        tmp_path: Path) -> None:
    charge, uncounted = attach(v2_group(tmp_path, with_hugetlb=False),
                               mountinfo=MOUNTINFO.format(options=""))
    assert charge is None and uncounted == hugetlb_cgroup.NOT_COUNTED
    v1 = CgroupV1.existing({"freezer": tmp_path / "freezer" / "run"})
    assert attach(v1, Hierarchies(None, {})) == (None, hugetlb_cgroup.NOT_COUNTED)


def test_beside_v1_a_group_of_the_unified_hierarchy_counts_them(tmp_path: Path) -> None:
    unified = tmp_path / "unified"
    unified.mkdir()
    (unified / "cgroup.controllers").write_text("hugetlb\n")
    (unified / "cgroup.subtree_control").write_text("\n")
    group = CgroupV1.existing({"freezer": tmp_path / "freezer" / "hugeheap_1_2"})
    charge, uncounted = attach(group, Hierarchies(unified, {}))
    assert uncounted is None and charge is not None
    assert (charge.path, charge.version, charge.own) == (unified / "hugeheap_1_2", "v2", True)
    assert (unified / "cgroup.subtree_control").read_text() == "+hugetlb"
    assert charge.procs_file() == str(unified / "hugeheap_1_2" / "cgroup.procs")


def mountinfo_of(root: Path, unified_options: str = "", memory_v1: bool = True,
                 hugetlb_v1: bool = False) -> str:
    """/proc/self/mountinfo of a machine with these cgroup file systems under root."""
    lines = [f"31 25 0:27 / {root}/unified rw - cgroup2 cgroup2 rw{unified_options}"]
    if memory_v1:
        lines.append(f"30 25 0:26 / {root}/memory rw - cgroup cgroup rw,memory")
    if hugetlb_v1:
        lines.append(f"32 25 0:28 / {root}/hugetlb rw - cgroup cgroup rw,hugetlb")
    return "\n".join(lines) + "\n"


def test_how_pool_pages_are_counted_where_the_controller_sits(tmp_path: Path) -> None:
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("cpu hugetlb\n")
    hybrid = counting(mountinfo_of(tmp_path))
    assert hybrid["exact"] is False
    assert "sampled every 0.1 s" in str(hybrid["how"])
    assert "`sudo hugeheap pool reserve` moves the controller" in str(hybrid["how"])
    moved = counting(mountinfo_of(tmp_path, hugetlb_v1=True))
    assert moved["exact"] is True and f"({tmp_path}/hugetlb)" in str(moved["how"])
    v2 = counting(mountinfo_of(tmp_path, memory_v1=False))
    assert v2["exact"] is False and "memory_hugetlb_accounting (Linux 6.6+)" in str(v2["how"])
    accounted = mountinfo_of(tmp_path, ",memory_hugetlb_accounting", memory_v1=False)
    assert counting(accounted)["exact"] is True
    (tmp_path / "unified" / "cgroup.controllers").write_text("cpu\n")
    assert counting(mountinfo_of(tmp_path)) == {"exact": False, "how": hugetlb_cgroup.NOT_COUNTED}
    # Nothing to move where hugetlb is in v1 already, or where memory is not (v2).
    assert move_to_v1(mountinfo_of(tmp_path, hugetlb_v1=True)) == (None, None)
    assert move_to_v1(mountinfo_of(tmp_path, memory_v1=False)) == (None, None)


def test_a_killed_harness_leaves_one_run_in_both_hierarchies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's v1 groups and its hugetlb group in the unified hierarchy are
    ended and removed together, and counted as the one run they are."""
    monkeypatch.setattr(cgroups, "_rmdir_when_empty",
                        lambda path: shutil.rmtree(path, ignore_errors=True))
    monkeypatch.setattr(cgroups, "_wait_empty", lambda pids, timeout=5.0: True)
    parents = {c: tmp_path / c for c in ("cpuacct", "memory", "freezer")}
    for parent in [*parents.values(), tmp_path / "unified"]:
        (parent / "hugeheap_9_1").mkdir(parents=True)
        (parent / "hugeheap_9_1" / "cgroup.procs").write_text("")
    (parents["freezer"] / "hugeheap_9_1" / "freezer.state").write_text("THAWED\n")
    (tmp_path / "unified" / "hugeheap_9_1" / "cgroup.controllers").write_text("hugetlb\n")
    (tmp_path / "unified" / "hugeheap_9_1" / "cgroup.kill").write_text("")
    assert end_leftover_groups("hugeheap", Hierarchies(tmp_path / "unified",
                                                       parents)) == 1
    assert not list(tmp_path.glob("*/hugeheap_9_1"))


def test_a_run_that_found_the_pool_empty_or_held_none_of_it_says_so() -> None:
    assert "no free page when the run started" in fallback_warnings(0, None)[0]
    assert "held no page of the hugetlb pool (3 were free" in fallback_warnings(3, 0)[0]
    assert fallback_warnings(3, PAGE) == []
    assert fallback_warnings(3, None) == []  # not counted: said by the counter's warning


# ---------------------------------------------------- a real run, as root

HOLDER = """\
import mmap, sys, time
pages = int(sys.argv[1])
held = mmap.mmap(-1, pages << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)
for page in range(pages):
    held[page << 21] = 1
print("held", flush=True)
time.sleep(0.6)  # several of the harness's samples (every 0.1 s)
"""
PAGES = 16  # 32 MiB: more than the interpreter's own peak, so that a peak without them fails


@pytest.fixture
def pool_of_pages(cgroups_usable: str, grow_pool: Callable[[int], None]) -> int:
    """PAGES more pages in the real pool (put back afterwards)."""
    grow_pool(PAGES)
    return PAGES


def test_pool_pages_a_run_holds_are_in_its_peak_and_under_its_limit(
        pool_of_pages: int, tmp_path: Path) -> None:
    holder = tmp_path / "holder.py"
    holder.write_text(HOLDER)
    result = run([sys.executable, str(holder), str(pool_of_pages)], measure_tlb=False,
                 output=str(tmp_path / "out"))
    assert (tmp_path / "out").read_text() == "held\n", result.warnings
    if hugetlb_cgroup.NOT_COUNTED in " ".join(result.warnings) or \
            result.hugetlb_peak_bytes is None:
        pytest.skip("the hugetlb controller is not there: " + "; ".join(result.warnings))
    assert result.hugetlb_peak_bytes >= pool_of_pages * PAGE
    assert result.memory_peak_bytes is not None
    assert result.memory_peak_bytes > result.hugetlb_peak_bytes  # the interpreter's own too
    # Held together with the interpreter's own memory for several samples.
    assert result.memory_peak_lower_bytes is not None
    assert result.hugetlb_peak_bytes < result.memory_peak_lower_bytes <= result.memory_peak_bytes
    # Under a limit of fewer pages (room enough for the interpreter) it cannot hold them all.
    limited = run([sys.executable, str(holder), str(pool_of_pages)], measure_tlb=False,
                  limits=Limits(memory_bytes=(pool_of_pages - 4) * PAGE),
                  output=str(tmp_path / "limited"))
    said = (tmp_path / "limited").read_text()
    assert "held" not in said.splitlines()
    # Refused at mmap where the kernel limits reservations (hugetlb.2MB.rsvd.*), else a
    # SIGBUS at the first touch past the limit.
    assert "Cannot allocate memory" in said or limited.signal is not None, said
    unified = discover().v2
    left = list(unified.glob(f"hugeheap_{os.getpid()}_*")) if unified is not None else []
    assert left == []  # the groups made beside v1 ones are removed with them


TABLE_THEN_HEAP = """\
import mmap, sys, time
table = mmap.mmap(-1, 96 << 20)  # ordinary memory, written and given back first
for offset in range(0, 96 << 20, 4096):
    table[offset] = 1
time.sleep(0.3)
table.close()
time.sleep(0.3)  # some 30 samples apart (a reading spans two), however late the harness
pages = int(sys.argv[1])
held = mmap.mmap(-1, pages << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)
for page in range(pages):
    held[page << 21] = 1
time.sleep(0.6)
print("held", flush=True)
"""


def test_a_peak_of_memory_and_one_of_pool_pages_apart_are_bounds(
        pool_of_pages: int, tmp_path: Path) -> None:
    """Where the run's ordinary memory peaks before its pool pages do, the two
    peaks added overstate its peak by the smaller: the lower bound, read
    while both were held, says how much."""
    holder = tmp_path / "table_then_heap.py"
    holder.write_text(TABLE_THEN_HEAP)
    result = run([sys.executable, str(holder), str(pool_of_pages)], measure_tlb=False,
                 output=str(tmp_path / "out"))
    assert (tmp_path / "out").read_text() == "held\n", result.warnings
    if result.hugetlb_peak_bytes is None:
        pytest.skip("the hugetlb controller is not there: " + "; ".join(result.warnings))
    assert result.memory_peak_bytes is not None and result.memory_peak_lower_bytes is not None
    # The table's 96 MiB and the 32 MiB of pool pages were never held together.
    assert 96 * MIB <= result.memory_peak_lower_bytes < 96 * MIB + pool_of_pages * PAGE
    if intervals_bounded():  # the upper bound too sees them apart
        assert result.memory_peak_lower_bytes <= result.memory_peak_bytes \
            < 96 * MIB + pool_of_pages * PAGE
    else:
        assert result.memory_peak_bytes >= 96 * MIB + pool_of_pages * PAGE


def intervals_bounded() -> bool:
    """Whether runs' peaks with pool pages are bounded per interval between
    samples here: hugetlb counted in cgroup v1, memsw kept, no swap."""
    hierarchies = discover()
    return "hugetlb" in hierarchies.v1 and \
        hugetlb_cgroup._interval_counters(hierarchies.v1.get("memory")) is not None


SHORT_HOLD = """\
import mmap, sys, time
time.sleep(0.35)  # past the harness's first samples
pages = int(sys.argv[1])
held = mmap.mmap(-1, pages << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)
for page in range(pages):
    held[page << 21] = 1
held.close()  # held for a few milliseconds: most likely between two samples
time.sleep(0.35)
print("done", flush=True)
"""


def test_pool_reserve_has_the_kernel_keep_each_runs_peak_of_pool_pages(
        real_pool: int, cgroups_usable: str, tmp_path: Path) -> None:
    """On a hybrid machine, `pool reserve` moves the hugetlb controller to a
    cgroup v1 hierarchy, so that a run's pool pages are in its peak even
    where it held them between two of the harness's samples; `pool release`
    moves it back."""
    before = counting()
    hybrid = not before["exact"] and "pool reserve` moves" in str(before["how"])
    reserved = cli("pool", "reserve", f"{2 * PAGES * 2}MiB")
    assert reserved.returncode == 0, reserved.stderr
    after = counting()
    said_at_reserve = " ".join(reserved.stdout.split())
    if "groups hold the hugetlb controller" in said_at_reserve:  # others' groups: not ours to end
        pytest.skip(said_at_reserve)
    if not after["exact"]:
        assert not hybrid, reserved.stdout
        pytest.skip(f"runs' pool pages are not counted exactly here: {after['how']}")
    assert "pool pages in runs' peaks: exactly" in cli("pool", "status").stdout
    holder = tmp_path / "short_hold.py"
    holder.write_text(SHORT_HOLD)
    result = run([sys.executable, str(holder), str(PAGES)], measure_tlb=False,
                 output=str(tmp_path / "out"))
    assert (tmp_path / "out").read_text() == "done\n", result.warnings
    assert result.hugetlb_peak_bytes is not None and result.hugetlb_peak_bytes >= PAGES * PAGE
    if intervals_bounded():
        test_a_peak_of_memory_and_one_of_pool_pages_apart_are_bounds(PAGES, tmp_path)
    released = cli("pool", "release")
    assert released.returncode == 0, released.stderr + released.stdout
    said = " ".join(released.stdout.split())
    assert "hugetlb controller" not in said and "hugetlb hierarchy" not in said
    assert counting() == before


def test_pool_release_right_after_a_run_gives_the_controller_back(
        real_pool: int, cgroups_usable: str, tmp_path: Path) -> None:
    """A run's hugetlb group removed just before `pool release` unmounts the
    v1 hierarchy is not yet let go of by the kernel, which then keeps the
    unmounted hierarchy alive: release mounts it again and unmounts it, so
    the unified hierarchy gets the controller back all the same."""
    before = counting()
    reserved = cli("pool", "reserve", f"{2 * PAGES * 2}MiB")
    assert reserved.returncode == 0, reserved.stderr
    if not counting()["exact"] or before["exact"]:
        pytest.skip("`pool reserve` moved no hugetlb controller here")
    holder = tmp_path / "holder.py"
    holder.write_text(HOLDER)
    result = run([sys.executable, str(holder), str(PAGES)], measure_tlb=False,
                 output=str(tmp_path / "out"))
    assert result.hugetlb_peak_bytes is not None and result.hugetlb_peak_bytes >= PAGES * PAGE
    released = hugetlb.release()  # at once, in this process
    assert released.problem is None
    assert counting() == before


# ------------------------------------------------------------- campaigns

def test_a_campaign_records_the_pool_at_its_start_and_its_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter([{"total": 8, "free": 8, "reserved": 0, "surplus": 0, "available": 8},
                     {"total": 8, "free": 3, "reserved": 0, "surplus": 0, "available": 3}])
    monkeypatch.setattr(machine, "hugetlb_pool_record", lambda: next(readings))
    suite = load(make_campaign(tmp_path, {"a": "sat"}, SUITE.replace(
        'modes = ["system", "hugeheap"]', 'modes = ["system"]')))
    run_campaign(suite, tmp_path / "camp", LocalExecutor(1), 1)
    session = json.loads((tmp_path / "camp" / "machine.json").read_text())[-1]
    assert session["hugetlb_pool_before"]["available"] == 8
    assert session["hugetlb_pool_after"]["available"] == 3


def test_a_campaign_of_the_mode_runs_on_a_real_pool(pool_of_pages: int, tmp_path: Path) -> None:
    """hugeheap bench with campaign.modes naming hugeheap-pool: its runs
    preload the library with HUGEHEAP_THP=hugetlb, and the record of a run
    says where the tool held no pool page."""
    suite = make_campaign(tmp_path, {"a": "sat"}, SUITE.replace(
        'modes = ["system", "hugeheap"]', 'modes = ["hugeheap", "hugeheap-pool"]'))
    out = tmp_path / "camp"
    done = bench(suite, out)
    assert done.returncode == 0, done.stderr
    assert sorted(r[2] for r in rows(out)) == ["hugeheap", "hugeheap-pool"]
    with sqlite3.connect(out / "results.sqlite") as db:
        stored = dict(db.execute("SELECT mode, environment FROM runs").fetchall())
    assert '"HUGEHEAP_THP": "hugetlb"' in stored["hugeheap-pool"]
    assert "HUGEHEAP_THP" not in stored["hugeheap"]
    session = json.loads((out / "machine.json").read_text())[-1]
    assert session["hugetlb_pool_before"]["total"] >= pool_of_pages
