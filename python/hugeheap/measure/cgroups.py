"""One fresh cgroup per run, as BenchExec measures: CPU time of every process
the tool starts, the group's memory peak, limits enforced by the kernel, and
a reliable end to every process of the run.

Two implementations of one interface: cgroups v2 (one directory, the unified
hierarchy) and cgroups v1 (one directory per controller hierarchy: cpuacct,
memory, freezer, pids, cpuset, hugetlb). Both take their root directories as
arguments, so tests can lay out a fake cgroupfs in a temporary directory. The
pages of the hugetlb pool a run holds are hugetlb_cgroup.py's to count."""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import signal
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError
from .cgroup_mounts import cgroup_mounts
from .machine import process_stat_fields

USER_HZ = os.sysconf("SC_CLK_TCK")
_counter = itertools.count()
# cgroup v2: the leaf a harness moves itself into, beside its runs' groups
# (no "hugeheap_" in it: leftovers are found by that prefix).
HARNESS_LEAF = "hugeheap-harness"
# On cgroup v2 root needs a group of its own as much as anyone (outside the
# root group); on v1, root may make groups anywhere.
OWN_CGROUP_FIX = ("start hugeheap in a cgroup of its own that it may manage: "
                  "`systemd-run --user --scope -p Delegate=yes hugeheap ...` (as root: "
                  "`systemd-run --scope -p Delegate=yes hugeheap ...`; on cgroup v1: as root)")


@dataclass
class CpuTimes:
    total: float
    user: float
    system: float


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as error:  # the kernel refuses on write: name the file
        if error.filename is None:
            raise OSError(error.errno, error.strerror, str(path)) from None
        raise


def _keyed(text: str) -> dict[str, int]:
    """Lines of 'key value' (cpu.stat, memory.stat, memory.events, ...)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            values[parts[0]] = int(parts[1])
    return values


def _rmdir_when_empty(path: Path) -> None:
    for _ in range(100):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise
            time.sleep(0.01)


class RunGroup(ABC):
    """The cgroup (or cgroups) of one run."""

    version: str

    @abstractmethod
    def procs_files(self) -> list[str]:
        """Files the tool's process writes its pid to before exec."""

    @abstractmethod
    def set_limits(self, memory: int | None, cores: list[int] | None, pids: int | None) -> None: ...

    @abstractmethod
    def cpu(self) -> CpuTimes: ...

    @abstractmethod
    def memory_peak(self) -> int | None:
        """Peak bytes of the group, None where the kernel does not keep it."""

    @abstractmethod
    def memory_now(self) -> int | None:
        """Bytes the group holds now, by the counter memory_peak is the peak of."""

    @abstractmethod
    def oom_kills(self) -> int: ...

    @abstractmethod
    def pids(self) -> list[int]: ...

    @abstractmethod
    def kill_all(self) -> None:
        """Ends every process of the group, even ones that keep forking."""

    @abstractmethod
    def anonymous_memory(self) -> tuple[int, int] | None:
        """(anonymous, of it in huge pages) bytes of the group, where the kernel
        counts them for the group as a whole (else the runner sums processes)."""

    @abstractmethod
    def remove(self) -> None: ...

    def join(self) -> None:
        """Moves the calling process in (join_procs)."""
        join_procs(self.procs_files())


def join_procs(procs_files: list[str]) -> None:
    """Writes the calling process's pid to each file: meant for the child
    between fork and exec, so only plain system calls."""
    pid = str(os.getpid()).encode()
    for path in procs_files:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, pid)
        finally:
            os.close(fd)


# --------------------------------------------------------------------- v2

