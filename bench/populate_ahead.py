#!/usr/bin/env python3
"""Can a helper thread take the first touch of huge pages off a program's
critical path? Runs hh-micro-populate-ahead (bench/micro/populate_ahead.c) in
its four modes, in rounds, each round every mode once in a shuffled order,
and prints one Markdown table of medians.

    python3 bench/populate_ahead.py [--mib 400] [--work 4] [--ahead 8]
                                    [--rounds 5] [--pause 10] [--build DIR]

Each run is a new process that builds a heap of --mib MiB of fresh memory in
order, writing each 4 KiB page and reading it --work times: in 4 KiB pages
(`small`), in huge pages faulted by its writes (`huge`), made by its own
thread before it writes each 2 MiB unit (`populate`, what libhugeheap does
now), or made by a helper thread up to --ahead units beyond the one it writes
(`ahead`). Runs are --pause seconds apart, so that the host has taken back
what the last run freed (free page reporting) and every run meets fresh
memory, as a new process on a busy node does. Where fresh huge pages cost
more than small ones (a virtual machine whose host backs memory lazily),
the helper can hide that cost from the wall time only while another core is
idle; CPU time, every thread's, is what a competition's limit counts and
what this project's campaigns compare, and the helper's faults are in it.

Columns: wall, user and system seconds (medians), CPU time (user + system)
and wall time over `small`'s (medians of the per-round ratios: each round's
runs are side by side), and the share of the heap in huge pages at the end.
Exit status 1 if the program is not built, a run fails, or two modes read
different heaps (their checksums differ), with the message."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rounds import run_rounds  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = ("small", "huge", "populate", "ahead")
FIELDS = ("wall_s", "user_s", "sys_s", "huge_share")


class RunFailed(Exception):
    """A run of the program did not finish; the message says why."""


def run_once(program: Path, mode: str, mib: int, work: int,
             ahead: int) -> tuple[dict[str, float], str]:
    """One run of the program in MODE: its figures, by name, and its checksum."""
    result = subprocess.run([str(program), mode, str(mib), str(work), str(ahead)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RunFailed(result.stderr.strip()
                        or f"{program.name} {mode} exited with status {result.returncode}")
    words = dict(word.split("=", 1) for word in result.stdout.split())
    return {field: float(words[field]) for field in FIELDS}, words["checksum"]


def cpu_s(figures: dict[str, float]) -> float:
    return figures["user_s"] + figures["sys_s"]


def shown_share(share: float) -> str:
    """A huge-page share as the table shows it; the program says -1 where
    the kernel does not tell (no smaps_rollup)."""
    return "n/a" if share < 0 else f"{share:.2f}"


def table(runs: dict[str, list[dict[str, float]]]) -> list[str]:
    """The Markdown table of the runs, by mode, each mode's runs in round order."""
    baseline = runs[MODES[0]]
    lines = ["| mode | wall s | user s | sys s | CPU over small's | wall over small's "
             "| huge share |",
             "|:---|---:|---:|---:|---:|---:|---:|"]
    for mode, samples in runs.items():
        pairs = list(zip(samples, baseline, strict=True))
        medians = {field: statistics.median(sample[field] for sample in samples)
                   for field in FIELDS}
        cpu_ratio = statistics.median(cpu_s(sample) / cpu_s(base) for sample, base in pairs)
        wall_ratio = statistics.median(sample["wall_s"] / base["wall_s"] for sample, base in pairs)
        lines.append(f"| {mode} | {medians['wall_s']:.3f} | {medians['user_s']:.3f} "
                     f"| {medians['sys_s']:.3f} | {cpu_ratio:.3f} | {wall_ratio:.3f} "
                     f"| {shown_share(medians['huge_share'])} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=400, help="the heap each run builds (even)")
    parser.add_argument("--work", type=int, default=4, help="reads of each page after writing it")
    parser.add_argument("--ahead", type=int, default=8, help="units the helper may run ahead")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pause", type=float, default=10.0,
                        help="seconds between runs, for the host to take freed memory back")
    parser.add_argument("--build", type=Path, default=ROOT / "build",
                        help="where hh-micro-populate-ahead was built (default: build)")
    args = parser.parse_args()
    if args.pause < 0:
        parser.error(f"--pause must be 0 or more seconds, not {args.pause}")
    program = args.build / "bin" / "hh-micro-populate-ahead"
    if not program.is_file():
        print(f"populate_ahead: {program} is not built (make build)", file=sys.stderr)
        return 1
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}

    checksums: set[str] = set()

    def configuration(mode: str) -> Callable[[int], float]:
        def measure(_round: int) -> float:
            time.sleep(args.pause)
            figures, checksum = run_once(program, mode, args.mib, args.work, args.ahead)
            checksums.add(checksum)
            if len(checksums) > 1:
                raise RunFailed(f"{mode} read another heap than the runs before it "
                                f"(checksums {', '.join(sorted(checksums))})")
            runs[mode].append(figures)
            return figures["wall_s"]
        return measure

    try:
        run_rounds({mode: configuration(mode) for mode in MODES}, args.rounds,
                   seed="populate-ahead")
    except (RunFailed, ValueError) as error:
        print(f"populate_ahead: {error}", file=sys.stderr)
        return 1
    print(f"{args.mib} MiB, {args.work} reads of each page, helper up to {args.ahead} units "
          f"ahead, {args.rounds} rounds:")
    print("\n".join(table(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
