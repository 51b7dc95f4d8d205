"""Runs one command under one allocator and measures it: wall time, user and
system CPU time (from wait4, so waited-for children count), peak resident
memory, and the largest share of its anonymous memory that huge pages backed
(sampled from /proc/PID/smaps_rollup).

A stop-gap until `hugeheap run` (cgroups, limits, every descendant) exists;
standard library only, so it runs before any virtual environment does."""

from __future__ import annotations

import glob
import os
import re
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LIBRARY_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]


def find_library(pattern: str) -> str | None:
    for directory in LIBRARY_DIRS:
        hits = sorted(glob.glob(os.path.join(directory, pattern)))
        if hits:
            return hits[0]
    return None


@dataclass
class Allocator:
    name: str
    env: dict[str, str]
    missing: str | None = None  # why it cannot run here, naming the package


def allocators(build: Path) -> dict[str, Allocator]:
    """Every configuration of the issue's comparison, with what it needs."""
    ours = build / "lib" / "libhugeheap.so"
    found: dict[str, Allocator] = {
        "system": Allocator("system", {}),
        "glibc-thp": Allocator("glibc-thp", {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}),
        "hugeheap": Allocator("hugeheap", {"LD_PRELOAD": str(ours)}),
        "hugeheap-nothp": Allocator("hugeheap-nothp", {"LD_PRELOAD": str(ours),
                                                       "HUGEHEAP_THP": "off"}),
    }
    if not ours.exists():
        for name in ("hugeheap", "hugeheap-nothp"):
            found[name].missing = f"{ours} is not built (run `make`)"
    peers = {
        "mimalloc": ("libmimalloc.so.2*", "libmimalloc2.0", {}),
        "jemalloc": ("libjemalloc.so.2", "libjemalloc2",
                     {"MALLOC_CONF": "thp:always,metadata_thp:always"}),
        "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", {}),
    }
    for name, (pattern, package, extra) in peers.items():
        library = find_library(pattern)
        if library is None:
            found[name] = Allocator(name, {}, f"not installed (Debian package {package})")
        else:
            found[name] = Allocator(name, {"LD_PRELOAD": library, **extra})
    return found


@dataclass
class Measurement:
    wall_s: float
    user_s: float
    sys_s: float
    max_rss_kb: int
    exit_code: int
    huge_share: float | None  # largest AnonHugePages/Anonymous seen while it ran
    extra: dict[str, float] = field(default_factory=dict)


def _sample_huge_share(pid: int, stop: threading.Event, result: list[float]) -> None:
    path = f"/proc/{pid}/smaps_rollup"
    pattern = re.compile(r"^(Anonymous|AnonHugePages):\s+(\d+)", re.M)
    while not stop.is_set():
        try:
            text = Path(path).read_text()
        except OSError:
            return
        values = dict(pattern.findall(text))
        anon = int(values.get("Anonymous", 0))
        # Small heaps say little about huge pages; wait for 64 MiB.
        if anon >= 65536:
            result.append(int(values.get("AnonHugePages", 0)) / anon)
        stop.wait(0.1)


def run_measured(cmd: list[str], env: dict[str, str], stdout: Path | None = None,
                 timeout: float = 3600) -> Measurement:
    full_env = dict(os.environ)
    full_env.update(env)
    out = open(stdout, "wb") if stdout else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        process = subprocess.Popen(cmd, env=full_env, stdout=out, stderr=subprocess.DEVNULL)
        shares: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_huge_share, args=(process.pid, stop, shares))
        sampler.start()
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
            time.sleep(0.005)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        stop.set()
        sampler.join()
    finally:
        if stdout:
            out.close()  # type: ignore[union-attr]
    return Measurement(wall, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, process.returncode,
                       max(shares) if shares else None)


def median(values: list[float]) -> float:
    return statistics.median(values)
