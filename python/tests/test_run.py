"""`hugeheap run` with real processes and the real cgroups of this machine."""

from __future__ import annotations

import errno
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from hugeheap_cli import CLI, cli

from hugeheap.errors import HarnessError
from hugeheap.measure import machine, runner
from hugeheap.measure.allocators import resolve
from hugeheap.measure.cgroups import discover
from hugeheap.measure.environment import is_allocator_variable
from hugeheap.measure.runner import Limits, RunResult, run
from hugeheap.measure.steal import steal_is_notable
from hugeheap.measure.supervision import CPU_CHECK_INTERVAL_S

PY = sys.executable


def processes_with(marker: str, anywhere: bool = False) -> list[str]:
    """Processes whose command line starts with the marker (or has it anywhere)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmdline.startswith(marker) or (anywhere and marker in cmdline):
                found.append(f"{entry.name}: {cmdline}")
    return found


def test_cpu_time_of_children_nobody_waited_for(cgroups_usable: str) -> None:
    script = (
        "import os, time\n"
        "done, writing = os.pipe()\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        end = time.process_time() + 0.6\n"
        "        while time.process_time() < end: pass\n"
        "        os._exit(0)\n"
        "os.close(writing)\n"
        # End of file once both children have exited (however loaded the
        # machine is); the parent exits without waiting for them.
        "os.read(done, 1)\n"
        "os._exit(0)\n"
    )
    result = run([PY, "-c", script])
    assert result.status == "ok" and result.reliable
    assert result.cputime_s is not None and result.cputime_s >= 1.15, result.cputime_s


def test_detached_grandchildren_are_gone(cgroups_usable: str, tmp_path: Path) -> None:
    marker = f"hugeheap-test-{uuid.uuid4().hex}"
    seen_both = tmp_path / "seen"
    # The tool starts two sleepers that leave its session and process tree,
    # then waits until the test has seen them (however slow the machine).
    script = (
        f"setsid bash -c 'exec -a {marker}-setsid sleep 1000' & "
        f"( ( exec -a {marker}-daemon sleep 1000 ) & ) ; "
        f"while [ ! -e {seen_both} ]; do sleep 0.05; done; exit 0"
    )
    seen: list[str] = []

    def look() -> None:  # while the run is on, the detached sleepers exist
        deadline = time.monotonic() + 60
        while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        seen.extend(processes_with(marker))
        seen_both.write_text("")

    watcher = threading.Thread(target=look)
    watcher.start()
    result = run(["bash", "-c", script], Limits(wall_s=120))
    watcher.join()
    assert result.status == "ok"
    assert len(seen) == 2, seen
    assert processes_with(marker) == []


def test_fork_storm_is_contained(cgroups_usable: str) -> None:
    marker = f"hugeheap-storm-{uuid.uuid4().hex}"
    script = (
        "import os, sys, time\n"
        "while True:\n"
        "    try:\n"
        "        if os.fork() == 0: time.sleep(60); os._exit(0)\n"
        "    except OSError:\n"
        "        time.sleep(0.01)\n"
    )
    result = run([PY, "-c", script, marker], Limits(wall_s=2, pids=200))
    assert result.status == "timeout" and result.termination_reason == "walltime"
    assert processes_with(marker, anywhere=True) == []


def test_memory_limit_ends_in_memout(cgroups_usable: str) -> None:
    limit = 100 << 20
    script = "x = []\nwhile True: x.append(bytearray(1 << 20))\n"
    result = run([PY, "-c", script], Limits(memory_bytes=limit, wall_s=60))
    assert result.status == "memout" and result.termination_reason == "memory"
    assert result.memory_peak_bytes is not None
    assert abs(result.memory_peak_bytes - limit) <= 0.05 * limit, result.memory_peak_bytes


# What the runner promises of its limits: a CPU-time limit is checked at most
# CPU_CHECK_INTERVAL_S apart near it, so a run overshoots it by at most that
# per busy core, plus however late the machine woke the harness (which the
# result reports: on a loaded machine it grows, and so may the overshoot).
# Ending the processes takes a little more: ENDING_S, on this machine; where
# it is emulated (the cgroup v2 machine under TCG), HUGEHEAP_TEST_SLOWDOWN
# says how many times slower it is.
ENDING_S = 0.05 * float(os.environ.get("HUGEHEAP_TEST_SLOWDOWN", "1"))


def cpu_overshoot_bound(result: RunResult, busy_cores: int) -> float:
    return busy_cores * (CPU_CHECK_INTERVAL_S + result.limit_check_lateness_s) + ENDING_S


def test_cpu_limit(cgroups_usable: str) -> None:
    result = run([PY, "-c", "while True: pass"], Limits(cpu_s=1.0, wall_s=30))
    assert result.status == "timeout" and result.termination_reason == "cputime"
    assert result.cputime_s is not None
    assert 1.0 <= result.cputime_s <= 1.0 + cpu_overshoot_bound(result, 1), result


def test_cpu_limit_counts_every_process(cgroups_usable: str) -> None:
    script = "import os\nos.fork()\nwhile True: pass\n"
    result = run([PY, "-c", script], Limits(cpu_s=1.0, wall_s=30))
    assert result.termination_reason == "cputime"
    assert result.cputime_s is not None
    assert 1.0 <= result.cputime_s <= 1.0 + cpu_overshoot_bound(result, 2), result


def test_wall_limit(cgroups_usable: str) -> None:
    result = run(["sleep", "30"], Limits(wall_s=0.5))
    assert result.status == "timeout" and result.termination_reason == "walltime"
    # Woken at the deadline (late by at most the lateness measured), then the
    # processes are ended and reaped, which may be as late again.
    bound = 0.5 + 2 * result.limit_check_lateness_s + ENDING_S
    assert 0.5 <= result.walltime_s <= bound, result


def test_exit_code_and_signal_are_reported(cgroups_usable: str) -> None:
    assert run(["sh", "-c", "exit 10"]).exit_code == 10
    crashed = run(["sh", "-c", "kill -SEGV $$"])
    assert crashed.status == "signal" and crashed.signal == 11
    assert crashed.termination_reason is None  # it ended by itself


def test_allocator_goes_to_the_tool_only(cgroups_usable: str, tmp_path: Path) -> None:
    mode = resolve("hugeheap")
    if mode.missing:
        pytest.skip(mode.missing)
    maps = tmp_path / "maps"
    result = run(["sh", "-c", "cat /proc/self/maps"], alloc=mode, output=str(maps))
    assert result.status == "ok" and result.alloc_library == mode.library
    assert "libhugeheap" in maps.read_text()
    assert "libhugeheap" not in Path("/proc/self/maps").read_text()
    assert "LD_PRELOAD" not in os.environ or "libhugeheap" not in os.environ["LD_PRELOAD"]


def test_the_tool_gets_no_allocator_variable_of_the_callers(
        cgroups_usable: str, tmp_path: Path) -> None:
    """A shell that preloads a malloc and tunes glibc's does not change the
    baseline: the tool of `--alloc system` gets none of it, and the record
    says what was withheld and what the harness set (--env)."""
    library = resolve("hugeheap").library
    if library is None:
        pytest.skip("libhugeheap.so is not built (make)")
    callers = {"LD_PRELOAD": library, "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1",
               "MALLOC_ARENA_MAX": "1", "MALLOC_CONF": "thp:always", "HUGEHEAP_THP": "off",
               "MIMALLOC_LARGE_OS_PAGES": "1", "TCMALLOC_RELEASE_RATE": "0",
               "JE_MALLOC_CONF": "thp:always", "GLIBC_THP_ALWAYS": "1"}
    seen = tmp_path / "seen"
    result = cli("run", "--json", "--alloc", "system", "--env", "MALLOC_TOP_PAD_=4096",
                 "--output", str(seen), "--", "sh", "-c", "env; cat /proc/self/maps",
                 env={**callers, "HH_TEST_KEPT": "yes"})
    assert result.returncode == 0, result.stderr
    tool_saw = seen.read_text()
    for name in callers:
        assert f"{name}=" not in tool_saw, name
    assert "libhugeheap" not in tool_saw  # nothing preloaded into the tool
    assert "MALLOC_TOP_PAD_=4096" in tool_saw and "HH_TEST_KEPT=yes" in tool_saw
    record = json.loads(result.stdout)["environment"]
    already = {name for name in os.environ if is_allocator_variable(name)}
    assert record == {"set": {"MALLOC_TOP_PAD_": "4096"},
                      "withheld": sorted(set(callers) | already)}


def test_a_mode_sets_its_own_variables_again(cgroups_usable: str, tmp_path: Path) -> None:
    mode = resolve("hugeheap-nothp")
    if mode.missing:
        pytest.skip(mode.missing)
    seen = tmp_path / "seen"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HUGEHEAP_THP", "hugetlb")  # the caller's: withheld, then the mode's
        result = run(["sh", "-c", "env"], alloc=mode, output=str(seen))
    assert "HUGEHEAP_THP=off" in seen.read_text().splitlines()
    assert result.environment["set"] == {"HUGEHEAP_THP": "off", "LD_PRELOAD": mode.library}
    assert result.environment["withheld"] == sorted(
        name for name in os.environ if is_allocator_variable(name))


def own_cgroup_procs() -> Path:
    """The cgroup.procs of this process's own group, where CPU time is
    counted (v1: the cpuacct hierarchy; v2: the unified one)."""
    found = discover()
    if "cpuacct" in found.v1:
        return found.v1["cpuacct"] / "cgroup.procs"
    own = Path("/proc/self/cgroup").read_text().splitlines()[-1].split(":", 2)[2]
    mounts = Path("/proc/self/mounts").read_text().splitlines()
    root = next(line.split()[1] for line in mounts if line.split()[2] == "cgroup2")
    return Path(root) / own.lstrip("/") / "cgroup.procs"


def test_cpu_time_of_a_process_that_left_the_group_is_cross_checked(
        cgroups_usable: str) -> None:
    """As BenchExec does: rusage above the cgroup's CPU time beyond its
    tolerance means a process left the group; the run says so and gives
    rusage's figure. Here the tool moves itself out (into this process's
    group), then works for a second."""
    script = ("import sys, time\n"
              "open(sys.argv[1], 'w').write('0')\n"  # 0: the writing process itself
              "end = time.process_time() + 1.2\n"
              "while time.process_time() < end: pass\n")
    result = run([PY, "-c", script, str(own_cgroup_procs())], Limits(wall_s=120))
    assert result.status == "ok" and result.exit_code == 0, result
    assert result.cputime_s is not None and result.cputime_s >= 1.2, result
    assert any("exceeds the cgroup's" in w and "BenchExec" in w for w in result.warnings), \
        result.warnings


def test_cpu_times_that_agree_give_no_warning(cgroups_usable: str) -> None:
    result = run([PY, "-c", "sum(range(3 * 10**7))"], Limits(wall_s=120))
    assert result.status == "ok"
    assert not any("exceeds the cgroup's" in w for w in result.warnings), result.warnings


def test_steal_time_is_read_per_cpu(tmp_path: Path) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    stat.write_text(f"cpu  10 0 5 100 0 0 0 {9 * hz} 0 0\n"  # not the CPUs' sum: unread
                    f"cpu0 5 0 2 50 0 0 0 {hz} 0 0\n"
                    f"cpu1 5 0 3 50 0 0 0 {2 * hz} 0 0\n"
                    "intr 12 0\nctxt 99\n")
    assert machine.steal_seconds(None, stat) == 3.0  # the CPUs' lines, not the sum line
    assert machine.steal_seconds([1], stat) == 2.0
    assert machine.steal_seconds([7], stat) is None  # not a CPU of this machine
    before_2_6_11 = tmp_path / "old"
    before_2_6_11.write_text("cpu  10 0 5 100\ncpu0 10 0 5 100\n")
    assert machine.steal_seconds(None, before_2_6_11) is None
    assert machine.steal_seconds(None, tmp_path / "absent") is None


def test_a_run_records_its_steal_time(cgroups_usable: str) -> None:
    result = run(["true"])
    if machine.steal_seconds() is None:
        assert result.steal_time_s is None
    else:
        assert result.steal_time_s is not None and result.steal_time_s >= 0
    # A share the host takes only now and then, so it is not provoked here.
    said = any("steal time" in w for w in result.warnings)
    assert said == steal_is_notable(result.steal_time_s, result.walltime_s), result
    assert not steal_is_notable(0.01, 0.13)  # one tick of /proc/stat in a short run
    assert not steal_is_notable(0.4, 10.0) and steal_is_notable(0.6, 10.0)


def test_a_run_the_host_took_time_from_says_so(cgroups_usable: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's other work cannot be ordered up: the two readings of
    /proc/stat around the run are given, 0.5 s apart."""
    readings = iter([100.0, 100.5])
    monkeypatch.setattr(machine, "steal_seconds", lambda cores=None: next(readings))
    result = run([PY, "-c", "import time; time.sleep(0.2)"])
    assert result.status == "ok" and result.steal_time_s == 0.5
    said = [w for w in result.warnings if "steal time" in w]
    assert len(said) == 1 and "took 0.50 s of the run's CPUs" in said[0], result.warnings


