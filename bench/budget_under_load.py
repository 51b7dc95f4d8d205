#!/usr/bin/env python3
"""What the budget for huge pages buys on a busy machine: a command under
two builds of libhugeheap (the one built here and another, e.g. by `make
before`), alone and beside busy loops, in rounds, and one Markdown table of
medians.

    python3 bench/budget_under_load.py --before build/before/lib/libhugeheap.so \
        [--rounds 3] [--busy N] [--build DIR] -- COMMAND...

The library times each huge page it makes and pays what it took beyond 1 ms
from a budget of a share of the process's CPU time (policy.c). A make timed
by a clock that runs while the thread waits for a core charges the wait as
if it were the page's cost, so the budget would afford fewer huge pages on a
node whose cores are all busy. Each run is a new process of COMMAND with
LD_PRELOAD set to one library and HUGEHEAP_STATS to a scratch file; `busy`
runs start --busy processes that spin for the whole run, each on a core of
its own where there are enough (default: one per CPU), and stop them after
it. Each round runs the four configurations
(library x load) once, in an order shuffled afresh.

Columns: user, system and CPU seconds of COMMAND (its own rusage, wait4),
wall seconds, CPU time over the other library's under the same load (median
of the per-round ratios), and from the library's statistics: the share of
the heap in huge pages, what a huge page it made took on average (ms), and
how often the budget deferred work. Exit status 1 if a library is missing,
the command fails, or a run leaves no statistics, with the message."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rounds import run_rounds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LOADS = ("alone", "busy")
FIELDS = ("user_s", "sys_s", "wall_s", "huge_share", "unit_ms", "deferred")


class RunFailed(Exception):
    """A run did not finish or left no statistics; the message says why."""


def spin(index: int) -> subprocess.Popen[bytes]:
    """A process that keeps one core busy (the index-th the caller may run
    on, round robin) until it is killed."""
    cores = sorted(os.sched_getaffinity(0))
    core = cores[index % len(cores)]
    return subprocess.Popen([sys.executable, "-c", "while True: pass"],
                            preexec_fn=lambda: os.sched_setaffinity(0, {core}))


def run_once(command: list[str], library: Path, busy: int, stats: Path) -> dict[str, float]:
    """One run of COMMAND under LIBRARY beside BUSY spinning processes."""
    stats.unlink(missing_ok=True)
    env = dict(os.environ, LD_PRELOAD=str(library), HUGEHEAP_STATS=f"json:{stats}")
    spinners = [spin(index) for index in range(busy)]
    try:
        start = time.monotonic()
        try:
            child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
        except OSError as error:
            raise RunFailed(f"cannot run {command[0]}: {error.strerror}") from error
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.monotonic() - start
        child.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    if child.returncode not in (0, 10, 20):  # SAT solvers' verdicts
        raise RunFailed(f"{' '.join(command)} exited with status {child.returncode}")
    try:
        record = json.loads(stats.read_text().splitlines()[-1])
    except (OSError, IndexError, ValueError) as error:
        raise RunFailed(f"the run under {library} left no statistics in {stats} ({error})") \
            from error
    return {"user_s": usage.ru_utime, "sys_s": usage.ru_stime, "wall_s": wall,
            "huge_share": float(record["huge_share"]),
            "unit_ms": float(record["huge_unit_cost_us"]) / 1000,
            "deferred": float(record["huge_deferred"])}


def cpu_s(figures: dict[str, float]) -> float:
    return figures["user_s"] + figures["sys_s"]


def table(runs: dict[tuple[str, str], list[dict[str, float]]]) -> list[str]:
    """The Markdown table, a row per (library, load), runs in round order."""
    lines = ["| library | load | user s | sys s | CPU s | wall s | CPU over the other's "
             "| huge share | ms per huge page | deferrals |",
             "|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (library, load), samples in runs.items():
        other = runs[("before" if library == "current" else "current", load)]
        pairs = [(cpu_s(mine), cpu_s(theirs)) for mine, theirs in zip(samples, other, strict=True)]
        ratio = statistics.median(mine / theirs if theirs > 0 else float("nan")
                                  for mine, theirs in pairs)
        medians = {field: statistics.median(sample[field] for sample in samples)
                   for field in FIELDS}
        cpu = statistics.median(cpu_s(sample) for sample in samples)
        lines.append(f"| {library} | {load} | {medians['user_s']:.2f} | {medians['sys_s']:.2f} "
                     f"| {cpu:.2f} | {medians['wall_s']:.2f} | {ratio:.3f} "
                     f"| {medians['huge_share']:.2f} | {medians['unit_ms']:.2f} "
                     f"| {medians['deferred']:.0f} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True,
                        help="the other libhugeheap.so (e.g. build/before/lib/libhugeheap.so)")
    parser.add_argument("--build", type=Path, default=ROOT / "build",
                        help="where this library was built (default: build)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=os.cpu_count() or 1,
                        help="spinning processes beside a busy run (default: one per CPU)")
    parser.add_argument("command", nargs="+", help="the command to run, after --")
    args = parser.parse_args()
    if args.busy < 1:
        parser.error(f"--busy must be 1 or more processes, not {args.busy}")
    libraries = {"before": args.before.resolve(),
                 "current": (args.build / "lib" / "libhugeheap.so").resolve()}
    for name, library in libraries.items():
        if not library.is_file():
            print(f"budget_under_load: {library} ({name}) is not built", file=sys.stderr)
            return 1
    runs: dict[tuple[str, str], list[dict[str, float]]] = {
        (name, load): [] for name in libraries for load in LOADS}

    with tempfile.TemporaryDirectory() as scratch:
        def configuration(name: str, load: str) -> Callable[[int], float]:
            def measure(_round: int) -> float:
                figures = run_once(args.command, libraries[name],
                                   args.busy if load == "busy" else 0,
                                   Path(scratch) / "stats.json")
                runs[(name, load)].append(figures)
                return cpu_s(figures)
            return measure

        try:
            run_rounds({f"{name} {load}": configuration(name, load) for name, load in runs},
                       args.rounds, seed="budget-under-load")
        except (RunFailed, ValueError) as error:
            print(f"budget_under_load: {error}", file=sys.stderr)
            return 1
    print(f"{' '.join(args.command)}, {args.rounds} rounds, busy: {args.busy} spinning "
          "processes:")
    print("\n".join(table(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
