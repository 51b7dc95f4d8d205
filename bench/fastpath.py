#!/usr/bin/env python3
"""Instructions per malloc and per free on each allocator's fast path, counted
by callgrind, printed as one Markdown table, then the functions each malloc
and free reached and the library each mode preloaded.

    python3 bench/fastpath.py [--modes system,hugeheap,mimalloc,jemalloc,tcmalloc]
                              [--steps N] [--size BYTES] [--build DIR]

What is counted. bench/micro/fastpath.c (hh-micro-fastpath) calls malloc and
free from exactly two functions of its own, fastpath_malloc and fastpath_free,
which do nothing but the call (never a tail jump). Callgrind records for every
call edge the number of calls and the instructions executed in the callee and
everything it calls (inclusive cost), and counts a call through the PLT as a
call of its target. So the edge out of fastpath_malloc, its cost over its
calls, is instructions per malloc, whatever the allocator names its functions
and however it jumps between them inside.

Two runs, one baseline. Each pattern runs with N steps and with 2N; a figure
is the difference in the edge's cost divided by the difference in its calls.
What happens once in a run (the allocator's initialisation, binding of
symbols, the first calls that map memory, the window filled at the start and
emptied at the end) is the same in both runs and cancels; what remains is the
steady state: the fast path, with the slow path's share where the loop
reaches it (a page's free list refilled once per page, say) spread over the
calls, as a running program sees it.

Patterns. `same`: malloc(SIZE) (default 32 bytes), then free of that block:
the freed block is the next one handed out, the shortest path every allocator
has. `window`: hh-micro-churn's pattern (the one the design notes counted
earlier): 65536 live blocks of 16-512 bytes, per step one freed at a random
slot and one allocated there, so free lists are walked in no particular
order and pages fill and empty.

A cross-check, in the last column: the whole program's instructions per step
(callgrind's total, same difference) minus those in malloc and free is the
loop's own work (the two calls, a store, the counter), the same few
instructions under every allocator; a cost callgrind put outside the two
edges would show there.

Under valgrind a program runs some fifty times slower, and the library, which
lends a small heap's larger classes' freed blocks to its smaller ones only
while the thread allocates slowly (under a block per microsecond of CPU time:
each lent block costs the slow path), would judge these patterns slow and
lend. Natively they allocate tens of blocks per microsecond and it does not;
so hugeheap runs here with HUGEHEAP_LENDING=off, the path it takes natively.

Instructions are counted on valgrind's synthetic CPU, not timed: the figures
repeat exactly from run to run and need no quiet machine. Fewer instructions
need not mean less time (a load that misses costs more than ten adds), but on
a fast path that stays in the cache they are close to it."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.errors import HarnessError  # noqa: E402
from hugeheap.measure.allocators import MODES, AllocatorMode, resolve  # noqa: E402

DEFAULT_MODES = ["system", "hugeheap", "mimalloc", "jemalloc", "tcmalloc"]
PATTERNS = ["same", "window"]
CALLERS = {"fastpath_malloc": "malloc", "fastpath_free": "free"}


@dataclass(frozen=True)
class Counts:
    """What one callgrind run counted."""
    total: int  # instructions of the whole run
    calls: dict[str, int]  # per entry (malloc, free): calls out of our caller
    cost: dict[str, int]  # per entry: instructions inside those calls
    callees: dict[str, set[str]]  # per entry: the allocator's functions called


@dataclass(frozen=True)
class PerCall:
    malloc: float
    free: float
    rest: float  # the loop's own instructions per step
    callees: dict[str, set[str]]


def parse_callgrind(text: str) -> Counts:
    """Counts of a callgrind output file written with --compress-strings=no
    and --compress-pos=no: call edges out of fastpath_malloc and fastpath_free
    (a `calls=` line, then the line of the calls' inclusive cost) and the
    total."""
    total = 0
    calls = dict.fromkeys(CALLERS.values(), 0)
    cost = dict.fromkeys(CALLERS.values(), 0)
    callees: dict[str, set[str]] = {entry: set() for entry in CALLERS.values()}
    function, callee, pending = "", "", None
    for line in text.splitlines():
        if line.startswith("fn="):
            function = line[3:].strip()
        elif line.startswith("cfn="):
            callee = line[4:].strip()
        elif line.startswith("calls="):
            pending = int(line[6:].split()[0])
        elif line.startswith(("summary:", "totals:")):
            total = int(line.split()[1])
        elif pending is not None and line[:1].isdigit():
            entry = CALLERS.get(function)
            if entry is not None:
                calls[entry] += pending
                cost[entry] += int(line.split()[-1])
                callees[entry].add(callee)
            pending = None
    if total == 0:
        raise HarnessError("callgrind wrote no total: is its output complete?")
    return Counts(total, calls, cost, callees)


def count(program: Path, args: Sequence[str], env: Mapping[str, str]) -> Counts:
    """One run of PROGRAM ARGS under callgrind with ENV (the allocator's)."""
    with tempfile.TemporaryDirectory(prefix="hh-fastpath-") as scratch:
        out = Path(scratch) / "callgrind.out"
        done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                               "--compress-strings=no", "--compress-pos=no",
                               str(program), *args],
                              env={**os.environ, **env, "LD_BIND_NOW": "1"},
                              capture_output=True, text=True)
        if done.returncode != 0 or not out.is_file():
            raise HarnessError(f"callgrind on {program.name} {' '.join(args)} failed: "
                               f"{done.stderr.strip()[-400:]}")
        return parse_callgrind(out.read_text())


