#!/usr/bin/env python3
"""What a campaign costs through Slurm beside the local executor, on this
machine made a one-node Slurm cluster (slurm_cluster.py beside this
script, the tests' cluster too: needs root, slurm-wlm and munge).

The same campaign of --runs runs of `true`, interleaved, --rounds rounds,
each in an order shuffled anew (rounds.py beside this script, --seed):

  local     hugeheap bench --jobs 2 (two workers, one core each)
  slurm T   hugeheap bench --executor slurm --max-array-tasks T, for each T
            of --tasks (tasks of one CPU each: two run at once here)

prints the median seconds of each, the overhead per run against local, and
the latency per array task: the difference between the largest and the
smallest T, divided by the extra waves of tasks (two tasks run at once).

    .venv/bin/python bench/slurm_overhead.py [--runs 200] [--rounds 3] [--tasks 2,20] [--seed 1]"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from campaign_overhead import timed_campaign, true_suite
from rounds import run_rounds
from slurm_cluster import LocalSlurm, unavailable

PARALLEL = 2  # runs at once: two local workers, or two one-CPU tasks on this node


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tasks", default="2,20", help="array task counts, comma-separated")
    parser.add_argument("--seed", default="1", help="seeds the order of each round")
    args = parser.parse_args()
    task_counts = [int(t) for t in args.tasks.split(",")]
    reason = unavailable()
    if reason:
        print(f"slurm_overhead: {reason}", file=sys.stderr)
        return 2
    cluster = LocalSlurm()
    cluster.start()
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            suite = true_suite(base / "suite", args.runs, 1)

            def on_slurm(tasks: int) -> Callable[[int], float]:
                return lambda index: timed_campaign(
                    suite, base / f"slurm{tasks}-{index}",
                    ("--executor", "slurm", "--max-array-tasks", str(tasks)))

            configurations = {"local": lambda index: timed_campaign(
                suite, base / f"local{index}", ("--jobs", str(PARALLEL)))}
            configurations |= {f"slurm {tasks}": on_slurm(tasks) for tasks in task_counts}
            seconds = run_rounds(configurations, args.rounds, args.seed).samples
    finally:
        cluster.stop()
    local = statistics.median(seconds["local"])
    print(f"{args.runs} runs of `true`, {PARALLEL} at a time, median of {args.rounds} "
          "interleaved rounds:")
    for name, values in seconds.items():
        extra = "" if name == "local" else \
            f", {(statistics.median(values) - local) / args.runs * 1000:.1f} ms per run more"
        print(f"  {name:9} {statistics.median(values):6.1f} s (rounds "
              + ", ".join(f"{v:.1f}" for v in values) + f"){extra}")
    if len(task_counts) >= 2:
        fewest, most = min(task_counts), max(task_counts)
        waves = (most - fewest) / PARALLEL
        latency = (statistics.median(seconds[f"slurm {most}"])
                   - statistics.median(seconds[f"slurm {fewest}"])) / waves
        print(f"  latency per array task: {latency:.2f} s (slurm {most} against slurm {fewest}: "
              f"{waves:g} more waves of {PARALLEL} tasks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
