"""Where the hugetlb cgroup controller sits decides whether a run's peak of
pool pages is the kernel's or a sample (hugetlb_cgroup.py): cgroup v1 keeps
the peak (hugetlb.2MB.max_usage_in_bytes), cgroup v2 keeps none, so there
the harness reads hugetlb.2MB.current every SAMPLE_INTERVAL_S while a run
runs, and pages a run holds between two readings only are missed (z3's
short runs here read 139 MB in two of five runs and 183 MB in the others).

On a hybrid machine (memory in a v1 hierarchy, hugetlb in the unified
one, as this project's machines are) the controller can move to a v1
hierarchy of its own beside memory's, where the kernel keeps the peak:
`hugeheap pool reserve` does that (as root, it changes the machine already)
and `hugeheap pool release` moves it back. The kernel moves a controller
only while no group of the unified hierarchy uses it, so the unified
root's cgroup.subtree_control gives it up first."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .cgroup_mounts import cgroup_mounts
from .cgroups import v2_controllers
from .hugetlb_cgroup import NOT_COUNTED, in_memory_controller
from .supervision import SAMPLE_INTERVAL_S

CONTROLLER = "hugetlb"
# The kernel lets go of a controller's groups after an RCU grace period, not
# at once: moving it to a hierarchy and back waits this long at most.
SETTLE_S = 5.0

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass
class Mounts:
    """The cgroup file systems mounted: the unified hierarchy's mount point
    and each v1 controller's."""
    unified: Path | None
    v1: dict[str, Path]


def mounts(mountinfo: str | None = None) -> Mounts:
    unified: Path | None = None
    v1: dict[str, Path] = {}
    for mount in cgroup_mounts(mountinfo):
        if mount.unified:
            unified = mount.mount_point
        else:
            for option in mount.options:
                v1.setdefault(option, mount.mount_point)
    return Mounts(unified, v1)


def _in_unified(unified: Path) -> bool:
    """Whether the unified hierarchy has the controller (not moved to v1)."""
    return CONTROLLER in (v2_controllers(unified) or [])