def per_call(program: Path, pattern: str, steps: int, size: int,
             env: Mapping[str, str]) -> PerCall:
    """Instructions per malloc, per free and per step of the loop's own, from
    runs of STEPS and 2 * STEPS steps."""
    extra = [str(size)] if pattern == "same" else []
    short = count(program, [pattern, str(steps), *extra], env)
    long = count(program, [pattern, str(2 * steps), *extra], env)
    figures = {}
    for entry in CALLERS.values():
        more_calls = long.calls[entry] - short.calls[entry]
        if more_calls != steps:
            raise HarnessError(f"{pattern}: {more_calls} more calls of {entry} in the longer run, "
                               f"expected {steps}: callgrind saw other calls than ours")
        figures[entry] = (long.cost[entry] - short.cost[entry]) / more_calls
    rest = (long.total - short.total) / steps - figures["malloc"] - figures["free"]
    return PerCall(figures["malloc"], figures["free"], rest, long.callees)


# The library's time-judged choices set as a program allocating natively
# gets them (the module's docstring says why).
NATIVE_CHOICES = {"HUGEHEAP_LENDING": "off"}


def measure(program: Path, modes: Sequence[AllocatorMode], steps: int,
            size: int) -> dict[tuple[str, str], PerCall]:
    def env(mode: AllocatorMode) -> Mapping[str, str]:
        return {**mode.env, **NATIVE_CHOICES} if mode.is_hugeheap else mode.env
    return {(mode.name, pattern): per_call(program, pattern, steps, size, env(mode))
            for mode in modes for pattern in PATTERNS}


def markdown(results: Mapping[tuple[str, str], PerCall], allocators: Sequence[AllocatorMode],
             size: int) -> str:
    modes = [allocator.name for allocator in allocators]
    header = ["allocator", f"malloc ({size} B, same)", "free (same)", "malloc (window)",
              "free (window)", "rest of loop (same / window)"]
    rows = []
    for mode in modes:
        same, window = results[mode, "same"], results[mode, "window"]
        rows.append([mode, f"{same.malloc:.1f}", f"{same.free:.1f}", f"{window.malloc:.1f}",
                     f"{window.free:.1f}", f"{same.rest:.1f} / {window.rest:.1f}"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    if "hugeheap" in modes and "mimalloc" in modes:
        lines.append("")
        for pattern in PATTERNS:
            ours, theirs = results["hugeheap", pattern], results["mimalloc", pattern]
            lines.append(f"hugeheap / mimalloc, {pattern}: malloc {ours.malloc / theirs.malloc:.2f}"
                         f", free {ours.free / theirs.free:.2f} (goal: at most 1.20)")
    lines.append("")
    for mode in modes:
        called = results[mode, "same"].callees
        lines.append(f"{mode} calls: malloc -> {', '.join(sorted(called['malloc']))}; "
                     f"free -> {', '.join(sorted(called['free']))}")
    lines.append("")
    # The program comes from --build, each library from its mode (for hugeheap,
    # HUGEHEAP_LIBRARY or build/lib): say which, so a count is never read
    # against the wrong build.
    for allocator in allocators:
        library = allocator.library or "the system's malloc (nothing preloaded)"
        lines.append(f"{allocator.name} library: {library}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES),
                        help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--steps", type=int, default=200000,
                        help="steps of the shorter run (default 200000; the longer has twice)")
    parser.add_argument("--size", type=int, default=32, help="bytes per block in `same`")
    parser.add_argument("--build", type=Path, default=ROOT / "build",
                        help="where hh-micro-fastpath was built (default: build); the "
                             "libraries are the modes' (HUGEHEAP_LIBRARY names hugeheap's)")
    args = parser.parse_args()
    try:
        if shutil.which("valgrind") is None:
            raise HarnessError("valgrind is not installed (Debian package valgrind)")
        if args.steps < 1 or args.size < 1:
            raise HarnessError("--steps and --size must be positive")
        program = args.build / "bin" / "hh-micro-fastpath"
        if not program.is_file():
            raise HarnessError(f"{program} is missing: run `make build`")
        modes = []
        for name in args.modes.split(","):
            mode = resolve(name)
            if mode.missing:
                print(f"{name}: skipped ({mode.missing})", file=sys.stderr)
            else:
                modes.append(mode)
        results = measure(program, modes, args.steps, args.size)
    except (HarnessError, OSError) as error:
        print(f"fastpath.py: {error}", file=sys.stderr)
        return 2
    print(markdown(results, modes, args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
