#!/usr/bin/env python3
"""pnexplore's benchmark: full exploration of Philosophers N, configurations
interleaved in a shuffled order per repetition, medians.

    python3 bench/pnexplore.py [--size 14] [--repeat 3]

Prints Markdown tables: states per second by thread count; --alloc arena
against --alloc malloc under the system allocator, glibc-thp and hugeheap;
--store shared against buckets; bytes per state."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.measure.allocators import AllocatorMode, derive, resolve  # noqa: E402


def allocators(build: Path) -> dict[str, AllocatorMode]:
    """The modes compared, with the hugeheap library of this build."""
    library = build / "lib" / "libhugeheap.so"
    return {"system": resolve("system"), "glibc-thp": resolve("glibc-thp"),
            "hugeheap": derive("hugeheap", "hugeheap", library)}


def run(tool: Path, net: Path, env: dict[str, str], *options: str) -> dict[str, float]:
    import os
    out = subprocess.run([str(tool), "explore", str(net), "--json", *options],
                         env={**os.environ, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=14)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    args = parser.parse_args()
    tool = args.build / "bin" / "pnexplore"
    net = args.build / f"philosophers-{args.size}.lola"
    subprocess.run([str(tool), "gen", "philosophers", str(args.size), "--format", "lola",
                    "-o", str(net)], check=True)
    modes = allocators(args.build)
    configs: list[tuple[str, dict[str, str], list[str]]] = []
    for threads in (1, 2, 4, 8):
        configs.append((f"threads={threads}", {}, ["--threads", str(threads)]))
    for mode in ("system", "glibc-thp", "hugeheap"):
        for alloc in ("arena", "malloc"):
            configs.append((f"2 threads, --alloc {alloc}, {mode}", modes[mode].env,
                            ["--threads", "2", "--alloc", alloc]))
    for store in ("buckets:100", "buckets:1000"):
        configs.append((f"2 threads, --store {store}", {}, ["--threads", "2", "--store", store]))
    rng = random.Random(1)
    results: dict[str, list[dict[str, float]]] = {name: [] for name, _, _ in configs}
    for rep in range(args.repeat):
        order = configs[:]
        rng.shuffle(order)
        for name, env, options in order:
            r = run(tool, net, env, *options)
            results[name].append(r)
            print(f"  rep {rep + 1} {name}: {r['states_per_second']:.0f} states/s", file=sys.stderr,
                  flush=True)
    print(f"Philosophers {args.size}: {results['threads=1'][0]['states']:.0f} states, "
          f"{results['threads=1'][0]['edges']:.0f} edges\n")
    print("| configuration | states/s (median) | seconds | bytes/state |")
    print("|---|---|---|---|")
    for name, _, _ in configs:
        rs = results[name]
        print(f"| {name} | {statistics.median(r['states_per_second'] for r in rs):,.0f} | "
              f"{statistics.median(r['seconds'] for r in rs):.2f} | "
              f"{statistics.median(r['bytes_per_state'] for r in rs):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
