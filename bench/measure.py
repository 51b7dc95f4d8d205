"""Runs one command under one allocator and measures it: wall time, user and
system CPU time (from wait4, so waited-for children count), peak resident
memory, and the largest share of its anonymous memory that huge pages backed
(sampled from /proc/PID/smaps_rollup).

Lighter than `hugeheap run` (no cgroup: only the command and the children it
waits for are counted), which is enough for the single-process solvers and
microbenchmarks of bench/allocators.py and the demo; standard library only,
so it runs with any python3.  `hugeheap bench` will take its place."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.measure.allocators import MODES, AllocatorMode, derive  # noqa: E402
from hugeheap.measure.hugepages import process_anonymous  # noqa: E402

Allocator = AllocatorMode


def allocators(build: Path) -> dict[str, AllocatorMode]:
    """Every configuration of the comparison, with the library of this build."""
    library = build / "lib" / "libhugeheap.so"
    return {name: derive(name, name, library if name.startswith("hugeheap") else None)
            for name in MODES}


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
    while not stop.is_set():
        reading = process_anonymous(pid)
        if reading is None:
            return
        anon, huge = reading
        # Small heaps say little about huge pages; wait for 64 MiB.
        if anon >= 64 << 20:
            result.append(huge / anon)
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
