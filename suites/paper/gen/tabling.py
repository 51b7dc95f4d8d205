#!/usr/bin/env python3
"""The tabling paper's path programs for suites/paper/tabling.toml, on
standard output: edges, `:- table path/2.` and path/2 by left, right or
double recursion, nothing else, as issue 11 defines them (the same programs
`hhtab gen path` writes). The query is the tool's: SWI-Prolog counts
path(X,Y)'s answers with aggregate_all/3.

    tabling.py btree|cycle|grid|pyramid N left|right|double
        btree N    complete binary tree of N levels: edge(I, 2I), edge(I, 2I+1)
        cycle N    edge(I, I+1) for I < N, edge(N, 1)
        grid N     N x N nodes, an edge each way between horizontal and vertical neighbours
        pyramid N  nodes 1..2N: edge(1,2), edge(1,3); for I = 1..N-2 with L = 2I,
                   R = 2I+1: edge(L, L+2), edge(R, L+2), edge(R, R+2); then
                   edge(2N-2, 2N), edge(2N-1, 2N)
"""

import sys

RULES = {
    "left": "path(X,Z) :- path(X,Y), edge(Y,Z).\npath(X,Z) :- edge(X,Z).\n",
    "right": "path(X,Y) :- edge(X,Z), path(Z,Y).\npath(X,Y) :- edge(X,Y).\n",
    "double": "path(X,Z) :- path(X,Y), path(Y,Z).\npath(X,Z) :- edge(X,Z).\n",
}


def edges(shape: str, n: int) -> list[tuple[int, int]]:
    if shape == "btree":
        return [(i, c) for i in range(1, 2 ** (n - 1)) for c in (2 * i, 2 * i + 1)]
    if shape == "cycle":
        return [(i, i + 1) for i in range(1, n)] + [(n, 1)]
    if shape == "grid":
        found = []
        for row in range(n):
            for column in range(n):
                node = row * n + column + 1
                if column + 1 < n:
                    found += [(node, node + 1), (node + 1, node)]
                if row + 1 < n:
                    found += [(node, node + n), (node + n, node)]
        return found
    found = [(1, 2), (1, 3)]
    for i in range(1, n - 1):
        left, right = 2 * i, 2 * i + 1
        found += [(left, left + 2), (right, left + 2), (right, right + 2)]
    return found + [(2 * n - 2, 2 * n), (2 * n - 1, 2 * n)]


def main() -> int:
    words = sys.argv[1:]
    if len(words) != 3 or words[0] not in ("btree", "cycle", "grid", "pyramid") or \
            not words[1].isdigit() or int(words[1]) < 2 or words[2] not in RULES:
        print("usage: tabling.py btree|cycle|grid|pyramid N left|right|double", file=sys.stderr)
        return 2
    out = [f"edge({x},{y})." for x, y in edges(words[0], int(words[1]))]
    sys.stdout.write(":- table path/2.\n" + "\n".join(out) + "\n" + RULES[words[2]])
    return 0


if __name__ == "__main__":
    sys.exit(main())