def test_missing_peer_library_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from hugeheap.measure import allocators
    monkeypatch.setattr(allocators, "find_library", lambda pattern: None)
    with pytest.raises(HarnessError, match="libjemalloc2"):
        run(["true"], alloc=allocators.resolve("jemalloc"))


def test_stdin_and_output_files(cgroups_usable: str, tmp_path: Path) -> None:
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("hello through stdin\n")
    result = run(["cat"], stdin=str(source), output=str(sink))
    assert result.status == "ok"
    assert sink.read_text() == "hello through stdin\n"


@pytest.mark.parametrize("args,message", [
    (["run", "--", "no-such-command-xyz"], "'no-such-command-xyz' is not installed"),
    (["run", "--stdin", "/nonexistent/file", "--", "true"], "--stdin /nonexistent/file"),
    (["run", "--cpu-limit", "ten", "--", "true"], "--cpu-limit: 'ten' is not a duration"),
    (["run", "--wall-limit", "5 parsecs", "--", "true"], "--wall-limit"),
    (["run", "--mem-limit", "4 GiBs", "--", "true"], "--mem-limit: '4 GiBs' is not a size"),
    (["run", "--cores", "x", "--", "true"], "--cores"),
    (["run", "--alloc", "magic", "--", "true"], "unknown allocator mode 'magic'"),
])
def test_bad_input_gives_one_clear_line(args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_json_output_has_the_promised_keys(cgroups_usable: str) -> None:
    result = cli("run", "--json", "--", "sh", "-c", "echo tool output; exit 3")
    assert result.returncode == 0  # measured, whatever the tool returned
    record = json.loads(result.stdout)
    for key in ("status", "termination_reason", "exit_code", "signal", "cputime_s",
                "cputime_user_s", "cputime_system_s", "walltime_s", "memory_peak_bytes", "alloc",
                "alloc_library", "huge_share", "tlb_misses", "thp", "reliable", "warnings",
                "steal_time_s"):
        assert key in record, key
    assert record["exit_code"] == 3 and record["status"] == "ok"
    assert "tool output" in result.stderr  # the tool's output stays off our stdout
    if record["tlb_misses"] is None:
        assert record["tlb_misses_reason"]


def test_doctor_reports(cgroups_usable: str) -> None:
    result = cli("doctor", "--json")
    assert result.returncode == 0
    info = json.loads(result.stdout)
    assert info["cgroups"]["usable"] == cgroups_usable
    assert set(info["allocators"]) >= {"system", "hugeheap", "mimalloc"}


def test_without_cgroups_the_result_says_unreliable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "create_run_group",
                        lambda prefix="": (None, ["no permission to create groups (test)"]))
    result = run([PY, "-c", "sum(range(10**6))"], Limits(wall_s=30))
    assert result.status == "ok" and not result.reliable and result.cgroup_version is None
    assert any("no permission to create groups (test)" in w for w in result.warnings)
    assert result.cputime_s is not None and result.cputime_s > 0


