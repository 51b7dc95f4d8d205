"""One measured run: the library behind `hugeheap run`, and what every run of
a campaign is measured by.

The tool starts inside a fresh cgroup (it joins between fork and exec, so
nothing it starts escapes), with the allocator in its environment only
(environment.py: the harness's own without the shell's allocator variables,
then what the run sets). While it runs, the wall-time limit is a timer, the
CPU-time limit is checked by polling the group (more often as the limit
nears: at most 0.1 s per core between checks near it, plus however late the
machine wakes the harness, which the result reports), and the memory limit is
the kernel's. When the tool's main process ends, or a limit is reached, every
process left in the group is killed (the watching and the ending are
supervision.py's), and the group's counters are read and the group removed.

`run` checks its arguments and then trusts them; the run itself is three
steps (prepare, execute, collect), and one `finally` releases everything the
run holds (its processes, its cgroup, the TLB counter file, every opened
file) on every path, an exception included."""

from __future__ import annotations

import datetime
import os
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from ..errors import HarnessError
from . import hugetlb_cgroup, machine, perf
from .allocators import AllocatorMode, resolve
from .cgroups import CpuTimes, RunGroup, create_run_group
from .environment import tool_environment
from .hugepages import HugeShareSampler
from .hugetlb_cgroup import HugetlbCharge
from .limits import Limits, check_limits
from .outcome import cross_checked, how_it_ended
from .programs import find_program
from .steal import steal_is_notable, steal_warning
from .supervision import (
    SAMPLE_INTERVAL_S,
    TOGETHER_INTERVAL_S,
    ExitWatch,
    die_with_parent,
    end_everything,
    supervise,
)

# What the rest of the harness imports from here: Limits is defined in
# limits.py, beside its check, and is run's argument all the same.
__all__ = ["Limits", "RunResult", "resolve_command", "run"]

LATE_WARNING_S = 0.1  # a harness woken later than this says so: limits may overshoot by it


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
    # Bytes of hugetlb pool pages the run held at its peak (in
    # memory_peak_bytes too); None where not counted (hugetlb_cgroup.py).
    hugetlb_peak_bytes: int | None = None
    # Where pool pages are counted: memory_peak_bytes is an upper bound of the
    # true peak of both (HugetlbCharge.peak_upper_bound: the two peaks, which
    # may fall at different moments, added; memory's per interval between two
    # samples where the counters allow); this is a lower bound, the most of both seen
    # held at one moment (HugetlbCharge.peak_lower_bound). None for other runs.
    memory_peak_lower_bytes: int | None = None
    # Pages of the pool free for the run when it started, for a tool run with
    # HUGEHEAP_THP=hugetlb; None for others.
    pool_free_pages: int | None = None

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
    group_prefix names the run's cgroup (leftover_groups.end_leftover_groups finds it);
    end_with_parent: the tool is killed if the calling process dies first;
    cwd: the directory the tool starts in (default: this process's)."""
    limits = limits or Limits()
    alloc = alloc or resolve("system")
    if alloc.missing:
        raise HarnessError(f"--alloc {alloc.name}: {alloc.missing}")
    program = resolve_command(command)
    check_limits(limits)
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


# --------------------------------------------------------------- resources

@dataclass
class _Held:
    """What a run holds until it ends; release() gives all of it back, in the
    one `finally` of run()."""
    files: list[IO[bytes]] = field(default_factory=list)
    group: RunGroup | None = None
    hugetlb: HugetlbCharge | None = None  # the group's counter of pool pages
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
                end_everything(self.pid, self.group)
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
            if self.hugetlb is not None:
                self.hugetlb.remove()
                self.hugetlb = None
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
    pool_free_pages: int | None  # for a tool that maps from the pool


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
    env, environment = tool_environment(os.environ, extra_env or {}, alloc)
    from_pool = env.get("HUGEHEAP_THP") == "hugetlb"
    uncounted: str | None = hugetlb_cgroup.NOT_COUNTED
    if group is not None:
        held.hugetlb, uncounted = hugetlb_cgroup.attach(group)
    if uncounted and from_pool:
        warnings.append(uncounted)
    if group is not None:
        try:
            group.set_limits(limits.memory_bytes, limits.cores, limits.pids)
            if held.hugetlb is not None and limits.memory_bytes is not None:
                held.hugetlb.set_limit(limits.memory_bytes)
        except (OSError, HarnessError) as error:
            raise HarnessError(f"cannot set the limits of the run's cgroup: {error}") from None
    pool = machine.hugetlb_pool() if from_pool else None
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
                     machine.describe(), machine.thp_settings(), cwd,
                     pool.available if pool is not None else None)


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
            hugetlb_cgroup.join(held.hugetlb)
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
    charge = held.hugetlb
    next_share = 0.0

    def sample() -> float:
        """The huge-page share every SAMPLE_INTERVAL_S; memory and pool pages
        more often while the run holds pool pages, or always where each
        interval between samples bounds the peak (the shorter, the closer)."""
        nonlocal next_share
        now = time.monotonic()
        if now >= next_share:
            sampler.sample()
            next_share = now + SAMPLE_INTERVAL_S
        until_share = next_share - now
        if charge is not None:
            holds_pool_pages = charge.sample(group.memory_now if group else None)
            if holds_pool_pages or charge.interval_counters is not None:
                return min(TOGETHER_INTERVAL_S, until_share)
        return until_share

    watch = ExitWatch(process.pid)
    try:
        reason, lateness = supervise(watch, group, limits, start, sample)
    except KeyboardInterrupt:  # the harness was told to stop: end the run, keep what it measured
        reason, lateness = "killed", 0.0
    finally:
        watch.close()
    if reason is not None:  # a limit was reached first, or we were told to stop
        end_everything(process.pid, group)
    _, wait_status, usage = os.wait4(process.pid, 0)
    held.pid = None
    process.returncode = 0  # reaped here; keep Popen from waiting again
    walltime = time.monotonic() - start
    steal_after = machine.steal_seconds(limits.cores)
    end_everything(process.pid, group)  # whatever the main process left behind
    steal = None if steal_before is None or steal_after is None else \
        max(0.0, steal_after - steal_before)
    return _Executed(start_time, walltime, reason, wait_status, usage, sampler.best, lateness,
                     steal=steal)


