"""What a tool answered, and whether the answer holds.

Adapters read a run's exit code and output:
  sat      SAT-competition output (`s SATISFIABLE` / `s UNSATISFIABLE`, `v` lines
           with the model) or, without an `s` line, exit codes 10 / 20
  smtlib   the first `sat` / `unsat` / `unknown` line
  exitcode 0 is `done`, anything else `error`
  a regular expression (`regex:PATTERN`): its first group is the answer
A SAT answer's model is checked against the CNF: a model that leaves a clause
false makes the answer `wrong`, whatever the tool claimed."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import HarnessError

ADAPTERS = ("sat", "smtlib", "exitcode")


@dataclass
class Answer:
    verdict: str  # sat, unsat, unknown, done, error, wrong, or what a regex captured
    detail: str | None = None
    model: list[int] | None = None


def check_adapter_name(name: str) -> None:
    if name in ADAPTERS:
        return
    if name.startswith("regex:"):
        try:
            pattern = re.compile(name[len("regex:"):], re.M)
        except re.error as error:
            raise HarnessError(f"adapter {name!r}: not a regular expression ({error})") from None
        if pattern.groups < 1:
            raise HarnessError(f"adapter {name!r}: the expression needs a (group) for the answer")
        return
    raise HarnessError(f"unknown adapter {name!r} (known: {', '.join(ADAPTERS)}, regex:PATTERN)")


def classify(adapter: str, exit_code: int | None, output: str) -> Answer:
    if adapter == "sat":
        return _sat_competition_answer(exit_code, output)
    if adapter == "smtlib":
        for line in output.splitlines():
            word = line.strip()
            if word in ("sat", "unsat", "unknown"):
                return Answer(word)
        return Answer("unknown", "no sat/unsat line")
    if adapter == "exitcode":
        return Answer("done" if exit_code == 0 else "error", f"exit code {exit_code}")
    if adapter.startswith("regex:"):
        match = re.search(adapter[len("regex:"):], output, re.M)
        if match is None:
            return Answer("unknown", "the expression matched nothing")
        return Answer(match.group(1))
    raise HarnessError(f"unknown adapter {adapter!r}")


def _sat_competition_answer(exit_code: int | None, output: str) -> Answer:
    verdict = None
    model: list[int] = []
    for line in output.splitlines():
        if line.startswith("s "):
            status = line[2:].strip()
            verdict = {"SATISFIABLE": "sat", "UNSATISFIABLE": "unsat"}.get(status, "unknown")
        elif line.startswith("v "):
            model.extend(int(token) for token in line[2:].split() if token.lstrip("-").isdigit())
    if verdict is None:
        verdict = {10: "sat", 20: "unsat"}.get(exit_code or 0, "unknown")
    if verdict == "sat" and model and model[-1] == 0:
        model.pop()
    return Answer(verdict, model=model if verdict == "sat" and model else None)


def read_cnf(path: Path) -> tuple[int, list[list[int]]]:
    """(variables, clauses) of a DIMACS CNF file; a clear error if it is not one."""
    variables = -1
    clauses: list[list[int]] = []
    clause: list[int] = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("c") or line.startswith("%"):
                continue
            if line.startswith("p"):
                parts = line.split()
                if len(parts) != 4 or parts[1] != "cnf":
                    raise HarnessError(f"{path}:{number}: not a 'p cnf VARIABLES CLAUSES' line")
                variables = int(parts[2])
                continue
            for token in line.split():
                try:
                    literal = int(token)
                except ValueError:
                    raise HarnessError(f"{path}:{number}: '{token}' is not a literal") from None
                if literal == 0:
                    clauses.append(clause)
                    clause = []
                else:
                    clause.append(literal)
    if clause:
        clauses.append(clause)
    if variables < 0:
        raise HarnessError(f"{path}: no 'p cnf' header")
    return variables, clauses


def model_from_file(text: str) -> tuple[str | None, list[int]]:
    """A model file as minisat writes it (`SAT` then the literals, or `UNSAT`),
    or in SAT-competition form (`s` and `v` lines)."""
    lines = text.split("\n", 1)
    first = lines[0].strip()
    if first in ("SAT", "UNSAT", "INDET"):
        verdict = {"SAT": "sat", "UNSAT": "unsat"}.get(first)
        rest = lines[1] if len(lines) > 1 else ""
        model = [int(t) for t in rest.split() if t.lstrip("-").isdigit()]
        if model and model[-1] == 0:
            model.pop()
        return verdict, model
    answer = _sat_competition_answer(None, text)
    return (answer.verdict if answer.verdict != "unknown" else None), answer.model or []


@functools.lru_cache(maxsize=2)
def _formula(path: Path, mtime_ns: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(variables, literals, start of each clause) of a CNF, as arrays: checking a
    model of a million clauses takes a fraction of a second."""
    variables = -1
    with open(path) as f:
        body = []
        for line in f:
            if line[:1] in ("c", "%", "\n", ""):
                continue
            if line.startswith("p"):
                parts = line.split()
                if len(parts) == 4 and parts[1] == "cnf" and parts[2].isdigit():
                    variables = int(parts[2])
                continue
            body.append(line)
    try:
        literals = np.array(" ".join(body).split(), dtype=np.int64)
    except ValueError:
        read_cnf(path)  # names the line
        raise
    if variables < 0:
        read_cnf(path)
    if len(literals) and int(literals[-1]) != 0:
        literals = np.append(literals, 0)
    ends = np.flatnonzero(literals == 0)
    starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else np.zeros(0, np.int64)
    return variables, literals, starts


def check_sat_answer(answer: Answer, cnf: Path) -> Answer:
    """A `sat` answer whose model does not satisfy the formula becomes `wrong`.
    A `sat` answer without a model stays `sat` with a note that it is unchecked."""
    if answer.verdict != "sat":
        return answer
    if not answer.model:
        return Answer("sat", "no model printed: not checked")
    model = np.asarray(answer.model, dtype=np.int64)
    _, literals, starts = _formula(cnf, cnf.stat().st_mtime_ns)
    size = int(max(np.abs(model).max(), np.abs(literals).max(initial=0))) + 1
    true_positive = np.zeros(size, dtype=bool)
    true_negative = np.zeros(size, dtype=bool)
    true_positive[model[model > 0]] = True
    true_negative[-model[model < 0]] = True
    if np.any(true_positive & true_negative):
        return Answer("wrong", "the model sets a variable both true and false")
    if len(starts) == 0:
        return Answer("sat", "model checked", answer.model)
    holds = np.where(literals > 0, true_positive[np.abs(literals)],
                     true_negative[np.abs(literals)])
    # A clause is satisfied when one of its literals holds; the 0 closing each
    # clause never holds, so an empty clause is never satisfied.
    satisfied = np.logical_or.reduceat(holds, starts)
    if not satisfied.all():
        index = int(np.flatnonzero(~satisfied)[0])
        end = int(starts[index + 1] - 1) if index + 1 < len(starts) else len(literals) - 1
        clause = [int(x) for x in literals[starts[index]:end]]
        return Answer("wrong", f"the model leaves clause {index + 1} false: {clause}")
    return Answer("sat", "model checked", answer.model)
