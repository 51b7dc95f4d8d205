#!/usr/bin/env python3
"""Unsatisfiable CNF formulas with a small core in a large satisfiable rest,
for suites/paper/mus.toml (a MUS extractor's work grows with the core, its
heap with the whole formula), on standard output.

    mus.py VARIABLES RATIO PIGEONS SEED
        a random 3-SAT formula of RATIO * VARIABLES clauses, satisfiable by a
        planted assignment, and the pigeonhole principle PIGEONS + 1 into PIGEONS
        holes on variables of its own (unsatisfiable: its clauses are the MUS), the
        clauses shuffled together
"""

import random
import sys


def main() -> int:
    words = sys.argv[1:]
    try:
        variables, ratio, pigeons, seed = int(words[0]), float(words[1]), int(words[2]), \
            int(words[3])
        if len(words) != 4 or variables < 3 or pigeons < 1:
            raise ValueError
    except (ValueError, IndexError):
        print("usage: mus.py VARIABLES RATIO PIGEONS SEED", file=sys.stderr)
        return 2
    rng = random.Random(seed)
    planted = [False] + [rng.random() < 0.5 for _ in range(variables)]
    clauses = []
    while len(clauses) < int(ratio * variables):
        chosen = rng.sample(range(1, variables + 1), 3)
        clause = [v if rng.random() < 0.5 else -v for v in chosen]
        if any((lit > 0) == planted[abs(lit)] for lit in clause):
            clauses.append(clause)

    def sits(pigeon: int, hole: int) -> int:  # pigeon in 0..pigeons, hole in 0..pigeons-1
        return variables + 1 + pigeon * pigeons + hole

    clauses += [[sits(p, h) for h in range(pigeons)] for p in range(pigeons + 1)]
    clauses += [[-sits(p, h), -sits(q, h)] for h in range(pigeons)
                for p in range(pigeons + 1) for q in range(p + 1, pigeons + 1)]
    rng.shuffle(clauses)
    total = variables + (pigeons + 1) * pigeons
    out = [f"p cnf {total} {len(clauses)}"] + [" ".join(map(str, c)) + " 0" for c in clauses]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
