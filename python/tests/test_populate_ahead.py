"""bench/populate_ahead.py and its program, hh-micro-populate-ahead: every mode
builds its heap and reports it; bad arguments are named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "populate_ahead.py"
PROGRAM = ROOT / "build" / "bin" / "hh-micro-populate-ahead"


@pytest.fixture(scope="module")
def program() -> Path:
    if not PROGRAM.is_file():
        pytest.skip(f"{PROGRAM} is not built (make build)")
    return PROGRAM


def run_program(program: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(program), *arguments], capture_output=True, text=True,
                          timeout=60, check=False)


def test_every_mode_builds_its_heap_and_small_pages_stay_small(program: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--mib", "16", "--work", "1",
                             "--ahead", "2", "--rounds", "2", "--pause", "0"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1]
            for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line}
    assert set(rows) == {"mode", "small", "huge", "populate", "ahead"}
    assert float(rows["small"][3]) == pytest.approx(1.0)  # CPU over its own
    assert float(rows["small"][5]) == 0.0  # MADV_NOHUGEPAGE: no huge page


def test_the_helper_reaches_every_unit_the_program_has_not(program: Path) -> None:
    # With no work between writes the program races the helper; either may
    # touch a unit first, and the heap must come out whole either way.
    for _ in range(3):
        result = run_program(program, "ahead", "32", "0", "1")
        assert result.returncode == 0, result.stderr
        assert "mode=ahead mib=32" in result.stdout


@pytest.mark.parametrize("arguments, message", [
    (("sideways", "8"), "MODE must be small, huge, populate or ahead, not sideways"),
    (("huge", "7"), "MIB must be even"),
    (("huge", "8", "-1"), "WORK must be a whole number"),
    (("ahead",), "usage:"),
])
def test_bad_arguments_are_named(program: Path, arguments: tuple[str, ...], message: str) -> None:
    result = run_program(program, *arguments)
    assert result.returncode == 2
    assert message in result.stderr


def test_a_negative_pause_is_named() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--pause", "-1"],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2
    assert "--pause must be 0 or more seconds, not -1.0" in result.stderr


def test_a_missing_program_is_named(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--build", str(tmp_path)],
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 1
    assert "hh-micro-populate-ahead is not built" in result.stderr
