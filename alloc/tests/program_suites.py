#!/usr/bin/env python3
"""Real programs' own regression suites, run under glibc's malloc and again
with libhugeheap preloaded, their failures compared.  A test that fails in one
configuration and not in the other, or a crash in one only, is a difference,
and any difference fails the check.

    program_suites.py --lib build/lib/libhugeheap.so [--suite cpython,numpy,scipy]
                      [--subset] [--python PYTHON] [--venv-python PYTHON]
                      [--jobs N] [--out DIR]

Suites:
  cpython  CPython's regression tests (`python -m test`), with
           PYTHONMALLOC=malloc so that every object, not only those over 512
           bytes, comes from malloc; an interpreter from ~/.pyenv (3.12 if
           there is one) or --python.
  numpy    numpy's own tests (`pytest --pyargs numpy`), from the virtual
           environment (--venv-python): arrays of every size through malloc,
           calloc, realloc and aligned allocation, from C.
  scipy    scipy's own tests, from the same environment: its C, C++ and
           Fortran libraries (SuperLU, ARPACK, Qhull, the k-d tree, LAPACK
           through OpenBLAS, the graph and image routines) allocate through
           malloc and C++'s new, from threads of their own too.

The two configurations of a suite run side by side (the same load on both).
--subset runs a bounded part of each (allocation-heavy modules; about two
minutes on two cores), as `make test` does; without it the whole suites run, as `make
test-programs` does.  Tests a suite skips here (no network, no GUI) are
skipped in both configurations alike.

Flaky tests exist in any large suite, more so on a loaded machine: every
module with a test that failed in one configuration only is run again, in
both, twice more.  A test is a difference only if it failed every time in one
configuration and never in the other; a test that came and went is reported
as unstable and does not fail the check.  The library is checked to be
loaded (its name in the preloaded interpreter's memory map), so that a
preload silently ignored cannot pass.

Only the standard library is used: this runs before any virtual environment
need exist.  Exit status: 0 no difference, 1 differences, 2 the check could
not run (the message says why), 77 nothing to run here (skipped, why)."""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SKIP = 77
CONFIGS = ("glibc", "hugeheap")
RERUNS = 2

# Allocation-heavy CPython modules: containers, strings and bytes, pickling,
# regular expressions, the cycle collector, threads, compression, mmap,
# SQLite, ctypes and decimal (C libraries allocating through malloc).
CPYTHON_SUBSET = [
    "test_dict", "test_list", "test_set", "test_bytes", "test_str", "test_json", "test_pickle",
    "test_re", "test_gc", "test_array", "test_deque", "test_collections", "test_memoryview",
    "test_threading", "test_zlib", "test_bz2", "test_lzma", "test_mmap", "test_sqlite3",
    "test_ctypes", "test_decimal", "test_bigmem", "test_weakref", "test_itertools",
]
# numpy: array creation and copying, indexing, dtypes, and the functions of
# numpy.lib that build arrays from arrays.
NUMPY_SUBSET = [
    "numpy._core.tests.test_numeric", "numpy._core.tests.test_indexing",
    "numpy._core.tests.test_item_selection", "numpy._core.tests.test_dtype",
    "numpy.lib.tests.test_function_base",
]
# scipy: sparse matrices and their direct and iterative solvers (SuperLU,
# ARPACK), graph algorithms on them, k-d trees and Qhull (C++ and C),
# image filters, and file formats read into arrays.
SCIPY_SUBSET = [
    "scipy.sparse.csgraph", "scipy.sparse.tests.test_construct", "scipy.sparse.linalg._dsolve",
    "scipy.sparse.linalg._eigen.arpack", "scipy.spatial.tests.test_kdtree",
    "scipy.spatial.tests.test_qhull", "scipy.ndimage.tests.test_filters", "scipy.io",
]
# The Python packages whose own tests run, from the virtual environment:
# their bounded parts, and their folders left out.  numpy's f2py tests build
# Fortran extensions with meson, which the project does not install (they
# test f2py, not the heap); scipy.datasets' download the datasets (pooch,
# network).
PACKAGES = {
    "numpy": (NUMPY_SUBSET, ("f2py",)),
    "scipy": (SCIPY_SUBSET, ("datasets",)),
}


class CannotRun(Exception):
    """The check cannot run as asked; the message says why."""


