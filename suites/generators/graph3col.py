#!/usr/bin/env python3
"""A ground ASP program for clasp: 3-colouring of a random graph, grounded by
gringo.  Prints gringo's output (aspif) on stdout.

    python3 graph3col.py NODES EDGES SEED

300,000 nodes and 600,000 edges give clasp a heap of about 1 GiB."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys

ENCODING = """col(r;g;b).
1 { color(X, C) : col(C) } 1 :- node(X).
:- edge(X, Y), color(X, C), color(Y, C).
#show color/2.
"""


def main() -> int:
    if len(sys.argv) != 4 or not all(a.isdigit() for a in sys.argv[1:]):
        print("usage: graph3col.py NODES EDGES SEED", file=sys.stderr)
        return 2
    nodes, edges, seed = (int(a) for a in sys.argv[1:])
    gringo = shutil.which("gringo")
    if gringo is None:
        print("graph3col.py: gringo is not installed (Debian package gringo)", file=sys.stderr)
        return 1
    rng = random.Random(seed)
    facts = [f"node(1..{nodes})."]
    for _ in range(edges):
        a, b = rng.randrange(1, nodes + 1), rng.randrange(1, nodes + 1)
        if a != b:
            facts.append(f"edge({a},{b}).")
    program = ENCODING + "\n".join(facts) + "\n"
    done = subprocess.run([gringo], input=program.encode(), stdout=sys.stdout.buffer)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
