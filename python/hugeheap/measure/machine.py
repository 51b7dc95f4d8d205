"""What the machine is, read in one place: kernel, glibc, CPU model and
topology, memory and swap, huge-page settings and the hugetlb pool, steal
time, and what /proc says of a process (its CPU time, a mapping's huge
pages). Every reader takes the file it reads (or /proc itself) as an
argument with the real one as default, so tests can hand it a machine that
is not this one."""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import HarnessError
from .units import parse_cpu_list

THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")
CPU_DIR = Path("/sys/devices/system/cpu")
NODE_DIR = Path("/sys/devices/system/node")
MEMINFO = Path("/proc/meminfo")
HUGEPAGES_DIR = Path("/sys/kernel/mm/hugepages")
POOL_PAGE_KB = 2048  # the pool hugeheap's HUGEHEAP_THP=hugetlb maps from: 2 MiB pages
PROC = Path("/proc")
PROC_STAT = PROC / "stat"
SELF_SMAPS = PROC / "self" / "smaps"


def _selected(path: Path) -> str | None:
    """The bracketed choice of a sysfs setting such as 'always [madvise] never'."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text


def thp_settings(thp_dir: Path = THP_DIR) -> dict[str, str | None]:
    """Read at every run: an administrator may change them between runs."""
    return {
        "enabled": _selected(thp_dir / "enabled"),
        "defrag": _selected(thp_dir / "defrag"),
        "khugepaged_defrag": _selected(thp_dir / "khugepaged" / "defrag"),
    }


def glibc_version() -> tuple[int, int] | None:
    name, version = platform.libc_ver()
    if name != "glibc" or not version:
        return None
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def meminfo_kb(meminfo: Path = MEMINFO) -> dict[str, int]:
    """/proc/meminfo as {field: kB}; empty where it cannot be read."""
    values: dict[str, int] = {}
    try:
        text = meminfo.read_text()
    except OSError:
        return values
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        words = rest.split()
        if words and words[0].isdigit():
            values[key] = int(words[0])
    return values


def memory_total(meminfo: Path = MEMINFO) -> int | None:
    """Bytes of RAM."""
    total = meminfo_kb(meminfo).get("MemTotal")
    return None if total is None else total * 1024


@dataclass(frozen=True)
class HugetlbPool:
    """The kernel's pool of 2 MiB huge pages (vm.nr_hugepages), in pages."""
    total: int  # nr_hugepages: the pool, surplus pages included
    free: int  # not faulted in by any process
    reserved: int  # free, but promised to mappings that have not touched them yet
    surplus: int  # beyond the persistent pool: freed once their processes let go

    @property
    def available(self) -> int:
        """Pages a new mapping can have."""
        return max(self.free - self.reserved, 0)


def hugetlb_pool_dir(hugepages_dir: Path = HUGEPAGES_DIR) -> Path:
    """The sysfs folder of the 2 MiB pool (absent on a kernel without hugetlb)."""
    return hugepages_dir / f"hugepages-{POOL_PAGE_KB}kB"