class Skipped(Exception):
    """Nothing to run on this machine; the message says why."""


@dataclass
class Outcome:
    """One run of a suite: the tests that failed (by id), how many ran, and a
    crash of the whole run if there was one."""
    failed: set[str] = field(default_factory=set)
    ran: int = 0
    crash: str | None = None
    seconds: float = 0.0
    killed: bool = False  # by SIGKILL from outside (the OOM killer)


@dataclass(frozen=True)
class Suite:
    """How to run a program's own tests and read which failed.  `command`
    gets the units to run (modules; none: the whole suite) and the path of
    the JUnit XML file to write; `read` gets the finished process and that
    file; `unit_of` maps a failed test's id to the unit that runs it again."""
    name: str
    command: Callable[[list[str], Path], list[str]]
    env: dict[str, str]
    subset: list[str]
    read: Callable[[subprocess.CompletedProcess[str], Path], Outcome]
    unit_of: Callable[[str], str]
    timeout: float


def junit_failures(xml: Path) -> tuple[set[str], int]:
    """Ids (class and name) of the test cases with a failure or an error, and
    how many test cases there are."""
    try:
        root = ElementTree.parse(xml).getroot()
    except (OSError, ElementTree.ParseError):
        return set(), 0
    failed = set()
    cases = list(root.iter("testcase"))
    for case in cases:
        if case.find("failure") is not None or case.find("error") is not None:
            classname = case.get("classname")
            name = case.get("name", "?")
            failed.add(f"{classname}.{name}" if classname else name)
    return failed, len(cases)


def regrtest_listed(output: str, heading: str) -> set[str]:
    """The modules regrtest's summary lists under a heading such as
    "tests failed" ("1 test failed:" then indented names)."""
    singular = heading.replace("tests", "test")
    names: set[str] = set()
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(rf"\d+ ({re.escape(heading)}|{re.escape(singular)})[^:]*:", line.strip()):
            for follow in lines[i + 1:]:
                if not follow.startswith("    "):
                    break
                names.update(follow.split())
    return names


def read_regrtest(proc: subprocess.CompletedProcess[str], xml: Path) -> Outcome:
    """Failed test cases from the XML, and failed modules from the summary: a
    module whose worker crashed has no test case in the XML at all."""
    output = proc.stdout + proc.stderr
    if "== Tests result:" not in output:
        return Outcome(crash=f"regrtest ended without a result (exit {proc.returncode}): "
                             f"{last_lines(output)}")
    failed, ran = junit_failures(xml)
    failed |= {f"module {name}" for name in regrtest_listed(output, "tests failed")}
    failed |= {f"module {name} (env changed)"
               for name in regrtest_listed(output, "tests altered the execution environment")}
    return Outcome(failed, ran)


def regrtest_unit(test_id: str) -> str:
    """"test.test_dict.DictTest.test_bool" and "module test_dict" -> test_dict."""
    if test_id.startswith("module "):
        return test_id.split()[1]
    parts = test_id.split(".")
    return parts[1] if parts[0] == "test" and len(parts) > 1 else parts[0]


def read_pytest(proc: subprocess.CompletedProcess[str], xml: Path) -> Outcome:
    """Failed test cases from the XML; a run killed by a signal, or ending
    without writing the XML (pytest itself failed), is a crash."""
    if proc.returncode < 0 or not xml.exists():
        return Outcome(crash=f"pytest ended with status {proc.returncode}: "
                             f"{last_lines(proc.stdout + proc.stderr)}")
    # "Interrupted: 1 error during collection" (or "N errors"): nothing ran.
    if re.search(r"Interrupted: \d+ errors? during collection", proc.stdout):
        return Outcome(crash=f"pytest stopped collecting: {last_lines(proc.stdout, 2)}")
    return Outcome(*junit_failures(xml))


def pytest_unit(test_id: str) -> str:
    """"numpy._core.tests.test_ufunc.TestX.test_y[p]" -> the module."""
    parts = test_id.split("[")[0].split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[:i + 1])
    return ".".join(parts[:-1])


def last_lines(text: str, count: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-count:])


# Tests that cannot run twice at once on one machine, as the two
# configurations do: ThreadedVSOCKSocketStreamTest binds a fixed VSOCK port
# (1234); where the machine has vsock (a Firecracker VM), one run's server
# took the other's client and waited for its own in accept() until the
# 1200 s timeout, while the other failed with "Address already in use".
CPYTHON_NOT_SIDE_BY_SIDE = ["*ThreadedVSOCKSocketStreamTest*"]


