"""The cgroups v1 code, the search for groups a killed harness left and the
probe of which version runs get, against fake cgroup trees (temporary
directories laid out like cgroupfs: one directory per controller hierarchy).

A fake tree cannot remove a directory that still holds files the way the
kernel removes a group, nor empty cgroup.procs when its processes die: the
tests stand in for those two steps of the kernel."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from hugeheap.errors import HarnessError
from hugeheap.measure import cgroups
from hugeheap.measure.cgroups import CgroupV1, Hierarchies, usable_version
from hugeheap.measure.leftover_groups import end_leftover_groups

CONTROLLERS = ("cpuacct", "memory", "freezer", "pids", "cpuset")


@pytest.fixture
def like_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """rmdir of a group removes its control files; killed processes leave."""
    monkeypatch.setattr(cgroups, "_rmdir_when_empty",
                        lambda path: shutil.rmtree(path, ignore_errors=True))
    monkeypatch.setattr(cgroups, "_wait_empty", lambda pids, timeout=5.0: True)


def fake_hierarchies(tmp_path: Path, controllers: tuple[str, ...] = CONTROLLERS
                     ) -> dict[str, Path]:
    parents = {}
    for controller in controllers:
        parent = tmp_path / controller
        parent.mkdir()
        parents[controller] = parent
    if "cpuset" in parents:
        (parents["cpuset"] / "cpuset.cpus").write_text("0-1\n")
        (parents["cpuset"] / "cpuset.mems").write_text("0\n")
    return parents


def populate_like_the_kernel(group: CgroupV1) -> None:
    """What the kernel puts into a new group's directories."""
    files = {
        "cpuacct": {"cpuacct.usage": "2500000000\n", "cpuacct.stat": "user 200\nsystem 50\n",
                    "cgroup.procs": ""},
        "memory": {"memory.limit_in_bytes": "9223372036854771712\n",
                   "memory.memsw.limit_in_bytes": "9223372036854771712\n",
                   "memory.max_usage_in_bytes": "1000\n",
                   "memory.memsw.max_usage_in_bytes": "2000\n",
                   "memory.usage_in_bytes": "600\n", "memory.memsw.usage_in_bytes": "700\n",
                   "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n",
                   "cgroup.procs": ""},
        "freezer": {"freezer.state": "THAWED\n", "cgroup.procs": ""},
        "pids": {"pids.max": "max\n", "cgroup.procs": ""},
        "cpuset": {"cgroup.procs": ""},
    }
    for controller, path in group.paths.items():
        for name, text in files[controller].items():
            (path / name).write_text(text)


def test_a_group_in_every_hierarchy_gets_its_parents_cpus(tmp_path: Path) -> None:
    parents = fake_hierarchies(tmp_path)
    group = CgroupV1(parents, name="run1")
    assert {c: p.name for c, p in group.paths.items()} == {c: "run1" for c in CONTROLLERS}
    assert (group.paths["cpuset"] / "cpuset.cpus").read_text() == "0-1"
    assert (group.paths["cpuset"] / "cpuset.mems").read_text() == "0"
    assert group.procs_files() == sorted(str(parents[c] / "run1" / "cgroup.procs")
                                         for c in CONTROLLERS)


def test_controllers_mounted_together_share_one_directory(tmp_path: Path) -> None:
    shared = tmp_path / "cpu,cpuacct"
    shared.mkdir()
    parents = {**fake_hierarchies(tmp_path, ("memory", "freezer")), "cpuacct": shared,
               "cpu": shared}
    group = CgroupV1(parents, name="run")
    assert group.paths["cpu"] == group.paths["cpuacct"] == shared / "run"
    assert len(group.procs_files()) == 3


def test_missing_controllers_are_named(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="freezer"):
        CgroupV1(fake_hierarchies(tmp_path, ("cpuacct", "memory")), name="run")


def test_limits_are_written(tmp_path: Path) -> None:
    group = CgroupV1(fake_hierarchies(tmp_path), name="run")
    populate_like_the_kernel(group)
    group.set_limits(memory=512 << 20, cores=[1], pids=64)
    memory = group.paths["memory"]
    assert (memory / "memory.limit_in_bytes").read_text() == str(512 << 20)
    assert (memory / "memory.memsw.limit_in_bytes").read_text() == str(512 << 20)
    assert (group.paths["cpuset"] / "cpuset.cpus").read_text() == "1"
    assert (group.paths["pids"] / "pids.max").read_text() == "64"


