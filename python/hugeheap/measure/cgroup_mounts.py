"""Which cgroup file systems are mounted, read from mountinfo once for
everyone who asks: where this process's groups are (cgroups.discover),
where the hugetlb controller sits (hugetlb_hierarchy) and whether cgroup v2
charges pool pages to memory (hugetlb_cgroup)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CgroupMount:
    """One cgroup file system of /proc/self/mountinfo."""
    root: str                  # the path within the hierarchy that is mounted
    mount_point: Path
    unified: bool              # cgroup2 (the unified hierarchy), else a v1 one
    options: tuple[str, ...]   # its super options: v1's controllers, v2's flags


def cgroup_mounts(mountinfo: str | None = None) -> list[CgroupMount]:
    """The cgroup file systems mounted, in mountinfo's order (default: this
    process's /proc/self/mountinfo)."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    found: list[CgroupMount] = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        separator = fields.index("-")
        fstype = fields[separator + 1]
        if fstype in ("cgroup", "cgroup2") and len(fields) > separator + 3:
            found.append(CgroupMount(fields[3], Path(fields[4]), fstype == "cgroup2",
                                     tuple(fields[separator + 3].split(","))))
    return found
