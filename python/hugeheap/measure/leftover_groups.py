"""The cgroups a killed harness left behind: its runs' groups, found by the
prefix their names start with (cgroups.create_run_group), every process in
them ended and the groups removed, so that a campaign resumed, or the next
one, starts on a machine with nothing of the last still running."""

from __future__ import annotations

from .cgroups import CgroupV1, CgroupV2, Hierarchies, RunGroup, discover


def end_leftover_groups(prefix: str, hierarchies: Hierarchies | None = None) -> int:
    """Ends every process in the groups named prefix_* (left by a harness that
    was killed) and removes the groups; returns how many runs had them (a v1
    run's hugetlb group in the unified hierarchy beside is of the same run)."""
    found = hierarchies or discover()
    unified = found.v2 if found.v2 is not None and found.v2.is_dir() else None
    v2 = [p for p in unified.glob(f"{prefix}_*") if p.is_dir()] if unified else []
    groups: list[RunGroup] = [CgroupV2.existing(p) for p in v2]
    parents = {c: p for c, p in found.v1.items() if c in CgroupV1.REQUIRED + CgroupV1.OPTIONAL}
    names = {p.name for parent in parents.values() if parent.is_dir()
             for p in parent.glob(f"{prefix}_*") if p.is_dir()}
    for name in sorted(names):
        groups.append(CgroupV1.existing({c: parent / name for c, parent in parents.items()
                                         if (parent / name).is_dir()}))
    for group in groups:
        group.kill_all()
        group.remove()
    return len(names | {p.name for p in v2})