class CgroupV2(RunGroup):
    version = "v2"
    CONTROLLERS = ("cpu", "memory", "pids", "cpuset", "hugetlb")

    def __init__(self, parent: Path, name: str | None = None) -> None:
        self.parent = parent
        available = set(_read(parent / "cgroup.controllers").split())
        wanted = [c for c in self.CONTROLLERS if c in available]
        missing = {"memory", "pids"} - available
        if missing:
            raise HarnessError(f"the controllers {sorted(missing)} are not enabled there")
        enabled = set(_read(parent / "cgroup.subtree_control").split())
        todo = [c for c in wanted if c not in enabled]
        if todo:
            make_room(parent)
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in todo))
        self.path = parent / (name or f"hugeheap_{os.getpid()}_{next(_counter)}")
        self.path.mkdir()
        self.has_cpu = "cpu" in wanted
        self.has_cpuset = "cpuset" in wanted

    @classmethod
    def existing(cls, path: Path) -> CgroupV2:
        """A group made earlier (by a harness that is gone)."""
        group = cls.__new__(cls)
        group.parent, group.path = path.parent, path
        controllers = set(_read(path / "cgroup.controllers").split())
        group.has_cpu, group.has_cpuset = "cpu" in controllers, "cpuset" in controllers
        return group

    def procs_files(self) -> list[str]:
        return [str(self.path / "cgroup.procs")]

    def set_limits(self, memory: int | None, cores: list[int] | None, pids: int | None) -> None:
        if memory is not None:
            _write(self.path / "memory.max", str(memory))
            if (self.path / "memory.swap.max").exists():
                _write(self.path / "memory.swap.max", "0")
        if cores is not None:
            if not self.has_cpuset:
                raise HarnessError("--cores: the cgroup v2 hierarchy has no cpuset controller")
            _write(self.path / "cpuset.cpus", ",".join(map(str, cores)))
        if pids is not None:
            _write(self.path / "pids.max", str(pids))

    def cpu(self) -> CpuTimes:
        stat = _keyed(_read(self.path / "cpu.stat"))
        return CpuTimes(stat.get("usage_usec", 0) / 1e6, stat.get("user_usec", 0) / 1e6,
                        stat.get("system_usec", 0) / 1e6)

    def memory_peak(self) -> int | None:
        return self._memory("memory.peak")  # kernels before 5.19 do not keep it

    def memory_now(self) -> int | None:
        return self._memory("memory.current")

    def _memory(self, name: str) -> int | None:
        try:
            return int(_read(self.path / name))
        except FileNotFoundError:
            return None

    def oom_kills(self) -> int:
        return _keyed(_read(self.path / "memory.events")).get("oom_kill", 0)

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.path / "cgroup.procs").split()]

    def kill_all(self) -> None:
        kill_file = self.path / "cgroup.kill"
        if kill_file.exists():
            _write(kill_file, "1")
        else:  # before Linux 5.14: freeze, kill, thaw
            _write(self.path / "cgroup.freeze", "1")
            for pid in self.pids():
                _kill(pid)
            _write(self.path / "cgroup.freeze", "0")
        _wait_empty(self.pids)

    def anonymous_memory(self) -> tuple[int, int] | None:
        stat = _keyed(_read(self.path / "memory.stat"))
        if "anon" not in stat or "anon_thp" not in stat:
            return None
        return stat["anon"], stat["anon_thp"]

    def remove(self) -> None:
        _rmdir_when_empty(self.path)


def make_room(parent: Path) -> None:
    """Makes parent able to give controllers to its children. cgroup v2's
    no-internal-process rule: a group that does may hold no process itself
    (the root group excepted). Where the harness was started in a group of
    its own (a systemd scope with Delegate=yes, a delegated subtree), it
    moves itself and the processes it started into a leaf beside its runs'
    groups, as BenchExec does; a group that also holds other processes (a
    login session's) is not the harness's to rearrange: HarnessError."""
    if not (parent / "cgroup.type").exists():  # the root group has no type
        return
    held = {int(p) for p in _read(parent / "cgroup.procs").split()}
    if not held:
        return
    others = sorted(held - _self_and_descendants())
    if others:
        raise HarnessError(f"it holds processes that are not hugeheap's (pids "
                           f"{', '.join(map(str, others[:5]))}), and a cgroup v2 group that "
                           f"gives controllers to groups inside it may hold none; "
                           f"{OWN_CGROUP_FIX}")
    leaf = parent / f"{HARNESS_LEAF}-{os.getpid()}"
    leaf.mkdir(exist_ok=True)
    for pid in sorted(held):
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile
            _write(leaf / "cgroup.procs", str(pid))
    for stale in parent.glob(f"{HARNESS_LEAF}-*"):  # leaves of harnesses that ended
        if stale != leaf:
            try:
                stale.rmdir()
            except OSError:
                pass  # a harness is still in it


