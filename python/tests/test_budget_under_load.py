"""bench/budget_under_load.py: every configuration runs the command under its
library and reads the library's statistics; what cannot run is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "budget_under_load.py"
LIBRARY = ROOT / "build" / "lib" / "libhugeheap.so"
# A heap of 40 MiB, written: past the library's huge threshold.
HEAP = [sys.executable, "-c",
        "heap = bytearray(40 << 20)\nheap[::4096] = b'x' * (len(heap) // 4096)"]


def run_script(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True,
                          text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def library() -> Path:
    if not LIBRARY.is_file():
        pytest.skip(f"{LIBRARY} is not built (make build)")
    return LIBRARY


def test_each_library_runs_alone_and_beside_spinning_processes(library: Path) -> None:
    result = run_script("--before", str(library), "--rounds", "1", "--busy", "1", "--", *HEAP)
    assert result.returncode == 0, result.stderr
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines()
            if line.startswith("| ") and "---" not in line]
    header, *runs = rows
    assert [cell.strip() for cell in header[:2]] == ["library", "load"]
    assert sorted((row[0].strip(), row[1].strip()) for row in runs) == [
        ("before", "alone"), ("before", "busy"), ("current", "alone"), ("current", "busy")]
    for row in runs:
        figures = [float(cell) for cell in row[2:]]
        assert figures[2] > 0  # the command's CPU time, from its own rusage
        assert 0 <= figures[6] <= 1  # the heap's share in huge pages, from the statistics


def test_a_missing_library_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "libhugeheap.so"
    result = run_script("--before", str(missing), "--", "true")
    assert result.returncode == 1
    assert f"{missing} (before) is not built" in result.stderr


def test_a_failing_command_is_named(library: Path) -> None:
    result = run_script("--before", str(library), "--rounds", "1", "--", "false")
    assert result.returncode == 1
    assert "false exited with status 1" in result.stderr


def test_no_spinning_process_is_named() -> None:
    result = run_script("--before", "x.so", "--busy", "0", "--", "true")
    assert result.returncode == 2
    assert "--busy must be 1 or more processes, not 0" in result.stderr