def test_a_program_that_cannot_start_is_an_error_result(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_bytes(b"\x7fELF not really a program")
    broken.chmod(0o755)
    result = run([str(broken)])
    assert result.status == "error" and result.termination_reason == "failed"
    assert any("cannot start" in w for w in result.warnings)


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN],
                         ids=["sigint-default", "sigint-ignored"])
def test_interrupted_harness_ends_the_run_and_reports_it(cgroups_usable: str,
                                                         inherited: signal.Handlers) -> None:
    """Ctrl-C ends the run, also for a harness that a script started in the
    background (which inherits SIGINT ignored)."""
    marker = f"hugeheap-interrupted-{uuid.uuid4().hex}"
    harness = subprocess.Popen([*CLI, "run", "--json", "--", "bash", "-c",
                                f"(exec -a {marker} sleep 1000); true"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, inherited))
    deadline = time.monotonic() + 30
    while not processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(marker), "the tool never started"
    harness.send_signal(2)  # Ctrl-C
    out, _ = harness.communicate(timeout=30)
    assert harness.returncode == 130
    record = json.loads(out)
    assert record["termination_reason"] == "killed"
    assert processes_with(marker) == []


# ----------------------------------------------- one clean-up path per run

def open_descriptors() -> set[tuple[str, str]]:
    """This process's descriptors, each with what it is open on. Garbage of
    earlier tests (a pipe of a process nobody waited for, a connection) is
    collected first, so that it cannot close while a test looks."""
    gc.collect()
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
        except FileNotFoundError:
            pass  # the descriptor listdir itself used
    return found


