"""bench/touched_share.py tells a program that touches all of its memory
again and again from one that keeps touching a small part of it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "touched_share.py"

# 64 MiB written once, then for 2 s: every page of it again (hot), or only
# its first MiB (cold).
PROGRAM = """
import time
memory = bytearray(64 << 20)
pages = len(memory) // 4096
memory[::4096] = b"\\1" * pages
start = time.time()
while time.time() - start < 2:
    if {hot}:
        memory[::4096] = b"\\2" * pages
    else:
        memory[:1 << 20] = b"\\3" * (1 << 20)
"""


def median_share(hot: bool) -> float:
    if not Path("/proc/self/clear_refs").exists():
        pytest.skip("no /proc/PID/clear_refs on this kernel")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--", sys.executable, "-c", PROGRAM.format(hot=hot)],
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    found = re.search(r"referenced / anonymous median ([0-9.]+)", result.stdout)
    assert found, result.stdout
    return float(found.group(1))


def test_a_program_touching_all_its_memory_shows_most_of_it_referenced() -> None:
    assert median_share(hot=True) >= 0.8


def test_a_program_touching_a_little_of_it_shows_little_referenced() -> None:
    assert median_share(hot=False) <= 0.3


def test_a_command_that_cannot_start_is_named() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--", "/nonexistent/program"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert "cannot run /nonexistent/program" in result.stderr
