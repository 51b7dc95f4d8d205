"""One measured run: the library behind `hugeheap run`, and what the bench
harness calls for every run.

The tool starts inside a fresh cgroup (it joins between fork and exec, so
nothing it starts escapes), with the allocator in its environment only. While
it runs, the wall-time limit is a timer, the CPU-time limit is checked by
polling the group (more often as the limit nears, so it overshoots by less
than 0.2 s), and the memory limit is the kernel's. When the tool's main
process ends, or a limit is reached, every process left in the group is
killed, and the group's counters are read and the group removed."""

from __future__ import annotations

import ctypes
import datetime
import os
import platform
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from . import machine, perf
from .allocators import require
from .cgroups import RunGroup, create_run_group
from .errors import HarnessError

DEFAULT_PIDS_LIMIT = 4096  # contains fork storms


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
    limits: dict[str, Any] = field(default_factory=dict)
    kernel: str = ""
    glibc: str | None = None
    cpu_model: str | None = None
    hostname: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _resolve_command(command: list[str]) -> str:
    if not command:
        raise HarnessError("no command given: write it after `--`")
    program = command[0]
    if "/" in program:
        if not os.path.isfile(program):
            raise HarnessError(f"command not found: {program}")
        if not os.access(program, os.X_OK):
            raise HarnessError(f"command is not executable: {program}")
        return program
    found = shutil.which(program)
    if found is None:
        raise HarnessError(f"command not found: {program} (not in PATH)")
    return found


def _open_stdin(path: str | None) -> IO[bytes] | int:
    if path is None:
        return subprocess.DEVNULL
    try:
        return open(path, "rb")
    except OSError as error:
        raise HarnessError(f"--stdin {path}: cannot read it ({error.strerror})") from None


def _open_output(path: str | None) -> IO[bytes] | None:
    if path is None:
        return None
    try:
        return open(path, "wb")
    except OSError as error:
        raise HarnessError(f"--output {path}: cannot write it ({error.strerror})") from None


_ANON = re.compile(r"^(Anonymous|AnonHugePages):\s+(\d+)", re.M)


