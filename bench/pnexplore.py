#!/usr/bin/env python3
"""pnexplore's benchmarks: configurations interleaved in a shuffled order per
repetition, medians.  Each run is measured by hugeheap's runner (wall, user and
system time, peak memory from the cgroup); the exploration's own time and
bytes per state come from pnexplore's JSON.

    python3 bench/pnexplore.py [allocators] [--size 14] [--repeat 3]
    python3 bench/pnexplore.py scaling [--size 14] [--repeat 5] [--before BINARY]
    python3 bench/pnexplore.py large [--net MODEL:SIZE ...] [--repeat 3] [--before BINARY]

allocators: Philosophers N by thread count; --alloc arena against --alloc
malloc under the system allocator, glibc-thp and hugeheap; --store shared
against buckets.  scaling: Philosophers N at one and two threads, the ratio
of the medians and of each repetition.  large: nets of many places (by
default the ServersAndClients-like 400x160: 65,761 places, 128,800
transitions, 64,801 states).  --before adds the same runs of another
pnexplore binary (an older commit's).  Prints Markdown."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.measure.allocators import AllocatorMode, derive, resolve  # noqa: E402
from hugeheap.measure.runner import run as run_measured  # noqa: E402

# A configuration: its name, the binary, the options after the net, the allocator.
Config = tuple[str, Path, list[str], AllocatorMode | None]
Result = dict[str, float]


def allocators(build: Path) -> dict[str, AllocatorMode]:
    """The modes compared, with the hugeheap library of this build."""
    library = build / "lib" / "libhugeheap.so"
    return {"system": resolve("system"), "glibc-thp": resolve("glibc-thp"),
            "hugeheap": derive("hugeheap", "hugeheap", library)}


def generate(tool: Path, model: str, size: str, directory: Path) -> Path:
    net = directory / f"{model}-{size}.lola"
    if not net.exists():
        subprocess.run([str(tool), "gen", model, size, "--format", "lola", "-o", str(net)],
                       check=True)
    return net


def explore(tool: Path, net: Path, options: list[str], alloc: AllocatorMode | None) -> Result:
    """One measured run: pnexplore's JSON and the runner's times and memory."""
    with tempfile.TemporaryFile() as out:
        m = run_measured([str(tool), "explore", str(net), "--json", *options], alloc=alloc,
                         tool_stdout=out, measure_tlb=False)
        if m.status != "ok" or m.exit_code != 0:
            raise SystemExit(f"{tool} explore {net.name} {' '.join(options)}: ended {m.status}, "
                             f"exit code {m.exit_code}")
        out.seek(0)
        r = json.loads(out.read())
    return {"seconds": r["seconds"], "states": r["states"], "edges": r["edges"],
            "bytes_per_state": r["bytes_per_state"], "wall": m.walltime_s,
            "user": m.cputime_user_s or 0.0, "sys": m.cputime_system_s or 0.0,
            "peak": float(m.memory_peak_bytes or 0)}


def interleaved(configs: list[Config], nets: list[Path], repeat: int
                ) -> dict[tuple[str, str], list[Result]]:
    """Every (net, configuration) `repeat` times, the configurations of a net
    in a shuffled order within each repetition."""
    rng = random.Random(1)
    results: dict[tuple[str, str], list[Result]] = {}
    for rep in range(repeat):
        for net in nets:
            order = configs[:]
            rng.shuffle(order)
            for name, tool, options, alloc in order:
                r = explore(tool, net, options, alloc)
                results.setdefault((net.stem, name), []).append(r)
                print(f"  rep {rep + 1} {net.stem} {name}: {r['seconds']:.3f} s exploring, "
                      f"{r['wall']:.2f} s wall", file=sys.stderr, flush=True)
    return results


def med(rs: list[Result], key: str) -> float:
    return statistics.median(r[key] for r in rs)


def table(results: dict[tuple[str, str], list[Result]], keys: list[tuple[str, str]]) -> None:
    print("| net | configuration | exploring (s) | states/s | wall (s) | user (s) | sys (s) "
          "| peak (MiB) | bytes/state |")
    print("|---|---|---|---|---|---|---|---|---|")
    for net, name in keys:
        rs = results[net, name]
        print(f"| {net} | {name} | {med(rs, 'seconds'):.3f} | "
              f"{med(rs, 'states') / med(rs, 'seconds'):,.0f} | {med(rs, 'wall'):.2f} | "
              f"{med(rs, 'user'):.2f} | {med(rs, 'sys'):.2f} | {med(rs, 'peak') / 2**20:.0f} | "
              f"{med(rs, 'bytes_per_state'):.2f} |")
    print()


def with_before(configs: list[Config], before: Path | None) -> list[Config]:
    """The configurations again with the older binary, named 'before, ...'."""
    if before is None:
        return configs
    return configs + [(f"before, {name}", before, options, alloc)
                      for name, _, options, alloc in configs]


def run_allocators(tool: Path, build: Path, work: Path, size: int, repeat: int) -> None:
    net = generate(tool, "philosophers", str(size), work)
    modes = allocators(build)
    configs: list[Config] = [(f"threads={t}", tool, ["--threads", str(t)], None)
                             for t in (1, 2, 4, 8)]
    configs += [(f"2 threads, --alloc {alloc}, {mode}", tool,
                 ["--threads", "2", "--alloc", alloc], modes[mode])
                for mode in ("system", "glibc-thp", "hugeheap") for alloc in ("arena", "malloc")]
    configs += [(f"2 threads, --store {store}", tool, ["--threads", "2", "--store", store], None)
                for store in ("buckets:100", "buckets:1000")]
    results = interleaved(configs, [net], repeat)
    first = results[net.stem, "threads=1"][0]
    print(f"Philosophers {size}: {first['states']:.0f} states, {first['edges']:.0f} edges\n")
    table(results, [(net.stem, name) for name, _, _, _ in configs])


def run_scaling(tool: Path, work: Path, size: int, repeat: int, before: Path | None) -> None:
    net = generate(tool, "philosophers", str(size), work)
    configs = with_before([(f"{t} thread{'s' if t > 1 else ''}", tool, ["--threads", str(t)], None)
                           for t in (1, 2)], before)
    results = interleaved(configs, [net], repeat)
    table(results, [(net.stem, name) for name, _, _, _ in configs])
    for prefix in ("", "before, ") if before else ("",):
        one, two = results[net.stem, f"{prefix}1 thread"], results[net.stem, f"{prefix}2 threads"]
        ratios = [a["seconds"] / b["seconds"] for a, b in zip(one, two, strict=True)]
        print(f"{prefix or 'this build, '}2 threads / 1 thread: "
              f"{med(one, 'seconds') / med(two, 'seconds'):.2f} from the medians of {repeat}; "
              f"per repetition {', '.join(f'{x:.2f}' for x in ratios)} "
              f"(median {statistics.median(ratios):.2f})\n")


def run_large(tool: Path, work: Path, nets: list[str], repeat: int, before: Path | None) -> None:
    files = []
    for spec in nets:
        model, _, size = spec.partition(":")
        files.append(generate(tool, model, size, work))
    configs = with_before([("1 thread", tool, [], None)], before)
    results = interleaved(configs, files, repeat)
    for f in files:
        r = results[f.stem, "1 thread"][0]
        print(f"{f.stem}: {r['states']:.0f} states, {r['edges']:.0f} edges")
    print()
    table(results, [(f.stem, name) for f in files for name, _, _, _ in configs])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", nargs="?", default="allocators",
                        choices=["allocators", "scaling", "large"])
    parser.add_argument("--size", type=int, default=14, help="Philosophers N")
    parser.add_argument("--repeat", type=int, default=None,
                        help="repetitions (allocators 3, scaling 5, large 3)")
    parser.add_argument("--net", action="append", default=None, metavar="MODEL:SIZE",
                        help="a net for `large` (repeatable; default serversandclients:400x160)")
    parser.add_argument("--before", type=Path, default=None, help="another pnexplore binary")
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    args = parser.parse_args()
    tool = args.build / "bin" / "pnexplore"
    if args.before is not None and not args.before.is_file():
        parser.error(f"--before {args.before}: no such file")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.what == "allocators":
            run_allocators(tool, args.build, work, args.size, args.repeat or 3)
        elif args.what == "scaling":
            run_scaling(tool, work, args.size, args.repeat or 5, args.before)
        else:
            run_large(tool, work, args.net or ["serversandclients:400x160"], args.repeat or 3,
                      args.before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
