"""Durations, sizes, CPU lists and lists of names as people (and the kernel)
write them."""

from __future__ import annotations

import re

from ..errors import HarnessError

_DURATION_UNITS = {"": 1.0, "s": 1.0, "ms": 0.001, "m": 60.0, "min": 60.0, "h": 3600.0}
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
    "t": 1000**4, "tb": 1000**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_NUMBER_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_names(text: str) -> list[str]:
    """'A,B' (an option's list of tools or modes) -> ['A', 'B'], in its
    order, blanks around and between the commas dropped."""
    return [name.strip() for name in text.split(",") if name.strip()]


def parse_duration(text: str, option: str) -> float:
    """'90s', '15m', '1.5h', '250ms', '30' (seconds) -> seconds."""
    match = _NUMBER_UNIT.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _DURATION_UNITS:
        raise HarnessError(
            f"{option}: '{text}' is not a duration (examples: 90s, 15m, 1.5h, 250ms)")
    seconds = float(match.group(1)) * _DURATION_UNITS[unit]
    if seconds <= 0:
        raise HarnessError(f"{option}: '{text}' must be more than zero")
    return seconds


def parse_size(text: str, option: str) -> int:
    """'4GiB', '512MB', '1000000' (bytes) -> bytes."""
    match = _NUMBER_UNIT.match(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _SIZE_UNITS:
        raise HarnessError(f"{option}: '{text}' is not a size (examples: 4GiB, 512MB, 1000000)")
    size = int(float(match.group(1)) * _SIZE_UNITS[unit])
    if size <= 0:
        raise HarnessError(f"{option}: '{text}' must be more than zero bytes")
    return size


def parse_cpu_list(text: str, what: str) -> list[int]:
    """'0,1', '0-3', '0-1,4' (also the kernel's list format, as in cpuset.cpus
    and /sys/devices/system/node/node0/cpulist) -> sorted CPU numbers.
    what names the source in the error: an option, or a file."""
    cpus: set[int] = set()
    if not text.strip():
        return []  # a cpuset without CPUs, or a node without any
    for part in text.strip().split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not match:
            raise HarnessError(f"{what}: '{text.strip()}' is not a list of CPUs "
                               "(examples: 0,1 or 0-3)")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        if last < first:
            raise HarnessError(f"{what}: '{part.strip()}' is a range that runs backwards")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def parse_assignments(words: tuple[str, ...] | list[str], option: str) -> dict[str, str]:
    """['NAME=VALUE', ...] (an environment) -> {NAME: VALUE}."""
    found: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise HarnessError(f"{option} {word}: not NAME=VALUE (example: {option} "
                               "MALLOC_ARENA_MAX=2)")
        found[name] = value
    return found
