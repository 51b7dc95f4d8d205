#!/usr/bin/env python3
"""What `hugeheap bench` and `hugeheap report` cost on top of the runs.

  overhead  campaigns of N runs of `true` through `hugeheap bench` (planning,
            the worker process, answer checking, compressed output, one
            sqlite commit per run) against the same N runs measured by calling
            hugeheap's runner in a loop; interleaved, each of K rounds in an
            order shuffled anew (rounds.py, --seed), median of K rounds; the
            difference per run is what scheduling and storage add
  many      one campaign of --runs runs of `true` (default 10,000), timed
  report    `hugeheap report` (terminal, then with --html) on a campaign of
            --stored synthetic runs (default 100,000: 2 tools x 4 modes x
            2,500 instances x 5 repetitions, times drawn at random)

    .venv/bin/python bench/campaign_overhead.py overhead [--runs 200] [--rounds 3] [--seed 1]
    .venv/bin/python bench/campaign_overhead.py many [--runs 10000]
    .venv/bin/python bench/campaign_overhead.py report [--stored 100000]"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rounds import run_rounds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.campaign.folder import CampaignMeta  # noqa: E402
from hugeheap.campaign.store import RunRecord, Store  # noqa: E402
from hugeheap.measure.runner import Limits, run  # noqa: E402

HUGEHEAP = [sys.executable, "-m", "hugeheap.cli"]


def true_suite(directory: Path, instances: int, repetitions: int) -> Path:
    (directory / "inst").mkdir(parents=True)
    for index in range(instances):
        (directory / "inst" / f"i{index:05d}.txt").write_text("")
    suite = directory / "suite.toml"
    suite.write_text(f"""
[campaign]
modes = ["system"]
repetitions = {repetitions}

[limits]
cpu_time = "10s"

[tools.true]
command = "true {{instance}}"
adapter = "exitcode"

[instances]
files = ["inst/*.txt"]
""")
    return suite


def timed_campaign(suite: Path, out: Path, options: tuple[str, ...] = ()) -> float:
    """Seconds `hugeheap bench` takes, the interpreter's start included."""
    start = time.perf_counter()
    subprocess.run([*HUGEHEAP, "bench", str(suite), "--out", str(out), *options], check=True,
                   stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - start


def timed_direct(runs: int, scratch: Path) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        run(["true"], Limits(cpu_s=10, wall_s=20), output=str(scratch / "out.log"))
    return time.perf_counter() - start


def overhead(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        suite = true_suite(base / "suite", args.runs, 1)
        # Interpreter and worker start-up are paid once per campaign: they are
        # counted, spread over the runs.
        measured = run_rounds({
            "campaign": lambda index: timed_campaign(suite, base / f"c{index}") / args.runs,
            "direct": lambda _index: timed_direct(args.runs, base) / args.runs,
        }, args.rounds, args.seed)
    campaign, direct = measured.samples["campaign"], measured.samples["direct"]
    # Sample i of both comes from round i: the difference is taken per round.
    added = [c - d for c, d in zip(campaign, direct, strict=True)]
    print(f"per run of `true`, {args.runs} runs, median of {args.rounds} interleaved rounds: "
          f"hugeheap bench {statistics.median(campaign) * 1000:.1f} ms, runner alone "
          f"{statistics.median(direct) * 1000:.1f} ms, added by scheduling and storage "
          f"{statistics.median(added) * 1000:.1f} ms (rounds: "
          + ", ".join(f"{a * 1000:.1f}" for a in added) + ")")


def many(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        suite = true_suite(base / "suite", args.runs // 2, 2)
        seconds = timed_campaign(suite, base / "campaign")
        store = Store(base / "campaign" / "results.sqlite", readonly=True)
        stored = len(store.finished())
        store.close()
    print(f"campaign of {args.runs} runs of `true`: {stored} stored in {seconds:.0f} s "
          f"({seconds / args.runs * 1000:.1f} ms per run)")


def synthetic_campaign(directory: Path, stored: int) -> None:
    tools, modes, repetitions = ["a", "b"], ["system", "glibc-thp", "hugeheap", "mimalloc"], 5
    instances = stored // (len(tools) * len(modes) * repetitions)
    rng = random.Random(1)
    directory.mkdir(parents=True)
    store = Store(directory / "results.sqlite")
    CampaignMeta(identity={}, suite_name="synthetic", baseline="system", cpu_limit_s=60,
                 tools=tools, modes=modes).save(store)
    records = []
    for tool in tools:
        for index in range(instances):
            hardness = rng.lognormvariate(0, 2)
            for mode_index, mode in enumerate(modes):
                for repetition in range(repetitions):
                    cpu = hardness * (1 - 0.05 * mode_index) * rng.uniform(0.95, 1.05)
                    solved = cpu < 60
                    # By name: RunRecord gains fields in the middle as the schema grows.
                    records.append(RunRecord(
                        tool=tool, instance=f"instance-{index:05d}.cnf", mode=mode,
                        repetition=repetition, status="ok" if solved else "timeout",
                        termination_reason=None if solved else "cputime",
                        verdict="sat" if solved else "unknown", verdict_detail=None,
                        answer_value=None, exit_code=10, signal=None, cputime=min(cpu, 60),
                        cputime_user=min(cpu, 60) * 0.9, cputime_system=min(cpu, 60) * 0.1,
                        walltime=min(cpu, 60) + 0.02, memory_peak=rng.randint(10, 1000) * 2**20,
                        huge_share=rng.random(), tlb_misses=None, tlb_reason="not supported",
                        reliable=True, warnings="[]", cores="0,1",
                        start_time="2026-11-22T00:00:00+00:00", output=None))
    store.add_many(records)
    store.close()


def report(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "campaign"
        synthetic_campaign(directory, args.stored)
        for extra in ([], ["--html", str(Path(tmp) / "report.html")]):
            start = time.perf_counter()
            subprocess.run([*HUGEHEAP, "report", str(directory), *extra], check=True,
                           stdout=subprocess.DEVNULL, cwd=ROOT)
            seconds = time.perf_counter() - start
            size = (Path(tmp) / "report.html").stat().st_size if extra else 0
            print(f"hugeheap report on {args.stored} stored runs"
                  + (f" with --html ({size / 2**20:.1f} MiB)" if extra else " (terminal)")
                  + f": {seconds:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["overhead", "many", "report"])
    parser.add_argument("--runs", type=int)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stored", type=int, default=100_000)
    parser.add_argument("--seed", default="1", help="seeds the order of each overhead round")
    args = parser.parse_args()
    if args.what == "overhead":
        args.runs = args.runs or 200
        overhead(args)
    elif args.what == "many":
        args.runs = args.runs or 10_000
        many(args)
    else:
        report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