def no_descriptor_left(before: set[tuple[str, str]]) -> bool:
    """Every descriptor open now was open before, on the same thing (one that
    closed meanwhile is no leak of the run's; one the run left open is)."""
    return open_descriptors() <= before


def tlb_files() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("hugeheap-tlb-*"))


@pytest.fixture
def made_groups(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The cgroups the runner makes; with TLB counting pretended available, so
    that a run also holds its counter file (perf itself is not run)."""
    made: list[Any] = []
    real_create = runner.create_run_group

    def recording(prefix: str = "hugeheap", hierarchies: Any = None) -> Any:
        group, reasons = real_create(prefix, hierarchies)
        made.append(group)
        return group, reasons

    monkeypatch.setattr(runner, "create_run_group", recording)
    monkeypatch.setattr(runner.perf, "unavailable_reason", lambda: None)
    monkeypatch.setattr(runner.perf, "wrap", lambda argv, csv_path: argv)
    return made


def group_directories(group: Any) -> list[Path]:
    return [group.path] if group.version == "v2" else list(group.paths.values())


def test_an_exception_while_supervising_leaves_nothing_behind(
        cgroups_usable: str, made_groups: list[Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "pid"

    def broken(*args: Any) -> Any:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        raise RuntimeError("injected into supervise")

    monkeypatch.setattr(runner, "supervise", broken)
    descriptors, counters = open_descriptors(), tlb_files()
    with pytest.raises(RuntimeError, match="injected"):
        run(["sh", "-c", f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 60"],
            stdin="/dev/null", output=str(tmp_path / "out"))
    tool = int(pid_file.read_text())
    assert not Path(f"/proc/{tool}").exists(), "the tool outlived the run"
    assert not any(d.exists() for d in group_directories(made_groups[0]))
    assert no_descriptor_left(descriptors)
    assert tlb_files() == counters


def test_without_pidfd_open_the_run_is_measured_and_cleaned_up(
        cgroups_usable: str, made_groups: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int, flags: int = 0) -> int:  # a kernel before 5.3
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(runner.os, "pidfd_open", no_pidfd)
    descriptors, counters = open_descriptors(), tlb_files()
    result = run(["sh", "-c", "sleep 0.2; exit 4"], Limits(cpu_s=10, wall_s=30))
    assert result.status == "ok" and result.exit_code == 4 and result.walltime_s >= 0.2
    timed_out = run(["sleep", "30"], Limits(wall_s=0.3))
    assert timed_out.termination_reason == "walltime" and timed_out.walltime_s < 5
    assert not any(d.exists() for g in made_groups for d in group_directories(g))
    assert no_descriptor_left(descriptors)
    assert tlb_files() == counters


def test_a_failure_to_set_limits_closes_every_file(
        cgroups_usable: str, made_groups: list[Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Any, memory: Any, cores: Any, pids: Any) -> None:
        raise OSError(errno.EINVAL, "Invalid argument")

    from hugeheap.measure import cgroups
    monkeypatch.setattr(cgroups.CgroupV1, "set_limits", refuse)
    monkeypatch.setattr(cgroups.CgroupV2, "set_limits", refuse)
    source = tmp_path / "in"
    source.write_text("x")
    descriptors, counters = open_descriptors(), tlb_files()
    with pytest.raises(HarnessError, match="cannot set the limits"):
        run(["cat"], Limits(memory_bytes=1 << 30), stdin=str(source),
            output=str(tmp_path / "out"))
    assert no_descriptor_left(descriptors)
    assert not any(d.exists() for d in group_directories(made_groups[0]))
    assert tlb_files() == counters