def cpython_suite(python: str, jobs: int) -> Suite:
    ignores = [arg for pattern in CPYTHON_NOT_SIDE_BY_SIDE for arg in ("-i", pattern)]

    def command(units: list[str], xml: Path) -> list[str]:
        return [python, "-m", "test", "-j", str(jobs), "--timeout", "1200", *ignores,
                "--junit-xml", str(xml), *units]
    return Suite("cpython", command, {"PYTHONMALLOC": "malloc"}, CPYTHON_SUBSET,
                 read_regrtest, regrtest_unit, timeout=4 * 3600)


def package_suite(package: str, python: str, subset: list[str],
                  left_out: tuple[str, ...], threads: int) -> Suite:
    """A Python package's own tests, `pytest --pyargs PACKAGE`, in the
    environment of `python`.  Test ids relative to the folder the package is
    installed in name the module ("numpy._core.tests.test_dtype.TestBuiltin"),
    so that it can run again; `left_out`: its subfolders not to collect;
    `threads`: the BLAS and OpenMP threads of each configuration (the two run
    side by side: OpenBLAS's threads spin while they wait, and two runs with
    a thread per core each took nine times as long)."""
    installed = subprocess.run(
        [python, "-c", f"import {package}, os; print(os.path.dirname(os.path.dirname("
                       f"{package}.__file__)))"],
        capture_output=True, text=True, check=True).stdout.strip()
    ignores = [f"--ignore={installed}/{package}/{folder}" for folder in left_out]

    def command(units: list[str], xml: Path) -> list[str]:
        return [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                "--rootdir", installed, *ignores, "--junitxml", str(xml),
                "--pyargs", *(units or [package])]
    threads_env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    return Suite(package, command, threads_env, subset, read_pytest, pytest_unit,
                 timeout=2 * 3600)


def pyenv_python() -> str:
    """The newest CPython 3.12 under ~/.pyenv, else the newest from 3.11 on."""
    versions = Path.home() / ".pyenv" / "versions"
    found = []
    for path in versions.glob("3.*/bin/python3"):
        numbers = tuple(int(x) for x in re.findall(r"\d+", path.parent.parent.name)[:3])
        tests = (path.parent.parent / "lib").glob("python3*/test/__main__.py")
        if numbers >= (3, 11) and any(tests):
            found.append((numbers[:2] == (3, 12), numbers, str(path)))
    if not found:
        raise Skipped(f"no CPython 3.11 or newer with its test suite under {versions}; "
                      "name one with --python")
    return max(found)[2]