def _self_and_descendants(proc: Path = Path("/proc")) -> set[int]:
    parents: dict[int, int] = {}
    for entry in proc.iterdir():
        if entry.name.isdigit() and (fields := process_stat_fields(int(entry.name), proc)):
            parents[int(entry.name)] = int(fields[1])
    found = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


# --------------------------------------------------------------------- v1

class CgroupV1(RunGroup):
    version = "v1"
    REQUIRED = ("cpuacct", "memory", "freezer")
    OPTIONAL = ("pids", "cpuset", "hugetlb")

    def __init__(self, parents: dict[str, Path], name: str | None = None) -> None:
        missing = [c for c in self.REQUIRED if c not in parents]
        if missing:
            raise HarnessError(f"cgroup v1 lacks the controllers {missing}")
        name = name or f"hugeheap_{os.getpid()}_{next(_counter)}"
        self.paths: dict[str, Path] = {}
        try:
            # Controllers mounted together share one directory.
            for controller, parent in parents.items():
                path = parent / name
                if path not in self.paths.values():
                    path.mkdir()
                self.paths[controller] = path
            if "cpuset" in self.paths:
                # A new cpuset group starts empty: it gets its parent's cpus and mems.
                for key in ("cpuset.cpus", "cpuset.mems"):
                    _write(self.paths["cpuset"] / key, _read(parents["cpuset"] / key).strip())
        except OSError:
            self.remove()
            raise

    @classmethod
    def existing(cls, paths: dict[str, Path]) -> CgroupV1:
        """A group made earlier (by a harness that is gone), per controller."""
        group = cls.__new__(cls)
        group.paths = dict(paths)
        return group

    def procs_files(self) -> list[str]:
        return sorted({str(p / "cgroup.procs") for p in self.paths.values()})

    def set_limits(self, memory: int | None, cores: list[int] | None, pids: int | None) -> None:
        mem = self.paths["memory"]
        if memory is not None:
            _write(mem / "memory.limit_in_bytes", str(memory))
            if (mem / "memory.memsw.limit_in_bytes").exists():
                _write(mem / "memory.memsw.limit_in_bytes", str(memory))  # no swapping out
        if cores is not None:
            if "cpuset" not in self.paths:
                raise HarnessError("--cores: no cpuset cgroup controller on this machine")
            _write(self.paths["cpuset"] / "cpuset.cpus", ",".join(map(str, cores)))
        if pids is not None and "pids" in self.paths:
            _write(self.paths["pids"] / "pids.max", str(pids))

    def cpu(self) -> CpuTimes:
        acct = self.paths["cpuacct"]
        total = int(_read(acct / "cpuacct.usage")) / 1e9
        stat = _keyed(_read(acct / "cpuacct.stat"))
        user, system = stat.get("user", 0) / USER_HZ, stat.get("system", 0) / USER_HZ
        # cpuacct.stat ticks are coarse; split the exact total in their ratio.
        if user + system > 0:
            return CpuTimes(total, total * user / (user + system), total * system / (user + system))
        return CpuTimes(total, total, 0.0)

    def memory_peak(self) -> int | None:
        return self._memory("max_usage_in_bytes")

    def memory_now(self) -> int | None:
        return self._memory("usage_in_bytes")

    def _memory(self, counter: str) -> int | None:
        """Memory and swap's counter where the kernel keeps it (memsw), else memory's."""
        for name in (f"memory.memsw.{counter}", f"memory.{counter}"):
            with contextlib.suppress(FileNotFoundError):
                return int(_read(self.paths["memory"] / name))
        return None

    def oom_kills(self) -> int:
        control = _keyed(_read(self.paths["memory"] / "memory.oom_control"))
        return control.get("oom_kill", 0)

    def pids(self) -> list[int]:
        return [int(p) for p in _read(self.paths["freezer"] / "cgroup.procs").split()]

    def kill_all(self) -> None:
        if "freezer" not in self.paths:  # a group its harness did not finish making
            for path in set(self.paths.values()):
                for word in _read(path / "cgroup.procs").split():
                    _kill(int(word))
            return
        freezer = self.paths["freezer"] / "freezer.state"
        for _ in range(50):  # new processes may appear until the group is frozen
            _write(freezer, "FROZEN")
            for _ in range(100):
                if _read(freezer).strip() == "FROZEN":
                    break
                time.sleep(0.001)
            for pid in self.pids():
                _kill(pid)
            _write(freezer, "THAWED")
            if _wait_empty(self.pids, timeout=0.5):
                return

    def anonymous_memory(self) -> tuple[int, int] | None:
        return None  # v1 keeps no per-group huge-page count: the runner sums processes

    def remove(self) -> None:
        for path in set(self.paths.values()):
            _rmdir_when_empty(path)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # ended meanwhile
        os.kill(pid, signal.SIGKILL)


