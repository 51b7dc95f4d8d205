"""Random 3-SAT clauses satisfied by a planted assignment: the satisfiable
part of the MaxSAT and MUS generators' formulas."""

import random
import sys


def planted_clauses(first: int, size: int, count: int, planted: list[bool],
                    rng: random.Random) -> list[list[int]]:
    """count clauses over variables first..first+size-1, each true under
    planted (indexed by variable)."""
    clauses: list[list[int]] = []
    while len(clauses) < count:
        chosen = rng.sample(range(first, first + size), 3)
        clause = [v if rng.random() < 0.5 else -v for v in chosen]
        if any((lit > 0) == planted[abs(lit)] for lit in clause):
            clauses.append(clause)
    return clauses


def numbers(words: list[str], kinds: str, usage: str) -> list[float] | None:
    """The command line as numbers, `i` an integer of at least 1 and `f` a
    positive number per word of kinds; None (and the usage on stderr) if not."""
    try:
        found = [int(w) if kind == "i" else float(w) for w, kind in zip(words, kinds,
                                                                          strict=True)]
    except ValueError:
        found = []
    if len(found) != len(kinds) or any(value <= 0 for value in found):
        print(f"usage: {usage}", file=sys.stderr)
        return None
    return found
