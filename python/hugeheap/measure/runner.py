"""One measured run: the library behind `hugeheap run`, and what every run of
a campaign is measured by.

The tool starts inside a fresh cgroup (it joins between fork and exec, so
nothing it starts escapes), with the allocator in its environment only: the
environment starts from the harness's own without any variable that chooses
or configures an allocator (the shell's LD_PRELOAD, GLIBC_TUNABLES, MALLOC_*,
...), so that every mode, the baseline first, gets exactly what it sets. While
it runs, the wall-time limit is a timer, the CPU-time limit is checked by
polling the group (more often as the limit nears: at most 0.1 s per core
between checks near it, plus however late the machine wakes the harness,
which the result reports), and the memory limit is the kernel's. When the
tool's main process ends, or a limit is reached, every process left in the
group is killed, and the group's counters are read and the group removed.

`run` checks its arguments and then trusts them; the run itself is three
steps (prepare, execute, collect), and one `finally` releases everything the
run holds (its processes, its cgroup, the TLB counter file, every opened
file) on every path, an exception included."""

from __future__ import annotations

import ctypes
import datetime
import errno
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from ..errors import HarnessError
from . import machine, perf
from .allocators import AllocatorMode, resolve
from .cgroups import CpuTimes, RunGroup, create_run_group
from .hugepages import HugeShareSampler
from .programs import find_program

DEFAULT_PIDS_LIMIT = 4096  # contains fork storms
CPU_CHECK_INTERVAL_S = 0.1  # at most, per core, between checks of the CPU-time limit near it
LATE_WARNING_S = 0.1  # a harness woken later than this says so: limits may overshoot by it
# Steal time over this share of a run's wall time, and at least 0.1 s (ten
# of /proc/stat's ticks, so that one tick in a short run is not news), is
# said in a warning: the host of this virtual machine ran other work on the
# run's CPUs meanwhile.
STEAL_WARNING_SHARE = 0.05
STEAL_WARNING_MIN_S = 0.1
# BenchExec's cross-check of the two CPU times: rusage (the main process and
# what it waited for, counted from the fork) exceeding the cgroup's (every
# process, counted from joining) by more than this means a process left the
# group while it ran; BenchExec then warns and reports the rusage figure.
RUSAGE_CHECK_FROM_S = 0.5
RUSAGE_TOLERANCE = 0.95  # rusage * this > cgroup: beyond the tolerance

# Variables that choose or configure a program's allocator. The tool's
# environment starts without them, whatever the shell set; a mode, the
# suite or --env sets them again where wanted.
ALLOCATOR_VARIABLES = frozenset({"LD_PRELOAD", "LD_AUDIT", "GLIBC_TUNABLES", "GLIBC_THP_ALWAYS",
                                 "JE_MALLOC_CONF", "_RJEM_MALLOC_CONF"})
ALLOCATOR_PREFIXES = ("MALLOC_", "HUGEHEAP_", "MIMALLOC_", "TCMALLOC_", "JEMALLOC_")


def is_allocator_variable(name: str) -> bool:
    return name in ALLOCATOR_VARIABLES or name.startswith(ALLOCATOR_PREFIXES)


def tool_environment(own: Mapping[str, str], extra: Mapping[str, str],
                     alloc: AllocatorMode) -> tuple[dict[str, str], dict[str, Any]]:
    """The tool's environment: own (the harness's) without its allocator
    variables, then extra (--env, the suite's), then the mode's; and the
    record of it against own: {"set": what the tool got that own has not
    (or not so), "withheld": names of own's variables it did not get}."""
    env = {name: value for name, value in own.items() if not is_allocator_variable(name)}
    env.update(extra)
    env.update(alloc.env)
    return env, {"set": {k: v for k, v in sorted(env.items()) if own.get(k) != v},
                 "withheld": sorted(k for k in own if k not in env)}


@dataclass
class Limits:
    cpu_s: float | None = None
    wall_s: float | None = None
    memory_bytes: int | None = None
    cores: list[int] | None = None
    pids: int | None = DEFAULT_PIDS_LIMIT


