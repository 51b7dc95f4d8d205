#!/usr/bin/env python3
"""A SWI-Prolog program that tables the transitive closure of a chain of N
nodes (N*(N-1)/2 answers in one table; N = 3000 gives about 4.5 million
answers and a few hundred MiB of tables) and prints how many it found.

    python3 tabling_tc.py N > tc.pl;  swipl tc.pl"""

from __future__ import annotations

import sys


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print("usage: tabling_tc.py N", file=sys.stderr)
        return 2
    n = int(sys.argv[1])
    out = [":- initialization(main, main).",
           ":- table path/2.",
           "path(X, Y) :- edge(X, Y).",
           "path(X, Y) :- path(X, Z), edge(Z, Y).",
           "main :- aggregate_all(count, path(_, _), Count), format(\"answers ~d~n\", [Count]).",
           ]
    out.extend(f"edge({i},{i + 1})." for i in range(1, n))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
