"""`hugeheap doctor`: what this machine offers for measurement, what would
add the rest, and what memory costs on it (first touch of huge and small
pages: what a THP measurement here can show; the hugetlb pool, and whether
one would help)."""

from __future__ import annotations

from typing import Any

from . import firsttouch, hugetlb, machine, perf
from .allocators import MODES, resolve
from .cgroups import CgroupV1, discover, usable_version, v2_controllers


def diagnose() -> dict[str, Any]:
    found = discover()
    usable, reasons = usable_version(found)
    cgroup: dict[str, Any] = {
        "v2": str(found.v2) if found.v2 else None,
        "v2_controllers": v2_controllers(found.v2) if found.v2 else None,
        "v1": {c: str(p) for c, p in sorted(found.v1.items())
               if c in CgroupV1.REQUIRED + CgroupV1.OPTIONAL},
        "usable": usable,
        "problems": reasons,
    }
    modes = {}
    for name in MODES:
        mode = resolve(name)
        modes[name] = {"available": mode.missing is None, "library": mode.library,
                       "problem": mode.missing}
    tlb = perf.unavailable_reason()
    touch = firsttouch.measure().as_record()
    pool = hugetlb.status()
    return {
        "machine": machine.describe(),
        "cgroups": cgroup,
        "tlb_counters": {"available": tlb is None, "problem": tlb},
        "allocators": modes,
        "first_touch": touch,
        "pool": {**pool, "advice": hugetlb.advice(touch, pool)},
    }