@dataclass
class RunResult:
    command: list[str]
    start_time: str
    status: str  # ok, timeout, memout, signal, error
    # cputime, walltime, memory, killed, failed; None when the tool ended by itself
    termination_reason: str | None
    exit_code: int | None
    signal: int | None
    cputime_s: float | None
    cputime_user_s: float | None
    cputime_system_s: float | None
    walltime_s: float
    memory_peak_bytes: int | None
    alloc: str
    alloc_library: str | None
    huge_share: float | None
    tlb_misses: int | None
    tlb_misses_reason: str | None
    thp: dict[str, str | None]
    reliable: bool
    warnings: list[str]
    cgroup_version: str | None
    # what the harness did to the tool's environment: {"set": {name: value},
    # "withheld": [name]} against the harness's own (tool_environment)
    environment: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    kernel: str = ""
    glibc: str | None = None
    cpu_model: str | None = None
    hostname: str = ""
    # The latest the harness woke after it meant to check the limits: how far
    # past a limit the run may have gone beyond the designed checking interval.
    limit_check_lateness_s: float = 0.0
    # Steal time of the run's CPUs (all, where it had none assigned) while it
    # ran: time the host of a virtual machine gave to other work, which the
    # wall time contains and the CPU time does not. None where the kernel
    # does not count it.
    steal_time_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def run(command: list[str], limits: Limits | None = None, alloc: AllocatorMode | None = None,
        stdin: str | None = None, output: str | None = None,
        extra_env: dict[str, str] | None = None, measure_tlb: bool = True,
        tool_stdout: IO[bytes] | int | None = None, group_prefix: str = "hugeheap",
        end_with_parent: bool = False, cwd: str | None = None) -> RunResult:
    """Runs the command once, measured; HarnessError for bad input, before
    anything starts. alloc: a resolved mode (default: the system allocator);
    extra_env: variables for the tool (allocator variables among them too);
    group_prefix names the run's cgroup (cgroups.end_leftover_groups finds it);
    end_with_parent: the tool is killed if the calling process dies first;
    cwd: the directory the tool starts in (default: this process's)."""
    limits = limits or Limits()
    alloc = alloc or resolve("system")
    if alloc.missing:
        raise HarnessError(f"--alloc {alloc.name}: {alloc.missing}")
    program = resolve_command(command)
    _check_limits(limits)
    for path, option in ((stdin, "--stdin"), (output, "--output")):
        if path is not None and os.path.isdir(path):
            raise HarnessError(f"{option} {path}: is a directory")
    if cwd is not None and not os.path.isdir(cwd):
        raise HarnessError(f"the run's directory {cwd} is not a directory")
    held = _Held()
    try:
        prepared = _prepare(held, command, program, limits, alloc, stdin, output, extra_env,
                            measure_tlb, tool_stdout, group_prefix, end_with_parent, cwd)
        executed = _execute(held, prepared)
        return _collect(held, prepared, executed)
    finally:
        held.release()


# ------------------------------------------------------------------ checks

def resolve_command(command: list[str]) -> str:
    """The program of command, found in PATH where it has no slash
    (programs.find_program); HarnessError when there is none to run."""
    if not command:
        raise HarnessError("no command given: write it after `--`")
    return find_program(command[0])


def _check_limits(limits: Limits) -> None:
    for name, value in (("cpu time", limits.cpu_s), ("wall time", limits.wall_s),
                        ("memory", limits.memory_bytes), ("pids", limits.pids)):
        if value is not None and value <= 0:
            raise HarnessError(f"the {name} limit must be more than zero (it is {value})")
    if limits.cores is not None:
        usable = os.sched_getaffinity(0)
        outside = sorted(set(limits.cores) - usable)
        if not limits.cores or outside:
            raise HarnessError(f"--cores: {outside or 'no cores'} not among the cores this "
                               f"process may use ({sorted(usable)})")


# --------------------------------------------------------------- resources

@dataclass
class _Held:
    """What a run holds until it ends; release() gives all of it back, in the
    one `finally` of run()."""
    files: list[IO[bytes]] = field(default_factory=list)
    group: RunGroup | None = None
    tlb_file: str | None = None
    pid: int | None = None  # the tool's main process until it is reaped

    def open(self, path: str, mode: str, option: str) -> IO[bytes]:
        try:
            handle: IO[bytes] = open(path, mode)  # closed by release()
        except OSError as error:
            raise HarnessError(f"{option} {path}: cannot open it ({error.strerror})") from None
        self.files.append(handle)
        return handle

    def close_files(self) -> None:
        while self.files:
            self.files.pop().close()

    def release(self) -> None:
        try:
            if self.pid is not None:  # an exception left the tool running or unreaped
                _end_everything(self.pid, self.group)
                try:
                    os.waitpid(self.pid, 0)
                except ChildProcessError:
                    pass
                self.pid = None
            elif self.group is not None:
                self.group.kill_all()
        finally:
            self.close_files()
            if self.group is not None:
                self.group.remove()
                self.group = None
            if self.tlb_file is not None:
                try:
                    os.unlink(self.tlb_file)
                except FileNotFoundError:
                    pass
                self.tlb_file = None