def test_cores_without_a_cpuset_hierarchy_are_refused(tmp_path: Path) -> None:
    group = CgroupV1(fake_hierarchies(tmp_path, ("cpuacct", "memory", "freezer")), name="run")
    with pytest.raises(HarnessError, match="cpuset"):
        group.set_limits(memory=None, cores=[0], pids=None)


def test_counters_are_read(tmp_path: Path) -> None:
    group = CgroupV1(fake_hierarchies(tmp_path), name="run")
    populate_like_the_kernel(group)
    cpu = group.cpu()
    # The exact total, split in the ratio of the coarse user and system ticks.
    assert (cpu.total, cpu.user, cpu.system) == pytest.approx((2.5, 2.0, 0.5))
    assert group.memory_peak() == 2000  # memory and swap together, where the kernel counts it
    assert group.memory_now() == 700  # by the same counter, now
    for name in ("max_usage_in_bytes", "usage_in_bytes"):
        (group.paths["memory"] / f"memory.memsw.{name}").unlink()
    assert (group.memory_peak(), group.memory_now()) == (1000, 600)
    assert group.oom_kills() == 1
    assert group.anonymous_memory() is None  # v1 keeps no huge-page count per group


def test_kill_freezes_kills_and_thaws(tmp_path: Path, like_the_kernel: None,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    group = CgroupV1(fake_hierarchies(tmp_path), name="run")
    populate_like_the_kernel(group)
    victim = subprocess.Popen(["sleep", "60"])
    (group.paths["freezer"] / "cgroup.procs").write_text(f"{victim.pid}\n")
    states: list[str] = []
    real_write = cgroups._write

    def recording_write(path: Path, value: str) -> None:
        if path.name == "freezer.state":
            states.append(value)
        real_write(path, value)

    monkeypatch.setattr(cgroups, "_write", recording_write)
    group.kill_all()
    assert victim.wait(timeout=5) == -9
    assert states == ["FROZEN", "THAWED"]


def test_leftover_groups_of_one_prefix_are_ended_and_removed(tmp_path: Path,
                                                             like_the_kernel: None) -> None:
    parents = fake_hierarchies(tmp_path)
    found = Hierarchies(v2=None, v1=parents)
    ours = [CgroupV1(parents, name=f"hh_c1_{n}") for n in range(2)]
    other = CgroupV1(parents, name="hh_c2_0")
    victims = []
    for group in [*ours, other]:
        populate_like_the_kernel(group)
    for group in ours:
        victim = subprocess.Popen(["sleep", "60"])
        (group.paths["freezer"] / "cgroup.procs").write_text(f"{victim.pid}\n")
        victims.append(victim)
    assert end_leftover_groups("hh_c1", found) == 2
    assert [v.wait(timeout=5) for v in victims] == [-9, -9]
    for controller, parent in parents.items():
        assert sorted(p.name for p in parent.iterdir() if p.is_dir()) == ["hh_c2_0"], controller


def test_a_half_made_group_is_ended_too(tmp_path: Path, like_the_kernel: None) -> None:
    """A harness killed while making a group leaves it in some hierarchies only."""
    parents = fake_hierarchies(tmp_path)
    (parents["memory"] / "hh_c1_0").mkdir()
    (parents["memory"] / "hh_c1_0" / "cgroup.procs").write_text("")
    assert end_leftover_groups("hh_c1", Hierarchies(None, parents)) == 1
    assert not (parents["memory"] / "hh_c1_0").exists()


def test_usable_version_probes_by_making_a_group(tmp_path: Path, like_the_kernel: None) -> None:
    parents = fake_hierarchies(tmp_path)
    assert usable_version(Hierarchies(None, parents)) == ("v1", [])
    assert not any(p.is_dir() for parent in parents.values() for p in parent.iterdir())


def test_usable_version_falls_back_to_v1_and_says_why(tmp_path: Path,
                                                      like_the_kernel: None) -> None:
    v2 = tmp_path / "unified"
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("hugetlb\n")  # as on this project's machines
    (v2 / "cgroup.subtree_control").write_text("")
    version, reasons = usable_version(Hierarchies(v2, fake_hierarchies(tmp_path)))
    assert version == "v1"
    assert len(reasons) == 1 and "memory" in reasons[0] and str(v2) in reasons[0]


def test_usable_version_without_any_hierarchy() -> None:
    assert usable_version(Hierarchies(None, {})) == (None, ["no cgroup hierarchy is mounted"])
