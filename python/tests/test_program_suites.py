"""How alloc/tests/program_suites.py reads a pytest run: a run that stopped
while collecting ran nothing and must not pass as "the same failures under
both"; failed test cases come from the JUnit XML, by module."""

from __future__ import annotations

import importlib.util
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "alloc" / "tests" / "program_suites.py"


@pytest.fixture(scope="module")
def suites() -> ModuleType:
    spec = importlib.util.spec_from_file_location("program_suites", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["program_suites"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def finished(stdout: str, status: int = 1) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(["pytest"], status, stdout, "")


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="scipy.io.tests.test_mmio.TestMMIO" name="test_simple"/>
<testcase classname="scipy.io.tests.test_mmio.TestMMIO" name="test_big[1]">
  <failure message="boom"/></testcase>
<testcase classname="scipy.spatial.tests.test_qhull" name="test_hull">
  <error message="x"/></testcase>
</testsuite></testsuites>
"""


@pytest.mark.parametrize("summary", [
    "!!!! Interrupted: 1 error during collection !!!!",
    "!!!! Interrupted: 3 errors during collection !!!!",
])
def test_a_run_stopped_while_collecting_is_a_crash(suites: ModuleType, tmp_path: Path,
                                                   summary: str) -> None:
    xml = tmp_path / "run.xml"
    xml.write_text(JUNIT)
    outcome = suites.read_pytest(finished(f"ERROR collecting x.py\n{summary}\n"), xml)
    assert outcome.crash is not None and "stopped collecting" in outcome.crash


def test_failures_and_errors_come_from_the_xml(suites: ModuleType, tmp_path: Path) -> None:
    xml = tmp_path / "run.xml"
    xml.write_text(JUNIT)
    outcome = suites.read_pytest(finished("1 failed, 1 error, 1 passed in 2.0s\n"), xml)
    assert outcome.crash is None
    assert outcome.ran == 3
    assert outcome.failed == {"scipy.io.tests.test_mmio.TestMMIO.test_big[1]",
                              "scipy.spatial.tests.test_qhull.test_hull"}
    assert {suites.pytest_unit(t) for t in outcome.failed} == {
        "scipy.io.tests.test_mmio", "scipy.spatial.tests.test_qhull"}


def test_a_run_without_its_xml_is_a_crash(suites: ModuleType, tmp_path: Path) -> None:
    outcome = suites.read_pytest(finished("Segmentation fault\n", -11), tmp_path / "none.xml")
    assert outcome.crash is not None and "-11" in outcome.crash


def test_the_suites_see_sigint_as_a_terminal_gives_it() -> None:
    """Started with SIGINT ignored (a script's `cmd &`), the runs it starts
    still get KeyboardInterrupt on SIGINT."""
    child = ("import signal; print(signal.getsignal(signal.SIGINT) is "
             "signal.default_int_handler)")
    launcher = ("import importlib.util, subprocess, sys\n"
                "spec = importlib.util.spec_from_file_location('program_suites',"
                f" {str(SCRIPT)!r})\n"
                "module = importlib.util.module_from_spec(spec)\n"
                "sys.modules['program_suites'] = module\n"
                "spec.loader.exec_module(module)\n"
                f"sys.argv = ['program_suites.py', '--lib', {str(SCRIPT)!r}, '--suite', 'none']\n"
                "module.main()  # stops at the unknown suite, after the signals are set\n"
                f"subprocess.run([sys.executable, '-c', {child!r}], check=True)\n")
    ignored = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert ignored.stdout.strip() == "False"  # what the runs saw before
    done = subprocess.run([sys.executable, "-c", launcher], capture_output=True, text=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"


def test_cpython_leaves_out_what_cannot_run_twice_at_once(suites: ModuleType,
                                                           tmp_path: Path) -> None:
    command = suites.cpython_suite("python3", 1).command(["test_socket"], tmp_path / "x.xml")
    assert command[command.index("-i") + 1] == "*ThreadedVSOCKSocketStreamTest*"
    assert command[-1] == "test_socket"


KILLED_BESIDE = """
import os, sys
xml = sys.argv[1]
if xml.endswith("-glibc-all.xml"):
    os.kill(os.getpid(), 9)  # as the OOM killer does to one of two runs side by side
with open(xml, "w") as out:
    out.write('<testsuites><testsuite tests="1"><testcase classname="m.T" name="t"/>'
              '</testsuite></testsuites>')
print("1 passed")
"""


def test_a_run_killed_beside_the_other_runs_again_alone(suites: ModuleType,
                                                        tmp_path: Path) -> None:
    suite = suites.Suite("fake", lambda units, xml: [sys.executable, "-c", KILLED_BESIDE,
                                                     str(xml)],
                         {}, [], suites.read_pytest, suites.pytest_unit, timeout=60)
    said: list[str] = []
    no_library = tmp_path / "libnone.so"  # preloading it fails, and the run goes on
    result = suites.compare(suite, no_library, [], tmp_path, said.append)
    assert result.alone == ["glibc"]
    assert result.differences == [] and result.ran == {"glibc": 1, "hugeheap": 1}
    assert any("running it again alone" in line for line in said)