# ----------------------------------------------------------------- prepare

@dataclass
class _Prepared:
    command: list[str]
    argv: list[str]
    env: dict[str, str]
    environment: dict[str, Any]  # the record of env (tool_environment)
    limits: Limits
    alloc: AllocatorMode
    stdin: IO[bytes] | int
    stdout: IO[bytes] | int | None
    end_with_parent: bool
    tlb_reason: str | None
    warnings: list[str]
    reliable: bool
    info: dict[str, object]
    thp: dict[str, str | None]
    cwd: str | None


def _prepare(held: _Held, command: list[str], program: str, limits: Limits,
             alloc: AllocatorMode, stdin: str | None, output: str | None,
             extra_env: dict[str, str] | None, measure_tlb: bool,
             tool_stdout: IO[bytes] | int | None, group_prefix: str,
             end_with_parent: bool, cwd: str | None) -> _Prepared:
    """Opens the files, makes the cgroup with its limits and the TLB counter
    file, each recorded in held as soon as it exists."""
    stdin_file: IO[bytes] | int = (held.open(stdin, "rb", "--stdin") if stdin is not None
                                   else subprocess.DEVNULL)
    stdout: IO[bytes] | int | None = (held.open(output, "wb", "--output") if output is not None
                                      else tool_stdout)
    warnings: list[str] = []
    if machine.swap_in_use():
        warnings.append("swap is in use on this machine: memory figures may be low")
    group, reasons = create_run_group(group_prefix)
    held.group = group
    if group is None:
        warnings.append("no cgroup could be made (" + "; ".join(reasons) + "): CPU time and "
                        "memory come from rusage (descendants that are not waited for are "
                        "missed) and limits other than wall time are not enforced")
    else:
        try:
            group.set_limits(limits.memory_bytes, limits.cores, limits.pids)
        except (OSError, HarnessError) as error:
            raise HarnessError(f"cannot set the limits of the run's cgroup: {error}") from None
    env, environment = tool_environment(os.environ, extra_env or {}, alloc)
    argv = [program, *command[1:]]
    tlb_reason: str | None = "not asked for"
    if measure_tlb:
        tlb_reason = perf.unavailable_reason()
        if tlb_reason is None:
            handle, held.tlb_file = tempfile.mkstemp(prefix="hugeheap-tlb-", suffix=".csv")
            os.close(handle)
            argv = perf.wrap(argv, held.tlb_file)
    return _Prepared(command, argv, env, environment, limits, alloc, stdin_file, stdout,
                     end_with_parent, tlb_reason, warnings, group is not None,
                     machine.describe(), machine.thp_settings(), cwd)


# ----------------------------------------------------------------- execute

@dataclass
class _Executed:
    start_time: str
    walltime: float
    reason: str | None  # why the harness ended the run; None if it ended by itself
    wait_status: int | None  # None: the tool never started
    usage: Any  # resource.struct_rusage of the main process and what it waited for
    huge_share: float | None
    lateness: float
    start_error: str | None = None
    steal: float | None = None  # seconds (machine.steal_seconds of the run's CPUs)


