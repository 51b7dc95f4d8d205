"""The cgroups v2 code against a fake cgroup tree (a temporary directory laid
out like cgroupfs), for every file it reads and writes; and the same against
the real hierarchy where one with the controllers exists."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hugeheap.errors import HarnessError
from hugeheap.measure import cgroups
from hugeheap.measure.cgroup_mounts import CgroupMount, cgroup_mounts
from hugeheap.measure.cgroups import CgroupV2, discover
from hugeheap.measure.hugetlb_cgroup import in_memory_controller


def fake_parent(tmp_path: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    parent = tmp_path / "cgroup"
    parent.mkdir()
    (parent / "cgroup.controllers").write_text(controllers + "\n")
    (parent / "cgroup.subtree_control").write_text("")
    return parent


def populate_like_the_kernel(group: Path) -> None:
    """What the kernel puts in a new group's directory."""
    files = {
        "cgroup.procs": "", "cgroup.kill": "", "cgroup.freeze": "0\n",
        "cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n",
        "memory.max": "max\n", "memory.swap.max": "max\n", "memory.peak": "123456789\n",
        "memory.current": "23456789\n",
        "memory.events": "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
        "memory.stat": "anon 104857600\nfile 0\nanon_thp 94371840\n",
        "cpuset.cpus": "", "pids.max": "max\n",
    }
    for name, text in files.items():
        (group / name).write_text(text)


def test_creates_group_and_enables_controllers(tmp_path: Path) -> None:
    parent = fake_parent(tmp_path)
    group = CgroupV2(parent, name="run1")
    assert group.path == parent / "run1" and group.path.is_dir()
    enabled = (parent / "cgroup.subtree_control").read_text().split()
    assert sorted(enabled) == ["+cpu", "+cpuset", "+memory", "+pids"]
    assert group.procs_files() == [str(parent / "run1" / "cgroup.procs")]


def test_limits_are_written(tmp_path: Path) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    populate_like_the_kernel(group.path)
    group.set_limits(memory=512 << 20, cores=[0, 2], pids=64)
    assert (group.path / "memory.max").read_text() == str(512 << 20)
    assert (group.path / "memory.swap.max").read_text() == "0"
    assert (group.path / "cpuset.cpus").read_text() == "0,2"
    assert (group.path / "pids.max").read_text() == "64"


def test_counters_are_read(tmp_path: Path) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    populate_like_the_kernel(group.path)
    cpu = group.cpu()
    assert (cpu.total, cpu.user, cpu.system) == (2.5, 2.0, 0.5)
    assert group.memory_peak() == 123456789
    assert group.memory_now() == 23456789  # by the same counter, now
    assert group.oom_kills() == 1
    anonymous, huge = group.anonymous_memory() or (0, 0)
    assert huge / anonymous == pytest.approx(0.9)
    (group.path / "cgroup.procs").write_text("12\n34\n")
    assert group.pids() == [12, 34]


def test_old_kernel_without_memory_peak(tmp_path: Path) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    populate_like_the_kernel(group.path)
    (group.path / "memory.peak").unlink()
    assert group.memory_peak() is None


def test_kill_uses_cgroup_kill(tmp_path: Path) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    populate_like_the_kernel(group.path)
    group.kill_all()
    assert (group.path / "cgroup.kill").read_text() == "1"


def test_kill_without_cgroup_kill_freezes_kills_thaws(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    populate_like_the_kernel(group.path)
    (group.path / "cgroup.kill").unlink()
    victim = subprocess.Popen(["sleep", "60"])
    (group.path / "cgroup.procs").write_text(f"{victim.pid}\n")
    writes: list[str] = []
    real_write = cgroups._write

    def recording_write(path: Path, value: str) -> None:
        writes.append(f"{path.name}={value}")
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", recording_write)
    monkeypatch.setattr(cgroups, "_wait_empty", lambda pids, timeout=5.0: True)
    group.kill_all()
    assert victim.wait(timeout=5) == -9
    assert writes == ["cgroup.freeze=1", "cgroup.freeze=0"]


def test_missing_controllers_are_named(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="memory"):
        CgroupV2(fake_parent(tmp_path, controllers="cpu pids"), name="run")


def test_remove(tmp_path: Path) -> None:
    group = CgroupV2(fake_parent(tmp_path), name="run")
    group.remove()
    assert not group.path.exists()


def test_discover_reads_mountinfo_and_own_cgroup() -> None:
    mountinfo = (
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "33 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
    )
    own = "4:memory:/jobs/a\n2:cpu,cpuacct:/\n0::/user.slice\n"
    found = discover(mountinfo, own)
    assert found.v2 == Path("/sys/fs/cgroup/unified/user.slice")
    assert found.v1 == {"memory": Path("/sys/fs/cgroup/memory/jobs/a"),
                        "cpu": Path("/sys/fs/cgroup/cpu,cpuacct"),
                        "cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct")}


