"""The anchor: BenchExec's runexec and `hugeheap run` measure the same
commands alike (CPU time and peak memory within 2%, or 20 ms per process / 1 MiB for
small values). Skips, saying why, where runexec cannot run."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from hugeheap.measure.runner import run

PY = sys.executable
# Workloads whose CPU time is fixed by themselves (they burn until their own
# clock says so), so that the comparison is of the measuring, not of how fast
# the machine happened to be.  What is not fixed is each process's start-up
# (Python's, 10-30 ms, longer when the other core is busy): the tolerance in
# absolute terms is 20 ms per process a workload starts.  Each is (command,
# processes started).
BURN = "import time\nwhile time.process_time() < {}: pass\n"
WORKLOADS = {
    "cpu": ([PY, "-S", "-c", BURN.format(1.0)], 1),
    "memory": ([PY, "-S", "-c", "x = bytearray(300 << 20)\n"
                "for i in range(0, len(x), 4096): x[i] = 1\n" + BURN.format(0.8)], 1),
    "processes": (["sh", "-c", f"for k in 1 2 3; do {PY} -S -c '{BURN.format(0.4)}' & done; wait"],
                  4),
}
START_UP_S = 0.020


def runexec_path() -> str:
    found = shutil.which("runexec") or str(Path(sys.executable).parent / "runexec")
    if not Path(found).exists():
        pytest.skip("runexec is not installed (pip install benchexec; `make` puts it in .venv)")
    probe = subprocess.run([found, "--no-container", "--output", os.devnull, "--", "true"],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0 or "returnvalue=0" not in probe.stdout:
        reason = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"runexec cannot run here: {reason}")
    return found


def runexec_measure(runexec: str, command: list[str], tmp: Path) -> tuple[float, int]:
    out = subprocess.run([runexec, "--no-container", "--output", str(tmp / "runexec.log"), "--",
                          *command], capture_output=True, text=True, timeout=300)
    values = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    return float(values["cputime"].rstrip("s")), int(values["memory"].rstrip("B"))


def close(a: float, b: float, relative: float, absolute: float) -> bool:
    return abs(a - b) <= max(relative * max(a, b), absolute)


@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_same_cpu_time_and_memory_as_runexec(workload: str, tmp_path: Path,
                                             cgroups_usable: str) -> None:
    runexec = runexec_path()
    command, processes = WORKLOADS[workload]
    theirs_cpu, theirs_mem, ours_cpu, ours_mem = [], [], [], []
    for _ in range(5):  # interleaved, medians: the runs themselves vary a little
        cpu, mem = runexec_measure(runexec, command, tmp_path)
        theirs_cpu.append(cpu)
        theirs_mem.append(mem)
        result = run(command, output=str(tmp_path / "ours.log"), measure_tlb=False)
        assert result.status == "ok" and result.cputime_s and result.memory_peak_bytes
        ours_cpu.append(result.cputime_s)
        ours_mem.append(result.memory_peak_bytes)
    cpu_a, cpu_b = statistics.median(theirs_cpu), statistics.median(ours_cpu)
    mem_a, mem_b = statistics.median(theirs_mem), statistics.median(ours_mem)
    print(f"{workload}: cpu runexec {cpu_a:.3f} s, hugeheap {cpu_b:.3f} s; "
          f"memory runexec {mem_a} B, hugeheap {mem_b} B")
    assert close(cpu_a, cpu_b, 0.02, START_UP_S * processes), (theirs_cpu, ours_cpu)
    assert close(mem_a, mem_b, 0.02, 1 << 20), (theirs_mem, ours_mem)
