#!/usr/bin/env python3
"""Per-run overhead of the measuring harness: wall time of one measured run of
`true`, hugeheap's runner against BenchExec's RunExecutor, both called in
process (no interpreter start-up counted), interleaved in an order shuffled
anew for each of the N runs (rounds.py, --seed), median of N.

    .venv/bin/python bench/harness_overhead.py [--runs 50] [--seed 1]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rounds import run_rounds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from hugeheap.measure.runner import run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--seed", default="1", help="seeds the order of each run's pair")
    args = parser.parse_args()
    try:
        from benchexec.runexecutor import RunExecutor
    except ImportError:
        print("benchexec is not installed: run inside .venv (make builds it)", file=sys.stderr)
        return 1
    import logging
    logging.disable(logging.INFO)
    executor = RunExecutor(use_namespaces=False)
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "out.log")

        def ours(_round: int) -> float:
            start = time.perf_counter()
            run(["true"], output=log)
            return time.perf_counter() - start

        def theirs(_round: int) -> float:
            start = time.perf_counter()
            executor.execute_run(["true"], log)
            return time.perf_counter() - start

        measured = run_rounds({"hugeheap": ours, "benchexec": theirs}, args.runs, args.seed)
    print(f"runs of `true`, median of {args.runs}: "
          f"hugeheap run {measured.median('hugeheap') * 1000:.1f} ms, "
          f"BenchExec RunExecutor {measured.median('benchexec') * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
