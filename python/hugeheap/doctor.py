"""What this machine offers for measurement, and what would add the rest."""

from __future__ import annotations

from typing import Any

from . import machine, perf
from .allocators import MODES, resolve
from .cgroups import CgroupV1, discover, usable_version


def report() -> dict[str, Any]:
    found = discover()
    usable, reasons = usable_version()
    cgroup: dict[str, Any] = {
        "v2": str(found.v2) if found.v2 else None,
        "v2_controllers": None,
        "v1": {c: str(p) for c, p in sorted(found.v1.items())
               if c in CgroupV1.REQUIRED + CgroupV1.OPTIONAL},
        "usable": usable,
        "problems": reasons,
    }
    if found.v2 is not None:
        try:
            cgroup["v2_controllers"] = (found.v2 / "cgroup.controllers").read_text().split()
        except OSError:
            pass
    modes = {}
    for name in MODES:
        mode = resolve(name)
        modes[name] = {"available": mode.missing is None, "library": mode.library,
                       "problem": mode.missing}
    tlb = perf.unavailable_reason()
    return {
        "machine": machine.describe(),
        "cgroups": cgroup,
        "tlb_counters": {"available": tlb is None, "problem": tlb},
        "allocators": modes,
    }
