#!/usr/bin/env python3
"""The demo: one large random 3-SAT instance, a real solver from Debian run on
it with the system allocator and with hugeheap preloaded, side by side
(interleaved, repeated), and what came of it: both times, the ratio, and how
much of the heap huge pages backed.

    scripts/demo.py [BUILD_DIR] [--vars N] [--clauses M] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from measure import ROOT, Measurement, allocators, median, run_measured  # noqa: E402


def solver_command(name: str, instance: Path) -> list[str] | None:
    path = shutil.which(name)
    if path is None:
        return None
    return {"minisat": [path, "-verb=0", str(instance)],
            "cadical": [path, "-q", str(instance)]}[name]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", nargs="?", default="build", type=Path)
    parser.add_argument("--vars", type=int, default=1_000_000)
    parser.add_argument("--clauses", type=int, default=3_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--solvers", default="minisat,cadical")
    args = parser.parse_args()

    build = (ROOT / args.build).resolve() if not args.build.is_absolute() else args.build
    generator = build / "bin" / "hh-randksat"
    if not generator.exists():
        print(f"demo: {generator} is missing: run `make` first", file=sys.stderr)
        return 1
    work = build / "demo"
    work.mkdir(exist_ok=True)
    instance = work / f"random3sat-{args.vars}-{args.clauses}.cnf"
    if not instance.exists():
        print(f"demo: generating {instance.name} ({args.vars} variables, {args.clauses} clauses)")
        with open(instance.with_suffix(".tmp"), "wb") as out:
            subprocess.run([str(generator), str(args.vars), str(args.clauses), "3", "1"],
                           stdout=out, check=True)
        instance.with_suffix(".tmp").rename(instance)

    configs = allocators(build)
    chosen = [configs["system"], configs["hugeheap"]]
    solvers = []
    for name in args.solvers.split(","):
        command = solver_command(name, instance)
        if command is None:
            print(f"demo: {name} is not installed (Debian package {name}); skipping it")
        else:
            solvers.append((name, command))
    if not solvers:
        print("demo: no solver to run: install minisat or cadical", file=sys.stderr)
        return 1

    print(f"demo: {args.repeat} runs of each solver under each allocator, interleaved")
    failed = False
    for name, command in solvers:
        results: dict[str, list[Measurement]] = {c.name: [] for c in chosen}
        stats_file = work / f"{name}-hugeheap-stats.json"
        for rep in range(args.repeat):
            order = chosen if rep % 2 == 0 else list(reversed(chosen))
            for config in order:
                env = dict(config.env)
                if config.name == "hugeheap":
                    stats_file.unlink(missing_ok=True)
                    env["HUGEHEAP_STATS"] = f"json:{stats_file}"
                m = run_measured(command, env)
                if m.exit_code not in (10, 20):
                    print(f"demo: {name} under {config.name} exited with {m.exit_code}")
                    failed = True
                results[config.name].append(m)
                print(f"  {name:8} {config.name:9} run {rep + 1}: {m.wall_s:6.2f} s wall, "
                      f"{m.user_s:6.2f} s user, {m.sys_s:5.2f} s sys, "
                      f"{m.max_rss_kb / 1024:6.0f} MiB peak")
        base = median([m.wall_s for m in results["system"]])
        ours = median([m.wall_s for m in results["hugeheap"]])
        base_rss = median([m.max_rss_kb for m in results["system"]])
        our_rss = median([m.max_rss_kb for m in results["hugeheap"]])
        share = "unknown"
        if stats_file.exists():
            record = json.loads(stats_file.read_text().splitlines()[-1])
            if record.get("huge_share") is not None:
                share = f"{record['huge_share']:.0%}"
        print(f"{name}: system {base:.2f} s, hugeheap {ours:.2f} s (median wall time): "
              f"speed-up {base / ours:.2f}x; peak memory ratio {our_rss / base_rss:.2f}; "
              f"huge pages backed {share} of the heap at exit")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
