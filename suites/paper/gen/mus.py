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

from planted import numbers, planted_clauses


def main() -> int:
    given = numbers(sys.argv[1:], "ifii", "mus.py VARIABLES RATIO PIGEONS SEED")
    if given is None:
        return 2
    variables, pigeons, seed = int(given[0]), int(given[2]), int(given[3])
    ratio = given[1]
    rng = random.Random(seed)
    planted = [False] + [rng.random() < 0.5 for _ in range(variables)]
    clauses = planted_clauses(1, variables, int(ratio * variables), planted, rng)

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
