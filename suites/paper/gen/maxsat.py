#!/usr/bin/env python3
"""Weighted partial MaxSAT problems (WCNF, the pre-2022 `p wcnf` form that
python-sat's RC2 reads) for suites/paper/maxsat.toml, on standard output.

    maxsat.py COMPONENTS VARIABLES HARD_RATIO SEED
        COMPONENTS independent parts of VARIABLES variables each; hard: in each part a
        random 3-SAT formula of HARD_RATIO * VARIABLES clauses, satisfiable by a planted
        assignment; soft: one unit clause per variable, the opposite of the planted value
        half of the time, weight 1..9. An optimum exists and is positive; the cores
        stay inside a part, so the work grows with COMPONENTS, the hardness with
        HARD_RATIO and VARIABLES.
"""

import random
import sys

from planted import numbers, planted_clauses


def main() -> int:
    given = numbers(sys.argv[1:], "iifi", "maxsat.py COMPONENTS VARIABLES HARD_RATIO SEED")
    if given is None:
        return 2
    parts, size, seed = int(given[0]), int(given[1]), int(given[3])
    ratio = given[2]
    rng = random.Random(seed)
    variables = parts * size
    planted = [False] + [rng.random() < 0.5 for _ in range(variables)]
    hard = [clause for part in range(parts)
            for clause in planted_clauses(part * size + 1, size, int(ratio * size), planted, rng)]
    soft = []
    for v in range(1, variables + 1):
        value = planted[v] if rng.random() < 0.5 else not planted[v]
        soft.append((rng.randint(1, 9), v if value else -v))
    top = sum(weight for weight, _ in soft) + 1
    out = [f"p wcnf {variables} {len(hard) + len(soft)} {top}"]
    out += [f"{top} {' '.join(map(str, clause))} 0" for clause in hard]
    out += [f"{weight} {literal} 0" for weight, literal in soft]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