def test_cgroup_mounts_is_the_one_reading_of_mountinfo() -> None:
    """discover(), the pool's hierarchy move and the memory_hugetlb_accounting
    check all read mountinfo through cgroup_mounts: optional fields before
    the separator vary in number, a container sees a hierarchy from a root
    below its top, and other file systems are not cgroups."""
    mountinfo = (
        "22 1 259:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "35 31 0:32 /jobs /sys/fs/cgroup/memory rw shared:9 master:3 - cgroup cgroup "
        "rw,memory\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_hugetlb_accounting\n"
    )
    assert cgroup_mounts(mountinfo) == [
        CgroupMount("/jobs", Path("/sys/fs/cgroup/memory"), False, ("rw", "memory")),
        CgroupMount("/", Path("/sys/fs/cgroup/unified"), True,
                            ("rw", "nsdelegate", "memory_hugetlb_accounting"))]
    found = discover(mountinfo, "4:memory:/jobs/a\n0::/x\n")
    assert found.v1 == {"memory": Path("/sys/fs/cgroup/memory/a")}
    assert found.v2 == Path("/sys/fs/cgroup/unified/x")
    assert in_memory_controller(mountinfo)
    assert not in_memory_controller(mountinfo.replace(",memory_hugetlb_accounting", ""))


def test_the_harness_makes_room_in_a_group_of_its_own(tmp_path: Path) -> None:
    """A non-root group that holds the harness (a systemd scope with
    Delegate=yes) cannot give controllers to groups inside it: the harness
    moves itself into a leaf beside its runs first, as BenchExec does."""
    parent = fake_parent(tmp_path)
    (parent / "cgroup.type").write_text("domain\n")  # not the root group
    (parent / "cgroup.procs").write_text(f"{os.getpid()}\n")
    (parent / f"{cgroups.HARNESS_LEAF}-1").mkdir()  # a harness that ended
    group = CgroupV2(parent, name="run")
    leaf = parent / f"{cgroups.HARNESS_LEAF}-{os.getpid()}"
    assert (leaf / "cgroup.procs").read_text() == str(os.getpid())
    assert not (parent / f"{cgroups.HARNESS_LEAF}-1").exists()
    assert "+memory" in (parent / "cgroup.subtree_control").read_text()
    assert group.path == parent / "run"


def test_a_group_shared_with_other_processes_is_left_alone(tmp_path: Path) -> None:
    parent = fake_parent(tmp_path)
    (parent / "cgroup.type").write_text("domain\n")
    (parent / "cgroup.procs").write_text(f"1\n{os.getpid()}\n")  # a login session's
    with pytest.raises(HarnessError, match=r"pids 1\).*systemd-run --user --scope -p "
                                           r"Delegate=yes hugeheap"):
        CgroupV2(parent, name="run")
    assert not list(parent.glob(f"{cgroups.HARNESS_LEAF}-*"))
    assert (parent / "cgroup.subtree_control").read_text() == ""


def test_the_root_group_needs_no_room(tmp_path: Path) -> None:
    parent = fake_parent(tmp_path)  # no cgroup.type: the root group
    (parent / "cgroup.procs").write_text("1\n")
    CgroupV2(parent, name="run")
    assert not list(parent.glob(f"{cgroups.HARNESS_LEAF}-*"))


def test_discover_sees_through_the_harness_leaf() -> None:
    mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
    own = f"0::/user.slice/run-1.scope/{cgroups.HARNESS_LEAF}-77\n"
    assert discover(mountinfo, own).v2 == Path("/sys/fs/cgroup/user.slice/run-1.scope")


def test_refusals_name_the_fix() -> None:
    busy = OSError(errno.EBUSY, "Device or resource busy", "/sys/fs/cgroup/x/cgroup.subtree_"
                   "control")
    denied = PermissionError(errno.EACCES, "Permission denied", "/sys/fs/cgroup/x")
    for error in (busy, denied):
        explained = cgroups._explained(error)
        assert "systemd-run --user --scope -p Delegate=yes" in explained
        assert "as root: `systemd-run --scope -p Delegate=yes" in explained  # v2: root too


def real_v2_parent() -> Path:
    found = discover()
    if found.v2 is None:
        pytest.skip("no cgroup v2 hierarchy is mounted here")
    controllers = (found.v2 / "cgroup.controllers").read_text().split()
    if not {"memory", "pids", "cpu"} <= set(controllers):
        pytest.skip(f"the cgroup v2 hierarchy here offers only {controllers}: "
                    "memory, pids and cpu are on cgroup v1 (tested by test_run.py)")
    return found.v2


BUSY_FOR_A_FIFTH_OF_A_SECOND = "import time\nwhile time.process_time() < 0.2: pass"


def test_real_v2_group_measures_and_kills(cgroups_usable: str) -> None:
    parent = real_v2_parent()
    group = CgroupV2(parent)
    try:
        group.set_limits(memory=256 << 20, cores=None, pids=32)
        busy = subprocess.Popen([sys.executable, "-c", BUSY_FOR_A_FIFTH_OF_A_SECOND],
                                preexec_fn=group.join)
        busy.wait()
        assert group.cpu().total >= 0.2
        assert group.memory_peak() is None or group.memory_peak() > 0
        sleeper = subprocess.Popen(["sleep", "60"], preexec_fn=group.join)
        group.kill_all()
        assert sleeper.wait(timeout=5) == -9
    finally:
        group.remove()