def counting(mountinfo: str | None = None) -> dict[str, object]:
    """How the runs' pool pages get into their peaks here, as JSON shows it:
    exact (the kernel's peak) or not, and one line saying how."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    found = mounts(mountinfo)
    if CONTROLLER in found.v1:
        return {"exact": True, "how": "exactly: the hugetlb controller's cgroup v1 hierarchy "
                f"({found.v1[CONTROLLER]}) keeps each run's peak"}
    if "memory" not in found.v1 and in_memory_controller(mountinfo):
        return {"exact": True, "how": "exactly: cgroup v2 is mounted with "
                "memory_hugetlb_accounting, so memory.peak holds them"}
    if found.unified is not None and _in_unified(found.unified):
        hybrid = ("; `sudo hugeheap pool reserve` moves the controller to a v1 hierarchy "
                  "where the kernel keeps the peak" if "memory" in found.v1 else
                  "; mounting cgroup2 with memory_hugetlb_accounting (Linux 6.6+) counts them "
                  "in memory.peak")
        return {"exact": False, "how": f"sampled every {SAMPLE_INTERVAL_S:g} s while a run "
                "runs (cgroup v2 keeps no peak of them): pages held between two samples only "
                "are missed" + hybrid}
    return {"exact": False, "how": NOT_COUNTED}


@dataclass
class Moved:
    """A v1 hierarchy `move_to_v1` mounted, and whether the unified root had
    offered the controller to its children before (move_back offers it again)."""
    mount_point: Path
    unified_offered: bool


def move_to_v1(mountinfo: str | None = None) -> tuple[Moved | None, str | None]:
    """On a hybrid machine, mounts the hugetlb controller as a v1 hierarchy
    beside memory's. Returns what it did, or None and why it could not
    (None, None where nothing needs doing: the controller is in v1 already,
    or memory is not: a v2 machine, where the unified hierarchy counts)."""
    found = mounts(mountinfo)
    if CONTROLLER in found.v1 or "memory" not in found.v1 or found.unified is None:
        return None, None
    if not _in_unified(found.unified):
        return None, None  # no hugetlb controller to move (counting() says so)
    subtree = found.unified / "cgroup.subtree_control"
    offered = CONTROLLER in (v2_controllers(found.unified, subtree.name) or [])
    target = found.v1["memory"].parent / CONTROLLER
    try:
        if offered:
            subtree.write_text(f"-{CONTROLLER}")
    except OSError as error:
        return None, (f"the unified hierarchy's groups hold the hugetlb controller ({subtree}: "
                      f"{error.strerror}): runs' pool pages stay sampled")
    made = False
    try:
        if not target.is_dir():
            target.mkdir()
            made = True
        _mount_when_free(target)
    except OSError as error:
        # Undone as far as it can be, each step whatever the other did; the error says why.
        if made:
            with contextlib.suppress(OSError):
                target.rmdir()
        if offered:
            with contextlib.suppress(OSError):
                subtree.write_text(f"+{CONTROLLER}")
        return None, (f"cannot mount the hugetlb controller as a cgroup v1 hierarchy at "
                      f"{target} ({error.strerror}): runs' pool pages stay sampled")
    return Moved(target, offered), None


def _mount_when_free(target: Path) -> None:
    """Mounts the controller as a v1 hierarchy at target, trying again while
    the kernel is still letting go of its groups in the unified hierarchy."""
    deadline = time.monotonic() + SETTLE_S
    while _libc.mount(b"cgroup", os.fsencode(target), b"cgroup", 0, CONTROLLER.encode()) != 0:
        error = ctypes.get_errno()
        if error != errno.EBUSY or time.monotonic() > deadline:
            raise OSError(error, os.strerror(error))
        time.sleep(0.01)


def _wait_offered(unified: Path) -> bool:
    """Whether the unified hierarchy has the controller again (it comes back
    once the kernel has let go of the v1 hierarchy), waiting for it."""
    deadline = time.monotonic() + SETTLE_S
    while not _in_unified(unified):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _unmount(mount_point: Path) -> str | None:
    if _libc.umount2(os.fsencode(mount_point), 0) != 0:
        error = ctypes.get_errno()
        return (f"cannot unmount the hugetlb hierarchy at {mount_point} "
                f"({os.strerror(error)}); unmount it once no run uses it")
    return None


def _unmount_again(mount_point: Path) -> str | None:
    """Mounts the lingering hierarchy again and unmounts it, where it has no
    groups now; what is in the way, or None."""
    try:
        _mount_when_free(mount_point)
    except OSError as error:
        return (f"the hugetlb controller is not back in the unified hierarchy, and its v1 "
                f"hierarchy cannot be mounted again at {mount_point} ({error.strerror})")
    groups = [entry.name for entry in mount_point.iterdir() if entry.is_dir()]
    problem = _unmount(mount_point)
    if groups and problem is None:
        return (f"the hugetlb controller's v1 hierarchy still has groups ({', '.join(groups)}): "
                "it comes back to the unified hierarchy once they are removed")
    return problem


def _remove_mount_point(mount_point: Path) -> None:
    with contextlib.suppress(OSError):  # the folder made for it; one not empty stays
        mount_point.rmdir()


def move_back(moved: Moved, mountinfo: str | None = None) -> str | None:
    """Unmounts the v1 hierarchy move_to_v1 made; the unified hierarchy gets
    the controller back (and offers it to its children if it did). What
    could not be undone, or None."""
    if moved.mount_point not in mounts(mountinfo).v1.values():
        return None  # unmounted already (by hand, or a restart)
    problem = _unmount(moved.mount_point)
    if problem is not None:
        return problem
    unified = mounts().unified
    if unified is None:
        _remove_mount_point(moved.mount_point)
        return None
    if not _wait_offered(unified):
        # The kernel ends an unmounted v1 hierarchy only if it had no groups
        # at the unmount: a run's group removed just before, but not yet let
        # go of, keeps it alive with no one to end it later. Mounted again
        # once that group is gone, it ends at the next unmount.
        problem = _unmount_again(moved.mount_point)
        if problem is not None or not _wait_offered(unified):
            return problem or (f"the hugetlb controller is not back in {unified} after "
                               f"{2 * SETTLE_S:g} s: a group of its v1 hierarchy is still "
                               "in use")
    _remove_mount_point(moved.mount_point)
    if moved.unified_offered:
        try:
            (unified / "cgroup.subtree_control").write_text(f"+{CONTROLLER}")
        except OSError as error:  # the harness offers it again itself when a run needs it
            return (f"the hugetlb controller is back in {unified} but not offered to its "
                    f"groups ({error.strerror})")
    return None
