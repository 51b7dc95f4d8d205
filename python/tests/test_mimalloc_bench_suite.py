"""suites/mimalloc-bench: the generator that compiles alloc-test names a
source it was not given, and the runner gives alloc-test the thread count
asked for, `cores` being one per CPU this process may use (at most 16)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "suites" / "mimalloc-bench"


def test_the_generator_names_a_missing_source(tmp_path: Path) -> None:
    given = tmp_path / "test_common.cpp"
    given.write_text("int unused;\n")
    result = subprocess.run([str(FOLDER / "compile-alloc-test.sh"), str(given)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "the source allocator_tester.cpp was not given" in result.stderr
    assert result.stdout == ""


def test_the_runner_gives_the_thread_count(tmp_path: Path) -> None:
    program = tmp_path / "alloc-test"
    program.write_text('#!/bin/sh\necho "threads: $1"\n')
    program.chmod(0o755)
    runner = str(FOLDER / "alloc-test.sh")
    one = subprocess.run([runner, str(program), "1"], capture_output=True, text=True,
                         check=True)
    assert one.stdout == "threads: 1\n"
    cores = subprocess.run([runner, str(program), "cores"], capture_output=True, text=True,
                           check=True)
    assert cores.stdout == f"threads: {min(len(os.sched_getaffinity(0)), 16)}\n"
