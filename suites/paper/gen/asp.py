#!/usr/bin/env python3
"""Ground ASP programs for suites/paper/asp.toml: a graph problem written as
facts and an encoding, grounded by gringo, the ground program (aspif) on
standard output. The suite measures clasp on it; grounding is the
generator's job, so that no run measures gringo.

    asp.py colouring NODES EDGES COLOURS SEED   planted COLOURS-colouring: satisfiable
    asp.py hamilton NODES CHORDS SEED           a Hamiltonian cycle plus random chords
    asp.py mincolouring NODES EDGES COLOURS SEED  fewest colours (#minimize): an optimum
"""

import random
import subprocess
import sys

# The edge-colour pairs are ground first (clash/3): gringo grounds the
# constraint over them in linear time, where joining edge/2 with two
# colour/2 atoms directly took it quadratic time and memory.
COLOURING = """
1 { colour(N, C) : col(C) } 1 :- node(N).
clash(X, Y, C) :- edge(X, Y), col(C).
:- clash(X, Y, C), colour(X, C), colour(Y, C).
#show colour/2.
"""
ENCODINGS = {
    "colouring": COLOURING,
    "mincolouring": COLOURING + """
used(C) :- colour(_, C).
#minimize { 1, C : used(C) }.
""",
    "hamilton": """
{ cycle(X, Y) : edge(X, Y) } = 1 :- node(X).
{ cycle(X, Y) : edge(X, Y) } = 1 :- node(Y).
reached(Y) :- cycle(1, Y).
reached(Y) :- cycle(X, Y), reached(X).
:- node(Y), not reached(Y).
#show cycle/2.
""",
}


def planted_graph(nodes: int, edges: int, colours: int, rng: random.Random) -> set[tuple[int, int]]:
    """Random edges between nodes of different planted colour classes."""
    colour = [rng.randrange(colours) for _ in range(nodes + 1)]
    found: set[tuple[int, int]] = set()
    while len(found) < edges:
        x, y = rng.randint(1, nodes), rng.randint(1, nodes)
        if x != y and colour[x] != colour[y]:
            found.add((min(x, y), max(x, y)))
    return found


def facts(problem: str, numbers: list[int]) -> str:
    rng = random.Random(numbers[-1])
    lines = []
    if problem in ("colouring", "mincolouring"):
        nodes, edges, colours = numbers[:3]
        graph = planted_graph(nodes, edges, colours, rng)
        limit = colours + (2 if problem == "mincolouring" else 0)
        lines.append(f"node(1..{nodes}). col(1..{limit}).")
        lines += [f"edge({x},{y})." for x, y in sorted(graph)]
    else:
        nodes, chords = numbers[:2]
        order = list(range(2, nodes + 1))
        rng.shuffle(order)
        cycle = [1, *order]
        graph = {(cycle[i], cycle[(i + 1) % nodes]) for i in range(nodes)}
        while len(graph) < nodes + chords:
            x, y = rng.randint(1, nodes), rng.randint(1, nodes)
            if x != y:
                graph.add((x, y))
        lines.append(f"node(1..{nodes}).")
        lines += [f"edge({x},{y})." for x, y in sorted(graph)]
    return "\n".join(lines) + "\n"


def main() -> int:
    arity = {"colouring": 4, "mincolouring": 4, "hamilton": 3}
    if len(sys.argv) < 2 or sys.argv[1] not in arity or len(sys.argv) != 2 + arity[sys.argv[1]] \
            or not all(word.isdigit() for word in sys.argv[2:]):
        print("usage: asp.py colouring NODES EDGES COLOURS SEED | mincolouring NODES EDGES "
              "COLOURS SEED | hamilton NODES CHORDS SEED", file=sys.stderr)
        return 2
    problem = sys.argv[1]
    program = facts(problem, [int(w) for w in sys.argv[2:]]) + ENCODINGS[problem]
    try:
        done = subprocess.run(["gringo", "--output=intermediate"], input=program.encode(),
                              stdout=sys.stdout.buffer)
    except FileNotFoundError:
        print("asp.py: gringo is not installed (Debian package gringo)", file=sys.stderr)
        return 2
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
