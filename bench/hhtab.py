#!/usr/bin/env python3
"""The tabling paper's Table I from hhtab: for each of its eight path programs
(left and right recursion over BTree 17, Pyramid 1500, Cycle 2000, Grid 35;
`hhtab gen path`), the calls, subgoal trie nodes and depth, unique and repeated
answers, answer trie nodes and depth, as hhtab --json counts them with one
thread and the ns design. Statistics of the evaluation, not timing: each
program runs once. Prints Markdown.

    python3 bench/hhtab.py [--rows left-btree,right-grid] [--build build]

Timing comparisons (against SWI-Prolog, the benchmark set's kinds, threads,
memory) are suites run by `hugeheap bench`: suites/hhtab/."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ROWS = [(rec, shape, n) for rec in ("left", "right")
        for shape, n in (("btree", 17), ("pyramid", 1500), ("cycle", 2000), ("grid", 35))]


def statistics(hhtab: Path, rec: str, shape: str, n: int, work: Path) -> dict[str, Any]:
    """hhtab's JSON for the query path(X,Y) of one path program."""
    program = work / f"{shape}-{n}-{rec}.pl"
    subprocess.run([str(hhtab), "gen", "path", shape, str(n), "--recursion", rec, "-o",
                    str(program)], check=True)
    out = subprocess.run([str(hhtab), "run", str(program), "--query", "path(X,Y)", "--json",
                          "--design", "ns"], check=True, capture_output=True, text=True)
    found: dict[str, Any] = json.loads(out.stdout)
    return found


def depth(triple: list[float]) -> str:
    """A trie depth as hhtab gives it, [min, mean, max], as the paper prints it."""
    low, mean, high = triple
    return f"{low}/{mean:.2f}/{high}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", help="comma-separated, e.g. left-btree,right-grid (default all)")
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    args = parser.parse_args()
    rows = ROWS
    if args.rows:
        wanted = set(args.rows.split(","))
        rows = [row for row in ROWS if f"{row[0]}-{row[1]}" in wanted]
        if len(rows) != len(wanted):
            parser.error(f"--rows: not all of {sorted(wanted)} are rows such as left-btree")
    print("| benchmark | calls | subgoal trie nodes | subgoal trie depth | unique | repeated | "
          "answer trie nodes | answer trie depth |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for rec, shape, n in rows:
            r = statistics(args.build / "bin" / "hhtab", rec, shape, n, Path(tmp))
            print(f"| {rec.capitalize()} {shape.capitalize()} {n} | {r['calls']:,} | "
                  f"{r['subgoal_trie_nodes']:,} | {depth(r['subgoal_trie_depth'])} | "
                  f"{r['unique']:,} | {r['repeated']:,} | {r['answer_trie_nodes']:,} | "
                  f"{depth(r['answer_trie_depth'])} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
