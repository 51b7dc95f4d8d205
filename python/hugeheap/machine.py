"""What the machine is: kernel, glibc, CPU, huge-page settings."""

from __future__ import annotations

import functools
import os
import platform
import re
import socket
from pathlib import Path

THP_DIR = Path("/sys/kernel/mm/transparent_hugepage")


def _selected(path: Path) -> str | None:
    """The bracketed choice of a sysfs setting such as 'always [madvise] never'."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    match = re.search(r"\[([^\]]+)\]", text)
    return match.group(1) if match else text


def thp_settings() -> dict[str, str | None]:
    return {
        "enabled": _selected(THP_DIR / "enabled"),
        "defrag": _selected(THP_DIR / "defrag"),
        "khugepaged_defrag": _selected(THP_DIR / "khugepaged" / "defrag"),
    }


def glibc_version() -> tuple[int, int] | None:
    name, version = platform.libc_ver()
    if name != "glibc" or not version:
        return None
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@functools.cache
def describe() -> dict[str, object]:
    """What does not change while the harness runs."""
    libc = glibc_version()
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "glibc": f"{libc[0]}.{libc[1]}" if libc else None,
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "thp": thp_settings(),
    }