def _execute(held: _Held, prepared: _Prepared) -> _Executed:
    """Starts the tool, watches its limits, ends whatever is left of it and
    reaps it."""
    group, limits = held.group, prepared.limits

    def enter_group() -> None:  # in the child, between fork and exec
        if prepared.end_with_parent:
            die_with_parent()
        if group is not None:
            group.join()
        elif limits.cores:
            os.sched_setaffinity(0, limits.cores)

    start_time = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    steal_before = machine.steal_seconds(limits.cores)
    start = time.monotonic()
    try:
        process = subprocess.Popen(
            prepared.argv, env=prepared.env, stdin=prepared.stdin, stdout=prepared.stdout,
            stderr=subprocess.STDOUT if prepared.stdout is not None else None,
            preexec_fn=enter_group, start_new_session=True, cwd=prepared.cwd)
    except OSError as error:
        # The program is there but would not start (format, permission, ...):
        # a measured outcome of the run, not a harness error.
        return _Executed(start_time, time.monotonic() - start, "failed", None, None, None,
                         0.0, f"cannot start {prepared.argv[0]}: {error.strerror}")
    held.pid = process.pid
    held.close_files()  # the tool has its copies
    sampler = HugeShareSampler(
        group.anonymous_memory if group is not None else lambda: None,
        group.pids if group is not None else lambda: [process.pid])
    watch = _ExitWatch(process.pid)
    try:
        reason, lateness = _supervise(watch, group, limits, start, sampler)
    except KeyboardInterrupt:  # the harness was told to stop: end the run, keep what it measured
        reason, lateness = "killed", 0.0
    finally:
        watch.close()
    if reason is not None:  # a limit was reached first, or we were told to stop
        _end_everything(process.pid, group)
    _, wait_status, usage = os.wait4(process.pid, 0)
    held.pid = None
    process.returncode = 0  # reaped here; keep Popen from waiting again
    walltime = time.monotonic() - start
    steal_after = machine.steal_seconds(limits.cores)
    _end_everything(process.pid, group)  # whatever the main process left behind
    steal = None if steal_before is None or steal_after is None else \
        max(0.0, steal_after - steal_before)
    return _Executed(start_time, walltime, reason, wait_status, usage, sampler.best, lateness,
                     steal=steal)


class _ExitWatch:
    """Waits for a process to exit without reaping it: through a pidfd
    (Linux 5.3+), or by polling waitid where the kernel has no pidfd_open."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pidfd: int | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
        except OSError as error:
            if error.errno not in (errno.ENOSYS, errno.EPERM, errno.EINVAL):
                raise
        if self.pidfd is not None:
            self.poller = select.poll()
            self.poller.register(self.pidfd, select.POLLIN)

    def exited_within(self, seconds: float) -> bool:
        if self.pidfd is not None:
            return bool(self.poller.poll(seconds * 1000))
        deadline = time.monotonic() + seconds
        while True:
            if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.005))

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


def _supervise(watch: _ExitWatch, group: RunGroup | None, limits: Limits, start: float,
               sampler: HugeShareSampler) -> tuple[str | None, float]:
    """Waits until the main process ends (None) or a time limit is reached
    (the termination reason); also returns how late the harness woke at worst.
    The process is not reaped here."""
    cores = len(limits.cores) if limits.cores else (os.cpu_count() or 1)
    next_sample = start + 0.01
    lateness = 0.0
    while True:
        now = time.monotonic()
        wait = 0.5
        if limits.wall_s is not None:
            wait = min(wait, max(0.0, start + limits.wall_s - now))
        if limits.cpu_s is not None:
            used = group.cpu().total if group is not None else _cpu_of_process(watch.pid)
            if used >= limits.cpu_s:
                return "cputime", lateness
            # Check more often as the limit nears: the run overshoots by at
            # most CPU_CHECK_INTERVAL_S per core it keeps busy.
            wait = min(wait, max(0.005, min(CPU_CHECK_INTERVAL_S, (limits.cpu_s - used) / cores)))
        wait = min(wait, max(0.0, next_sample - now))
        if watch.exited_within(wait):
            return None, lateness
        woke = time.monotonic()
        lateness = max(lateness, woke - (now + wait))
        if limits.wall_s is not None and woke - start >= limits.wall_s:
            return "walltime", lateness
        if woke >= next_sample:
            sampler.sample()
            next_sample = woke + 0.1


def _cpu_of_process(pid: int) -> float:
    """CPU seconds of a process and its waited-for children (without cgroups:
    all /proc says)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _end_everything(pid: int, group: RunGroup | None) -> None:
    if group is not None:
        group.kill_all()
        return
    try:
        os.killpg(pid, signal.SIGKILL)  # the tool's session: all we can reach without cgroups
    except (ProcessLookupError, PermissionError):
        pass


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child between fork and exec may not