def _wait_empty(pids: Callable[[], list[int]], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pids():
            return True
        time.sleep(0.002)
    return False


# --------------------------------------------------------------- discovery

@dataclass
class Hierarchies:
    """Where this process's cgroups are, per version."""
    v2: Path | None
    v1: dict[str, Path]


def discover(mountinfo: str | None = None, self_cgroup: str | None = None) -> Hierarchies:
    if self_cgroup is None:
        self_cgroup = Path("/proc/self/cgroup").read_text()
    own_v1: dict[str, str] = {}
    own_v2: str | None = None
    for line in self_cgroup.splitlines():
        number, controllers, path = line.split(":", 2)
        if number == "0" and controllers == "":
            own_v2 = path
        for controller in controllers.split(","):
            if controller:
                own_v1[controller] = path
    v2: Path | None = None
    v1: dict[str, Path] = {}
    for mount in cgroup_mounts(mountinfo):
        if mount.unified and own_v2 is not None:
            v2 = mount.mount_point / os.path.relpath(own_v2, mount.root)
            if v2.name.startswith(f"{HARNESS_LEAF}-"):  # moved there by make_room
                v2 = v2.parent
        elif not mount.unified:
            for controller in mount.options:
                if controller in own_v1:
                    v1[controller] = mount.mount_point / os.path.relpath(own_v1[controller],
                                                                          mount.root)
    return Hierarchies(v2, v1)


def v2_controllers(directory: Path, listing: str = "cgroup.controllers") -> list[str] | None:
    """The controllers a v2 group has, or with listing "cgroup.subtree_control"
    those it offers its children; None if unreadable."""
    try:
        return _read(directory / listing).split()
    except OSError:
        return None


def create_run_group(prefix: str = "hugeheap", hierarchies: Hierarchies | None = None
                     ) -> tuple[RunGroup | None, list[str]]:
    """A fresh group for one run, or None with the reasons none could be made.
    Its name starts with prefix_, so that leftover_groups.end_leftover_groups(prefix) finds it.
    hierarchies: where to make it (default: this process's, discovered)."""
    reasons: list[str] = []
    found = hierarchies or discover()
    name = f"{prefix}_{os.getpid()}_{next(_counter)}"
    if found.v2 is not None:
        try:
            return CgroupV2(found.v2, name), reasons
        except (OSError, HarnessError) as error:
            reasons.append(f"cgroup v2 at {found.v2}: {_explained(error)}")
    if found.v1:
        wanted = {c: p for c, p in found.v1.items() if c in CgroupV1.REQUIRED + CgroupV1.OPTIONAL}
        try:
            return CgroupV1(wanted, name), reasons
        except (OSError, HarnessError) as error:
            reasons.append(f"cgroup v1: {_explained(error)}")
    if not found.v1 and found.v2 is None:
        reasons.append("no cgroup hierarchy is mounted")
    return None, reasons


def usable_version(hierarchies: Hierarchies | None = None) -> tuple[str | None, list[str]]:
    """The cgroup version runs would get here ("v1", "v2"), found by making and
    removing a group; None with the reasons where none can be made."""
    group, reasons = create_run_group("hugeheap_probe", hierarchies)
    if group is None:
        return None, reasons
    group.remove()
    return group.version, reasons


def _explained(error: Exception) -> str:
    if isinstance(error, PermissionError):
        return f"no permission to manage groups there ({error.filename}); {OWN_CGROUP_FIX}"
    if isinstance(error, OSError) and error.errno == errno.EBUSY:
        return (f"the kernel refused to give controllers to groups inside it ({error.filename}:"
                f" busy: it holds processes); {OWN_CGROUP_FIX}")
    return str(error)
