#!/usr/bin/env python3
"""Allocator comparison: real solvers on a generated large instance and the
allocation microbenchmarks, each under every allocator configuration, run
interleaved (a shuffled order of configurations per repetition, so drift hits
all alike), reported as medians with the ratio to the system allocator.

    python3 bench/allocators.py [--repeat 3] [--solvers minisat,cadical]
                                [--micro churn,prodcons,realloc,chase]
                                [--allocators system,glibc-thp,hugeheap,...]

Prints a Markdown table per workload (for docs/BENCHMARKS.md) and keeps every
run in bench/results/allocators-TIMESTAMP.json."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import ROOT, Allocator, Measurement, allocators, median, run_measured  # noqa: E402

ALL_ALLOCATORS = "system,glibc-thp,hugeheap,hugeheap-nothp,mimalloc,jemalloc,tcmalloc"
SOLVER_ARGS = {
    "minisat": ["-verb=0"],
    "cadical": ["-q"],
    "picosat": [],
    "cryptominisat5": ["--verb=0"],
}
SOLVER_EXIT_CODES = {10, 20}


def instance(build: Path, variables: int, clauses: int) -> Path:
    path = build / "demo" / f"random3sat-{variables}-{clauses}.cnf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "wb") as out:
            subprocess.run([str(build / "bin" / "hh-randksat"), str(variables), str(clauses), "3",
                            "1"], stdout=out, check=True)
        tmp.rename(path)
    return path


def workloads(args: argparse.Namespace, build: Path) -> list[tuple[str, list[str], set[int]]]:
    found = []
    if args.solvers:
        cnf = instance(build, args.vars, args.clauses)
        for name in args.solvers.split(","):
            path = shutil.which(name)
            if path is None:
                print(f"skipping {name}: not installed (Debian package {name})", file=sys.stderr)
                continue
            found.append((name, [path, *SOLVER_ARGS.get(name, []), str(cnf)], SOLVER_EXIT_CODES))
    micro = {
        "churn": ["hh-micro-churn", "50000000"],
        "prodcons": ["hh-micro-prodcons", "1", "20000000"],
        "realloc": ["hh-micro-realloc", "3"],
        "chase": ["hh-micro-chase", "8000000", "100000000"],
    }
    for name in filter(None, args.micro.split(",")):
        program, *rest = micro[name]
        found.append((f"micro-{name}", [str(build / "bin" / program), *rest], {0}))
    return found


def table(name: str, runs: dict[str, list[Measurement]]) -> str:
    base = runs.get("system")
    lines = [f"#### {name}", "",
             "| allocator | wall s (median) | speed-up vs system | user s | sys s | peak RSS MiB "
             "| peak vs system | huge-page share |",
             "|---|---|---|---|---|---|---|---|"]
    for allocator, ms in runs.items():
        wall = median([m.wall_s for m in ms])
        rss = median([m.max_rss_kb for m in ms]) / 1024
        shares = [m.huge_share for m in ms if m.huge_share is not None]
        speedup = median([m.wall_s for m in base]) / wall if base else float("nan")
        rss_ratio = rss / (median([m.max_rss_kb for m in base]) / 1024) if base else float("nan")
        lines.append(
            f"| {allocator} | {wall:.2f} | {speedup:.2f} | {median([m.user_s for m in ms]):.2f} "
            f"| {median([m.sys_s for m in ms]):.2f} | {rss:.0f} | {rss_ratio:.2f} | "
            f"{(f'{median(shares):.0%}' if shares else 'n/a')} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--solvers", default="minisat,cadical")
    parser.add_argument("--micro", default="churn,prodcons,realloc,chase")
    parser.add_argument("--allocators", default=ALL_ALLOCATORS)
    parser.add_argument("--vars", type=int, default=1_000_000)
    parser.add_argument("--clauses", type=int, default=3_000_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    build = args.build if args.build.is_absolute() else ROOT / args.build
    known = allocators(build)
    chosen: list[Allocator] = []
    for name in args.allocators.split(","):
        if name not in known:
            parser.error(f"unknown allocator {name!r}; known: {', '.join(known)}")
        if known[name].missing:
            print(f"skipping {name}: {known[name].missing}", file=sys.stderr)
        else:
            chosen.append(known[name])

    rng = random.Random(args.seed)
    results: dict[str, dict[str, list[Measurement]]] = {}
    failures = 0
    for name, command, ok_codes in workloads(args, build):
        runs: dict[str, list[Measurement]] = {a.name: [] for a in chosen}
        for rep in range(args.repeat):
            order = chosen[:]
            rng.shuffle(order)
            for allocator in order:
                m = run_measured(command, allocator.env)
                if m.exit_code not in ok_codes:
                    print(f"{name} under {allocator.name}: exit code {m.exit_code}",
                          file=sys.stderr)
                    failures += 1
                runs[allocator.name].append(m)
                print(f"  {name} {allocator.name} rep {rep + 1}: {m.wall_s:.2f} s "
                      f"({m.user_s:.2f} user, {m.sys_s:.2f} sys), {m.max_rss_kb // 1024} MiB",
                      file=sys.stderr, flush=True)
        results[name] = runs
        print(table(name, runs), flush=True)

    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    record = {"command": sys.argv, "date": stamp,
              "results": {w: {a: [asdict(m) for m in ms] for a, ms in r.items()}
                          for w, r in results.items()}}
    (out_dir / f"allocators-{stamp}.json").write_text(json.dumps(record, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