def run_suite(suite: Suite, config: str, lib: Path, units: list[str],
              work: Path, label: str) -> Outcome:
    xml = work / f"{suite.name}-{config}-{label}.xml"
    env = {**os.environ, **suite.env}
    env.pop("LD_PRELOAD", None)
    if config == "hugeheap":
        env["LD_PRELOAD"] = str(lib)
    started = time.monotonic()
    # A session of its own, killed whole at the end: a test that times out
    # can leave a child spinning (CPython's recursion tests do), which would
    # take a core from every run after it.
    with subprocess.Popen(suite.command(units, xml), env=env, cwd=work, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          start_new_session=True) as running:
        timed_out = False
        try:
            stdout, stderr = running.communicate(timeout=suite.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            try:
                os.killpg(running.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            running.wait()
    if timed_out:
        return Outcome(crash=f"did not finish within {suite.timeout:.0f} s",
                       seconds=time.monotonic() - started)
    proc = subprocess.CompletedProcess(running.args, running.returncode, stdout, stderr)
    (work / f"{suite.name}-{config}-{label}.log").write_text(proc.stdout + proc.stderr)
    outcome = suite.read(proc, xml)
    outcome.seconds = time.monotonic() - started
    outcome.killed = proc.returncode == -signal.SIGKILL
    return outcome


def side_by_side(suite: Suite, lib: Path, units: list[str], work: Path,
                 label: str) -> dict[str, Outcome]:
    """Both configurations at once, one beside the other: the same load on
    both, and the check's time halved on a machine of two cores or more
    (each CPython runner gets half of --jobs)."""
    with ThreadPoolExecutor(max_workers=len(CONFIGS)) as pool:
        running = {config: pool.submit(run_suite, suite, config, lib, units, work, label)
                   for config in CONFIGS}
        return {config: future.result() for config, future in running.items()}


def check_preloaded(python: str, lib: Path) -> None:
    """The library is in the interpreter's memory map when preloaded."""
    probe = subprocess.run(
        [python, "-c", "print(open('/proc/self/maps').read())"], text=True,
        capture_output=True, env={**os.environ, "LD_PRELOAD": str(lib)})
    if probe.returncode != 0 or lib.name.split(".so")[0] not in probe.stdout:
        raise CannotRun(f"{lib} was not loaded into {python} by LD_PRELOAD: "
                        f"{last_lines(probe.stderr) or 'not in its memory map'}")


def other(config: str) -> str:
    return CONFIGS[1 - CONFIGS.index(config)]


@dataclass
class Comparison:
    differences: list[str] = field(default_factory=list)
    unstable: list[str] = field(default_factory=list)
    both: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    ran: dict[str, int] = field(default_factory=dict)
    alone: list[str] = field(default_factory=list)  # configurations run again alone


def compare(suite: Suite, lib: Path, units: list[str], work: Path,
            say: Callable[[str], None]) -> Comparison:
    """Both configurations side by side, then the modules of the tests failing
    in one only again in both, RERUNS times; counts per test of the runs it
    failed in."""
    result = Comparison()
    say(f"{suite.name}: {' and '.join(CONFIGS)} side by side ...")
    first = side_by_side(suite, lib, units, work, "all")
    for config in CONFIGS:
        if first[config].killed:
            # Where memory holds one run's peak but not two (numpy's largest
            # test holds 13 GiB, the machine 24), the OOM killer takes one
            # of the runs side by side: that one runs again, alone.
            say(f"{suite.name}: {config} was killed (SIGKILL) beside the other; "
                "running it again alone ...")
            first[config] = run_suite(suite, config, lib, units, work, "alone")
            result.alone.append(config)
    for config in CONFIGS:
        result.seconds[config] = first[config].seconds
        result.ran[config] = first[config].ran
        say(f"{suite.name}: {config}: {first[config].ran} tests, {len(first[config].failed)} failed"
            + (f", crashed: {first[config].crash}" if first[config].crash else "")
            + f" ({first[config].seconds:.0f} s)")
    for config in CONFIGS:
        if not first[config].crash and first[config].ran == 0:
            first[config].crash = "it ran no test"
    crashes = {c: first[c].crash for c in CONFIGS if first[c].crash}
    if crashes:
        for config, why in crashes.items():
            if other(config) in crashes:
                raise CannotRun(f"{suite.name} does not run here under either "
                                f"configuration: {why}")
            result.differences.append(f"{suite.name} crashed under {config} only: {why}")
        return result
    glibc, hugeheap = (first[c].failed for c in CONFIGS)
    result.both = len(glibc & hugeheap)
    suspects = glibc ^ hugeheap
    if not suspects:
        return result
    again = sorted({suite.unit_of(t) for t in suspects})
    say(f"{suite.name}: {len(suspects)} tests failed in one configuration only; "
        f"running {', '.join(again)} again")
    failures = {c: {t: int(t in first[c].failed) for t in suspects} for c in CONFIGS}
    crashed_again: dict[str, list[str]] = {c: [] for c in CONFIGS}
    for repeat in range(RERUNS):
        outcomes = side_by_side(suite, lib, again, work, f"again{repeat + 1}")
        for config, outcome in outcomes.items():
            if outcome.crash:
                crashed_again[config].append(outcome.crash)
            for test in suspects:
                failures[config][test] += int(test in outcome.failed or bool(outcome.crash))
    runs = 1 + RERUNS
    for test in sorted(suspects):
        counts = {c: failures[c][test] for c in CONFIGS}
        line = (f"{test}: failed {counts['hugeheap']}/{runs} with hugeheap, "
                f"{counts['glibc']}/{runs} with glibc")
        if sorted(counts.values()) == [0, runs]:
            result.differences.append(line)
        else:
            result.unstable.append(line)
    for config, reasons in crashed_again.items():
        if reasons and not crashed_again[other(config)]:
            result.differences.append(f"{suite.name} crashed under {config} only when run "
                                      f"again: {reasons[0]}")
    return result


def choose_suites(args: argparse.Namespace) -> list[Suite]:
    chosen = []
    for name in args.suite.split(","):
        if name == "cpython":
            python = os.path.abspath(args.python) if args.python else pyenv_python()
            if not os.access(python, os.X_OK):
                raise CannotRun(f"--python {python}: no such program")
            # Its two configurations run side by side, each with half the workers.
            chosen.append(cpython_suite(python, max(1, args.jobs // len(CONFIGS))))
        elif name in PACKAGES:
            # Absolute, as the runs start in their own folder; not resolved:
            # a virtual environment's python is a link that must stay one.
            python = os.path.abspath(args.venv_python) if args.venv_python else None
            if not python or not Path(python).exists():
                raise Skipped(f"{name}'s tests need the virtual environment's python "
                              f"(--venv-python {python or '?'}: not found; `make venv` makes it)")
            for module in (name, "pytest", "hypothesis"):
                probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True)
                if probe.returncode != 0:
                    raise Skipped(f"{name}'s tests need {module} in {python} "
                                  "(`make venv` installs it)")
            subset, left_out = PACKAGES[name]
            chosen.append(package_suite(name, python, subset, left_out,
                                        max(1, (os.cpu_count() or 2) // len(CONFIGS))))
        else:
            raise CannotRun(f"unknown suite {name!r} (known: cpython, {', '.join(PACKAGES)})")
    return chosen


def report(name: str, result: Comparison, units: Iterable[str]) -> dict[str, object]:
    return {"suite": name, "units": list(units) or "all", "differences": result.differences,
            "unstable": result.unstable, "failed_in_both": result.both, "tests": result.ran,
            "seconds": {c: round(s) for c, s in result.seconds.items()},
            "run_again_alone": result.alone}


def interrupt_as_in_a_terminal() -> None:
    """SIGINT at Python's default for the test runs, wherever this was
    started.  A script's `cmd &` (and nohup under one) starts it with SIGINT
    ignored, and an ignored signal stays ignored across exec: CPython then
    raises no KeyboardInterrupt, and test_asyncio.test_runners' tests of it
    spin until memory runs out (14 and 24 GiB, both configurations
    OOM-killed, on a whole run started so).  A handler, unlike SIG_IGN, is
    reset to the default at exec."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", required=True, type=Path, help="path of libhugeheap.so")
    parser.add_argument("--suite", default="cpython,numpy,scipy",
                        help="comma-separated suites")
    parser.add_argument("--subset", action="store_true", help="a bounded part of each suite")
    parser.add_argument("--python", help="CPython whose test suite runs (default: ~/.pyenv)")
    parser.add_argument("--venv-python",
                        help="python of the environment numpy's and scipy's tests run in")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                        help="worker processes of CPython's test runners, both together")
    parser.add_argument("--out", type=Path, help="keep logs, XML and results.json here")
    args = parser.parse_args()
    interrupt_as_in_a_terminal()

    def say(text: str) -> None:
        print(text, flush=True)

    try:
        if not args.lib.exists():
            raise CannotRun(f"{args.lib}: no such library (build it first)")
        suites = choose_suites(args)
        results = []
        with tempfile.TemporaryDirectory(prefix="hugeheap-programs-") as tmp:
            work = (args.out or Path(tmp)).absolute()
            work.mkdir(parents=True, exist_ok=True)
            for suite in suites:
                python = suite.command([], work / "x.xml")[0]
                check_preloaded(python, args.lib.resolve())
                units = suite.subset if args.subset else []
                result = compare(suite, args.lib.resolve(), units, work, say)
                results.append(report(suite.name, result, units))
                for line in result.unstable:
                    say(f"{suite.name}: unstable (not counted): {line}")
                for line in result.differences:
                    say(f"{suite.name}: DIFFERENCE: {line}")
                say(f"{suite.name}: {len(result.differences)} differences, "
                    f"{len(result.unstable)} unstable, {result.both} failing under both")
            (work / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    except Skipped as skipped:
        print(f"SKIP: {skipped}")
        return SKIP
    except CannotRun as problem:
        print(f"program_suites: {problem}", file=sys.stderr)
        return 2
    return 1 if any(r["differences"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