def pool_file_pages(path: Path) -> int | None:
    """A page count of the pool's sysfs folder (nr_hugepages, ...); None
    where it cannot be read or is no number."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def hugetlb_pool(hugepages_dir: Path = HUGEPAGES_DIR,
                 meminfo: Path = MEMINFO) -> HugetlbPool | None:
    """The 2 MiB pool from its sysfs folder, else from /proc/meminfo's
    HugePages_* (which count the default huge-page size's pool: only where
    that size is 2 MiB). None where the kernel has no such pool."""
    folder = hugetlb_pool_dir(hugepages_dir)
    names = ("nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages")
    counts = [pool_file_pages(folder / name) for name in names]
    if all(count is not None for count in counts):
        total, free, reserved, surplus = (count or 0 for count in counts)
        return HugetlbPool(total, free, reserved, surplus)
    values = meminfo_kb(meminfo)
    fields = ("HugePages_Total", "HugePages_Free", "HugePages_Rsvd", "HugePages_Surp")
    if values.get("Hugepagesize") != POOL_PAGE_KB or not all(f in values for f in fields):
        return None
    return HugetlbPool(*(values[field] for field in fields))


def hugetlb_pool_record(hugepages_dir: Path = HUGEPAGES_DIR,
                        meminfo: Path = MEMINFO) -> dict[str, int] | None:
    """The 2 MiB pool's pages as a record (total, free, reserved, surplus,
    available); None where the kernel has no such pool."""
    pool = hugetlb_pool(hugepages_dir, meminfo)
    return None if pool is None else {**asdict(pool), "available": pool.available}


def swap_in_use(meminfo: Path = MEMINFO) -> bool:
    """Whether any swap is used now: memory figures may then be low."""
    values = meminfo_kb(meminfo)
    return values.get("SwapTotal", 0) - values.get("SwapFree", 0) > 0


def steal_seconds(cores: list[int] | None = None, stat: Path = PROC_STAT) -> float | None:
    """Steal time of the given CPUs (all where None) since boot, in seconds:
    how long a virtual machine's host ran something else while these CPUs
    had work (/proc/stat's eighth figure per CPU, in clock ticks). None where
    the kernel does not count it (Linux before 2.6.11) or /proc/stat cannot
    be read. On bare metal it stays 0."""
    try:
        text = stat.read_text()
    except OSError:
        return None
    wanted = None if cores is None else set(cores)
    ticks = 0
    counted = False
    for line in text.splitlines():
        words = line.split()
        if not words or not words[0].startswith("cpu"):
            continue
        number = words[0][3:]  # empty on the line of all CPUs' sums
        if not number.isdigit() or (wanted is not None and int(number) not in wanted):
            continue
        if len(words) < 9 or not words[8].isdigit():
            return None
        ticks += int(words[8])
        counted = True
    return ticks / os.sysconf("SC_CLK_TCK") if counted else None


def process_stat_fields(pid: int, proc: Path = PROC) -> list[str] | None:
    """The fields of /proc/PID/stat after the process's name (whose
    parentheses may hold spaces): the state first, so field N of proc(5) is
    element N - 3. None where the process does not exist (or is unreadable or
    malformed)."""
    try:
        text = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    _, separator, rest = text.rpartition(")")
    fields = rest.split()
    return fields if separator and len(fields) >= 20 else None


def process_start_ticks(pid: int, proc: Path = PROC) -> int | None:
    """When the process started, in clock ticks after boot (proc(5)'s
    starttime): with the pid, it names one process, though pids are reused.
    None where there is no such process."""
    fields = process_stat_fields(pid, proc)
    return int(fields[19]) if fields is not None and fields[19].isdigit() else None


def process_cpu_seconds(pid: int, proc: Path = PROC) -> float:
    """CPU seconds of a process and the children it waited for (user and
    system: /proc/PID/stat's utime, stime, cutime, cstime); 0 where they
    cannot be read (the process is gone, or the file is not as Linux writes
    it)."""
    fields = process_stat_fields(pid, proc)
    if fields is None or not all(x.isdigit() for x in fields[11:15]):
        return 0.0
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def anon_huge_bytes(address: int, smaps: Path = SELF_SMAPS) -> int:
    """Bytes of anonymous huge pages (AnonHugePages) in this process's
    mapping that holds address; 0 where smaps cannot be read or has no such
    mapping. ValueError where a mapping's range or its figure is not a
    number (firsttouch.measure reports that as not measured)."""
    try:
        lines = smaps.read_text().splitlines()
    except OSError:
        return 0
    inside = False
    for line in lines:
        head = line.split(" ", 1)[0]
        if "-" in head and ":" not in head:  # a mapping's range: its fields follow
            low, high = (int(x, 16) for x in head.split("-"))
            inside = low <= address < high
        elif inside and line.startswith("AnonHugePages:"):
            _, kilobytes, *_ = line.split()  # ValueError too where the figure is missing
            return int(kilobytes) * 1024
    return 0


def loaded_libc(maps: Path = Path("/proc/self/maps")) -> str | None:
    """The C library this process (and so the system allocator) came from."""
    try:
        for line in maps.read_text().splitlines():
            path = line.split()[-1]
            if path.endswith("/libc.so.6"):
                return path
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class Cpu:
    number: int
    package: int  # socket
    core: int  # physical core id within the package
    node: int  # NUMA node


def cpus(allowed: set[int] | None = None, cpu_dir: Path = CPU_DIR,
         node_dir: Path = NODE_DIR) -> list[Cpu]:
    """The CPUs this process may use (or those of `allowed`), with the physical
    core and NUMA node of each. Without topology in /sys, each CPU is a core
    of its own on node 0."""
    if allowed is None:
        allowed = set(os.sched_getaffinity(0))
    node_of: dict[int, int] = {}
    for node in node_dir.glob("node[0-9]*"):
        try:
            listed = parse_cpu_list((node / "cpulist").read_text(), str(node / "cpulist"))
        except (OSError, HarnessError):
            continue
        for cpu in listed:
            node_of[cpu] = int(node.name[4:])
    found = []
    for number in sorted(allowed):
        topology = cpu_dir / f"cpu{number}" / "topology"
        try:
            package = int((topology / "physical_package_id").read_text())
            core = int((topology / "core_id").read_text())
        except (OSError, ValueError):
            package, core = 0, number
        found.append(Cpu(number, package, core, node_of.get(number, 0)))
    return found


@functools.cache
def describe() -> dict[str, object]:
    """What does not change while the harness runs (read once per process,
    before any clock starts)."""
    libc = glibc_version()
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "glibc": f"{libc[0]}.{libc[1]}" if libc else None,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": memory_total(),
        "thp": thp_settings(),
    }


def node_facts() -> dict[str, object]:
    """What a run's machine is, as far as comparing runs goes: the paired runs
    of one block must share every one of these facts, or their comparison
    says nothing about the allocators. Recorded with every run (a campaign
    on a cluster runs on many nodes) and read at every run (an administrator
    may change the THP settings between runs). The place for further facts
    that change what a run measures, such as the cost of a huge page's first
    touch."""
    facts = describe()
    return {
        "kernel": facts["kernel"],
        "glibc": facts["glibc"],
        "cpu_model": facts["cpu_model"],
        "thp": thp_settings(),
    }
