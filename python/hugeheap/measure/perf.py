"""TLB misses from the CPU's counters, through `perf stat`, where the machine
has them; otherwise the reason why not (never a guess)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

EVENTS = "dTLB-load-misses,dTLB-store-misses,iTLB-load-misses"


@functools.cache
def unavailable_reason() -> str | None:
    """None if TLB misses can be counted here, else why not."""
    perf = shutil.which("perf")
    if perf is None:
        return "perf is not installed (Debian package linux-perf)"
    try:
        probe = subprocess.run([perf, "stat", "-x", ",", "-e", EVENTS, "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"perf stat failed: {error}"
    if probe.returncode != 0:
        return f"perf stat failed: {probe.stderr.strip().splitlines()[-1:]}"
    for line in probe.stderr.splitlines():
        if "<not supported>" in line:
            return "the CPU exposes no TLB-miss counters to perf_event_open (perf: not supported)"
        if "<not counted>" in line:
            return "perf could not count TLB misses here (perf: not counted)"
    return None


def wrap(argv: list[str], csv_path: str) -> list[str]:
    perf = shutil.which("perf") or "perf"
    return [perf, "stat", "-x", ",", "-e", EVENTS, "-o", csv_path, "--", *argv]


def read(csv_path: str) -> tuple[int | None, str | None]:
    """Total TLB misses from perf's CSV output, or None with the reason."""
    total, counted = 0, 0
    try:
        lines = Path(csv_path).read_text().splitlines()
    except OSError as error:
        return None, f"perf wrote no counts ({error.strerror})"
    for line in lines:
        fields = line.split(",")
        if len(fields) > 2 and fields[2] in EVENTS.split(",") and fields[0].isdigit():
            total += int(fields[0])
            counted += 1
    if counted == 0:
        return None, "perf counted no TLB-miss event for this run"
    return total, None