def die_with_parent() -> None:
    """SIGKILL for the calling process when its parent ends (Linux prctl)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


# ----------------------------------------------------------------- collect

def steal_is_notable(steal: float | None, walltime: float) -> bool:
    """Whether a run lost enough of its wall time to steal to say so."""
    return steal is not None and steal >= STEAL_WARNING_MIN_S and \
        steal > STEAL_WARNING_SHARE * walltime


def _steal_warning(steal: float, walltime: float) -> str:
    return (f"the host of this virtual machine took {steal:.2f} s of the run's CPUs for other "
            f"work during its {walltime:.2f} s (steal time, {steal / walltime:.0%}): its wall "
            "time is longer by up to that much, and its CPU time may be too (a busy host "
            "shares caches); compare runs made side by side")


def _cross_checked(group_cpu: CpuTimes, usage: Any, warnings: list[str]) -> CpuTimes:
    """The group's CPU time, or rusage's where it exceeds the group's beyond
    BenchExec's tolerance (a process left the group), with a warning."""
    waited = usage.ru_utime + usage.ru_stime
    if waited <= RUSAGE_CHECK_FROM_S or waited * RUSAGE_TOLERANCE <= group_cpu.total:
        return group_cpu
    warnings.append(f"CPU time by rusage ({waited:.3f} s) exceeds the cgroup's "
                    f"({group_cpu.total:.3f} s) by more than BenchExec tolerates (5%, above "
                    f"{RUSAGE_CHECK_FROM_S} s): a process left the run's cgroup while it ran; "
                    "the CPU time given is rusage's")
    return CpuTimes(waited, usage.ru_utime, usage.ru_stime)


def _collect(held: _Held, prepared: _Prepared, executed: _Executed) -> RunResult:
    """Reads the group's counters and the TLB counts into the result."""
    group, limits, warnings = held.group, prepared.limits, prepared.warnings
    cpu: CpuTimes | None = None
    peak: int | None = None
    oom = 0
    usage = executed.usage
    if executed.start_error is not None:
        warnings.append(executed.start_error)
    elif group is not None:
        cpu, peak, oom = group.cpu(), group.memory_peak(), group.oom_kills()
        if peak is None:
            warnings.append("this kernel keeps no memory peak for a cgroup (memory.peak came "
                            "with Linux 5.19): peak memory not measured")
        cpu = _cross_checked(cpu, usage, warnings)
    else:
        cpu = CpuTimes(usage.ru_utime + usage.ru_stime, usage.ru_utime, usage.ru_stime)
        peak = usage.ru_maxrss * 1024
    if executed.lateness > LATE_WARNING_S:
        warnings.append(f"the machine woke the harness up to {executed.lateness:.2f} s late: "
                        "time limits may have been overshot by that much")
    if steal_is_notable(executed.steal, executed.walltime):
        warnings.append(_steal_warning(executed.steal or 0.0, executed.walltime))

    reason = executed.reason
    status_word = executed.wait_status
    exit_code = sig = None
    if status_word is not None:
        exit_code = os.WEXITSTATUS(status_word) if os.WIFEXITED(status_word) else None
        sig = os.WTERMSIG(status_word) if os.WIFSIGNALED(status_word) else None
    if reason is None and oom > 0:
        reason = "memory"
    status = {"cputime": "timeout", "walltime": "timeout", "memory": "memout",
              "killed": "signal", "failed": "error"}.get(
        reason or "", "signal" if sig is not None else "ok")
    if reason is None and sig == signal.SIGKILL and limits.memory_bytes and \
            peak is not None and peak >= 0.95 * limits.memory_bytes:
        status, reason = "memout", "memory"

    tlb: int | None = None
    tlb_reason = prepared.tlb_reason
    if held.tlb_file is not None and executed.start_error is None:
        tlb, tlb_reason = perf.read(held.tlb_file)

    info = prepared.info
    return RunResult(
        command=prepared.command, start_time=executed.start_time, status=status,
        termination_reason=reason, exit_code=exit_code, signal=sig,
        cputime_s=cpu.total if cpu else None, cputime_user_s=cpu.user if cpu else None,
        cputime_system_s=cpu.system if cpu else None, walltime_s=executed.walltime,
        memory_peak_bytes=peak, alloc=prepared.alloc.name,
        alloc_library=prepared.alloc.library, huge_share=executed.huge_share,
        tlb_misses=tlb, tlb_misses_reason=tlb_reason, thp=prepared.thp,
        reliable=prepared.reliable, warnings=warnings,
        cgroup_version=group.version if group else None, environment=prepared.environment,
        limits={"cpu_s": limits.cpu_s, "wall_s": limits.wall_s,
                "memory_bytes": limits.memory_bytes, "cores": limits.cores,
                "pids": limits.pids},
        kernel=str(info["kernel"]), glibc=info["glibc"],  # type: ignore[arg-type]
        cpu_model=info["cpu_model"], hostname=str(info["hostname"]),  # type: ignore[arg-type]
        limit_check_lateness_s=executed.lateness, steal_time_s=executed.steal)