# ----------------------------------------------------------------- collect

def _collect(held: _Held, prepared: _Prepared, executed: _Executed) -> RunResult:
    """Reads the group's counters and the TLB counts into the result."""
    group, limits, warnings = held.group, prepared.limits, prepared.warnings
    cpu: CpuTimes | None = None
    peak: int | None = None
    hugetlb_peak: int | None = None
    peak_lower: int | None = None
    oom = 0
    usage = executed.usage
    if executed.start_error is not None:
        warnings.append(executed.start_error)
    elif group is not None:
        cpu, peak, oom = group.cpu(), group.memory_peak(), group.oom_kills()
        if peak is None:
            warnings.append("this kernel keeps no memory peak for a cgroup (memory.peak came "
                            "with Linux 5.19): peak memory not measured")
        cpu = cross_checked(cpu, usage, warnings)
        if held.hugetlb is not None:
            held.hugetlb.close_interval(last=True)  # up to the run's end
            peak = held.hugetlb.memory_peak(peak)  # its counters may have been set back
            hugetlb_peak = held.hugetlb.peak()
            peak_lower = held.hugetlb.peak_lower_bound(peak, hugetlb_peak)
            peak = held.hugetlb.peak_upper_bound(peak, hugetlb_peak)
    else:
        cpu = CpuTimes(usage.ru_utime + usage.ru_stime, usage.ru_utime, usage.ru_stime)
        peak = usage.ru_maxrss * 1024
    if executed.lateness > LATE_WARNING_S:
        warnings.append(f"the machine woke the harness up to {executed.lateness:.2f} s late: "
                        "time limits may have been overshot by that much")
    if steal_is_notable(executed.steal, executed.walltime):
        warnings.append(steal_warning(executed.steal or 0.0, executed.walltime))

    if prepared.pool_free_pages is not None:
        warnings += hugetlb_cgroup.fallback_warnings(prepared.pool_free_pages, hugetlb_peak)
    ended = how_it_ended(executed.reason, executed.wait_status, oom, peak, limits.memory_bytes)

    tlb: int | None = None
    tlb_reason = prepared.tlb_reason
    if held.tlb_file is not None and executed.start_error is None:
        tlb, tlb_reason = perf.read(held.tlb_file)

    info = prepared.info
    return RunResult(
        command=prepared.command, start_time=executed.start_time, status=ended.status,
        termination_reason=ended.reason, exit_code=ended.exit_code, signal=ended.signal,
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
        limit_check_lateness_s=executed.lateness, steal_time_s=executed.steal,
        hugetlb_peak_bytes=hugetlb_peak, memory_peak_lower_bytes=peak_lower,
        pool_free_pages=prepared.pool_free_pages)