def anonymous_kb(pid: int) -> tuple[int, int] | None:
    """(Anonymous, AnonHugePages) kB of a process, None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    values = dict(_ANON.findall(text))
    return int(values.get("Anonymous", 0)), int(values.get("AnonHugePages", 0))


def _sample_processes(pids: list[int]) -> tuple[int, int]:
    """Anonymous and huge-page kB summed over the processes."""
    anon = huge = 0
    for pid in pids:
        reading = anonymous_kb(pid)
        if reading is not None:
            anon += reading[0]
            huge += reading[1]
    return anon, huge


class _HugeShareSampler:
    """The largest share of the group's anonymous memory in huge pages, once
    there is at least 1 MiB of it (a smaller heap says nothing of huge pages)."""

    def __init__(self, group: RunGroup | None, main_pid: int) -> None:
        self.group, self.main_pid = group, main_pid
        self.best: float | None = None

    def sample(self) -> None:
        share: float | None = None
        if self.group is not None:
            share = self.group.huge_share()
            if share is None:
                anon, huge = _sample_processes(self.group.pids())
                share = huge / anon if anon >= 1024 else None
        else:
            anon, huge = _sample_processes([self.main_pid])
            share = huge / anon if anon >= 1024 else None
        if share is not None and (self.best is None or share > self.best):
            self.best = share


def _swap_in_use() -> bool:
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        total = int(info["SwapTotal"].split()[0])
        free = int(info["SwapFree"].split()[0])
        return total - free > 0
    except (OSError, KeyError, ValueError):
        return False


def run(command: list[str], limits: Limits | None = None, alloc: str = "system",
        stdin: str | None = None, output: str | None = None,
        extra_env: dict[str, str] | None = None, measure_tlb: bool = True,
        tool_stdout: IO[bytes] | int | None = None, group_prefix: str = "hugeheap",
        end_with_parent: bool = False) -> RunResult:
    """Runs the command once, measured; raises HarnessError for bad input.
    group_prefix names the run's cgroup (cgroups.end_leftover_groups finds it);
    end_with_parent: the tool is killed if the calling process dies first."""
    limits = limits or Limits()
    program = _resolve_command(command)
    mode = require(alloc)
    stdin_file = _open_stdin(stdin)
    output_file = _open_output(output)
    warnings: list[str] = []
    if _swap_in_use():
        warnings.append("swap is in use on this machine: memory figures may be low")

    group, reasons = create_run_group(group_prefix)
    reliable = group is not None
    if group is None:
        warnings.append("no cgroup could be made (" + "; ".join(reasons) + "): CPU time and "
                        "memory come from rusage (descendants that are not waited for are "
                        "missed) and limits other than wall time are not enforced")
    try:
        if group is not None:
            group.set_limits(limits.memory_bytes, limits.cores, limits.pids)
    except (OSError, HarnessError) as error:
        if group is not None:
            group.remove()
        raise HarnessError(f"cannot set the limits of the run's cgroup: {error}") from None

    env = dict(os.environ)
    env.update(extra_env or {})
    env.update(mode.env)
    argv = [program, *command[1:]]
    tlb_file: str | None = None
    tlb_reason: str | None = None
    if measure_tlb:
        tlb_reason = perf.unavailable_reason()
        if tlb_reason is None:
            handle, tlb_file = tempfile.mkstemp(prefix="hugeheap-tlb-", suffix=".csv")
            os.close(handle)
            argv = perf.wrap(argv, tlb_file)
    else:
        tlb_reason = "not asked for"

    def enter_group() -> None:  # in the child, between fork and exec
        if end_with_parent:
            die_with_parent()
        if group is not None:
            group.join()
        elif limits.cores:
            os.sched_setaffinity(0, limits.cores)

    out: IO[bytes] | int | None = output_file if output_file is not None else tool_stdout
    info = machine.describe()
    thp = machine.thp_settings()  # per run: an administrator may change it between runs
    start_time = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    start = time.monotonic()

    def result(**measured: Any) -> RunResult:
        return RunResult(
            command=command, start_time=start_time, alloc=alloc, alloc_library=mode.library,
            thp=thp, warnings=warnings,
            cgroup_version=group.version if group else None,
            limits={"cpu_s": limits.cpu_s, "wall_s": limits.wall_s,
                    "memory_bytes": limits.memory_bytes, "cores": limits.cores,
                    "pids": limits.pids},
            kernel=platform.release(), glibc=info["glibc"],  # type: ignore[arg-type]
            cpu_model=info["cpu_model"], hostname=str(info["hostname"]),  # type: ignore[arg-type]
            **measured)

    try:
        process = subprocess.Popen(argv, env=env, stdin=stdin_file, stdout=out,
                                   stderr=subprocess.STDOUT if out is not None else None,
                                   preexec_fn=enter_group, start_new_session=True)
    except OSError as error:
        # The program is there but would not start (format, permission, ...):
        # a measured outcome of the run, not a harness error.
        if group is not None:
            group.remove()
        warnings.append(f"cannot start {program}: {error.strerror}")
        return result(status="error", termination_reason="failed", exit_code=None, signal=None,
                      cputime_s=None, cputime_user_s=None, cputime_system_s=None,
                      walltime_s=time.monotonic() - start, memory_peak_bytes=None,
                      huge_share=None, tlb_misses=None, tlb_misses_reason=tlb_reason,
                      reliable=reliable)
    finally:
        for f in (stdin_file, output_file):
            if hasattr(f, "close"):
                f.close()  # type: ignore[union-attr]

    sampler = _HugeShareSampler(group, process.pid)
    try:
        reason = _supervise(process.pid, group, limits, start, sampler)
    except KeyboardInterrupt:  # the harness was interrupted: end the run, keep what it measured
        reason = "killed"
    if reason is not None:  # a limit was reached first, or we were told to stop
        _end_everything(process.pid, group)
    _, status_word, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped here; keep Popen from waiting again
    walltime = time.monotonic() - start
    _end_everything(process.pid, group)  # whatever the main process left behind

    cpu = group.cpu() if group is not None else None
    peak = group.memory_peak() if group is not None else usage.ru_maxrss * 1024
    oom = group.oom_kills() if group is not None else 0
    if group is not None:
        group.remove()
        if peak is None:
            warnings.append("this kernel keeps no memory peak for a cgroup (memory.peak came "
                            "with Linux 5.19): peak memory not measured")

    exit_code = os.WEXITSTATUS(status_word) if os.WIFEXITED(status_word) else None
    sig = os.WTERMSIG(status_word) if os.WIFSIGNALED(status_word) else None
    if reason is None and oom > 0:
        reason = "memory"
    status = {"cputime": "timeout", "walltime": "timeout", "memory": "memout",
              "killed": "signal"}.get(reason or "", "signal" if sig is not None else "ok")
    if reason is None and sig is not None and sig == signal.SIGKILL and limits.memory_bytes and \
            peak is not None and peak >= 0.95 * limits.memory_bytes:
        status, reason = "memout", "memory"

    tlb: int | None = None
    if tlb_file is not None:
        tlb, tlb_reason = perf.read(tlb_file)
        os.unlink(tlb_file)

    return result(
        status=status, termination_reason=reason, exit_code=exit_code, signal=sig,
        cputime_s=cpu.total if cpu else usage.ru_utime + usage.ru_stime,
        cputime_user_s=cpu.user if cpu else usage.ru_utime,
        cputime_system_s=cpu.system if cpu else usage.ru_stime,
        walltime_s=walltime, memory_peak_bytes=peak, huge_share=sampler.best,
        tlb_misses=tlb, tlb_misses_reason=tlb_reason, reliable=reliable)


_PR_SET_PDEATHSIG = 1


_libc = ctypes.CDLL(None, use_errno=True)  # loaded here: the child between fork and exec may not


def die_with_parent() -> None:
    """SIGKILL for the calling process when its parent ends (Linux prctl)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _supervise(pid: int, group: RunGroup | None, limits: Limits, start: float,
               sampler: _HugeShareSampler) -> str | None:
    """Waits until the main process ends (None) or a time limit is reached
    (the termination reason); the process is not reaped here."""
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    cores = len(limits.cores) if limits.cores else (os.cpu_count() or 1)
    next_sample = start + 0.01
    try:
        while True:
            now = time.monotonic()
            wait = 0.5
            if limits.wall_s is not None:
                wait = min(wait, max(0.0, start + limits.wall_s - now))
            if limits.cpu_s is not None:
                used = group.cpu().total if group is not None else _cpu_of_tree(pid)
                if used >= limits.cpu_s:
                    return "cputime"
                # Check more often as the limit nears: at most 0.2 s of overshoot.
                wait = min(wait, max(0.005, min(0.1, (limits.cpu_s - used) / cores)))
            wait = min(wait, max(0.0, next_sample - now))
            if poller.poll(wait * 1000):
                return None
            now = time.monotonic()
            if limits.wall_s is not None and now - start >= limits.wall_s:
                return "walltime"
            if now >= next_sample:
                sampler.sample()
                next_sample = now + 0.1
    finally:
        os.close(pidfd)


def _cpu_of_tree(pid: int) -> float:
    """CPU seconds of a process (without cgroups: its own, from /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
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
