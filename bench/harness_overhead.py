#!/usr/bin/env python3
"""Per-run overhead of the measuring harness: wall time of one measured run of
`true`, hugeheap's runner against BenchExec's RunExecutor, both called in
process (no interpreter start-up counted), interleaved, median of N.

    .venv/bin/python bench/harness_overhead.py [--runs 50]"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from hugeheap.measure.runner import run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    try:
        from benchexec.runexecutor import RunExecutor
    except ImportError:
        print("benchexec is not installed: run inside .venv (make builds it)", file=sys.stderr)
        return 1
    import logging
    logging.disable(logging.INFO)
    executor = RunExecutor(use_namespaces=False)
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        log = str(Path(tmp) / "out.log")
        for _ in range(args.runs):
            start = time.perf_counter()
            run(["true"], output=log)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            executor.execute_run(["true"], log)
            theirs.append(time.perf_counter() - start)
    print(f"runs of `true`, median of {args.runs}: "
          f"hugeheap run {statistics.median(ours) * 1000:.1f} ms, "
          f"BenchExec RunExecutor {statistics.median(theirs) * 1000:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
