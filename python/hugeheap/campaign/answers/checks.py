"""Checks of an answer against its instance, where the instance can prove
it wrong: a SAT model must satisfy every clause of the CNF; a MaxSAT model
must satisfy every hard clause of the WCNF, and the weights of the soft
clauses it leaves false must add up to the cost the solver claimed (a plain
CNF given to a MaxSAT solver is unweighted MaxSAT: every clause soft,
weighing 1, as RC2 and the MaxSAT Evaluation read it); a MUS's
clause numbers must be clauses of the formula. A checked answer says so in
its detail (`model checked`), which verdicts.py trusts over an unchecked one.
Formulas are read as arrays: checking a model of a million clauses takes a
fraction of a second; a compressed formula is read as it is stored."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ...errors import HarnessError
from ..compression import open_text, plain_name
from .adapters import Answer, sat_competition_answer

CHECKED = "model checked"  # the detail of an answer a check confirmed


def _format(instance: Path) -> str:
    """The instance's format, by its suffix (x.cnf.xz is a CNF, compressed)."""
    return Path(plain_name(instance.name)).suffix


def check(adapter: str, answer: Answer, instance: Path, model_text: str | None) -> Answer:
    """The answer after the checks its adapter allows; model_text: the file
    the tool wrote its model to ({model}), if it wrote one."""
    if adapter == "sat":
        if model_text is not None:
            verdict, model = model_from_file(model_text)
            if answer.verdict == "unknown" and verdict is not None:
                answer = Answer(verdict)
            if answer.verdict == "sat" and model:
                answer = Answer("sat", model=model)
        if answer.verdict == "sat" and _format(instance) != ".cnf":
            return Answer("sat", "model not checked: the instance is not a .cnf file")
        checker: Callable[[Answer, Path], Answer] = check_sat_answer
    elif adapter == "maxsat":
        checker = check_maxsat_answer
    elif adapter == "mus":
        checker = check_mus_answer
    else:
        return answer
    try:
        checked = checker(answer, instance)
    except (HarnessError, OSError, ValueError) as error:
        return Answer(answer.verdict, f"model not checked: {error}", value=answer.value)
    checked.model = None  # checked; the record keeps the verdict, the file keeps the model
    return checked


def read_cnf(path: Path) -> tuple[int, list[list[int]]]:
    """(variables, clauses) of a DIMACS CNF file; a clear error if it is not one."""
    variables = -1
    clauses: list[list[int]] = []
    clause: list[int] = []
    with open_text(path) as f:
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
    answer = sat_competition_answer(None, text)
    return (answer.verdict if answer.verdict != "unknown" else None), answer.model or []


def _clause_starts(literals: np.ndarray) -> np.ndarray:
    """Where each 0-terminated clause of literals starts."""
    ends = np.flatnonzero(literals == 0)
    return np.concatenate(([0], ends[:-1] + 1)) if len(ends) else np.zeros(0, np.int64)


@functools.lru_cache(maxsize=2)
def _formula(path: Path, mtime_ns: int) -> tuple[int, np.ndarray, np.ndarray]:
    """(variables, literals, start of each clause) of a CNF, as arrays."""
    variables = -1
    with open_text(path) as f:
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
    return variables, literals, _clause_starts(literals)


def _satisfied(model: list[int], literals: np.ndarray, starts: np.ndarray
               ) -> np.ndarray | str:
    """Which clauses the model satisfies, or why the model is no assignment."""
    values = np.asarray(model, dtype=np.int64)
    size = int(max(np.abs(values).max(initial=0), np.abs(literals).max(initial=0))) + 1
    true_positive = np.zeros(size, dtype=bool)
    true_negative = np.zeros(size, dtype=bool)
    true_positive[values[values > 0]] = True
    true_negative[-values[values < 0]] = True
    if np.any(true_positive & true_negative):
        return "the model sets a variable both true and false"
    if len(starts) == 0:
        return np.zeros(0, dtype=bool)
    holds = np.where(literals > 0, true_positive[np.abs(literals)],
                     true_negative[np.abs(literals)])
    # A clause is satisfied when one of its literals holds; the 0 closing each
    # clause never holds, so an empty clause is never satisfied.
    return np.asarray(np.logical_or.reduceat(holds, starts))


def _clause(literals: np.ndarray, starts: np.ndarray, index: int) -> list[int]:
    end = int(starts[index + 1] - 1) if index + 1 < len(starts) else len(literals) - 1
    return [int(x) for x in literals[starts[index]:end]]


def check_sat_answer(answer: Answer, cnf: Path) -> Answer:
    """A `sat` answer whose model does not satisfy the formula becomes `wrong`.
    A `sat` answer without a model stays `sat` with a note that it is unchecked."""
    if answer.verdict != "sat":
        return answer
    if not answer.model:
        return Answer("sat", "no model printed: not checked")
    _, literals, starts = _formula(cnf, cnf.stat().st_mtime_ns)
    satisfied = _satisfied(answer.model, literals, starts)
    if isinstance(satisfied, str):
        return Answer("wrong", satisfied)
    if not satisfied.all():
        index = int(np.flatnonzero(~satisfied)[0])
        return Answer("wrong", f"the model leaves clause {index + 1} false: "
                               f"{_clause(literals, starts, index)}")
    return Answer("sat", CHECKED, answer.model)


@functools.lru_cache(maxsize=2)
def _weighted_formula(path: Path, mtime_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weight of each clause, -1 for a hard one; literals; start of each
    clause) of a WCNF, in the pre-2022 form (`p wcnf V C TOP`, hard clauses
    weighing TOP) or the 2022 form (`h` before a hard clause)."""
    top: int | None = None
    weights: list[int] = []
    body: list[str] = []
    with open_text(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words or words[0].startswith("c"):  # the MSE's JSON header: `c{`, `c "nvars"`
                continue
            if words[0] == "p":
                if len(words) < 4 or words[1] != "wcnf":
                    raise HarnessError(f"{path}:{number}: not a 'p wcnf VARIABLES CLAUSES TOP' "
                                       "line")
                top = int(words[4]) if len(words) > 4 else None
                continue
            if words[-1] != "0":
                raise HarnessError(f"{path}:{number}: a clause must end with 0 on its line")
            if words[0] == "h":
                weights.append(-1)
            elif words[0].isdigit():
                weight = int(words[0])
                weights.append(-1 if top is not None and weight >= top else weight)
            else:
                raise HarnessError(f"{path}:{number}: '{words[0]}' is no weight")
            body.append(" ".join(words[1:]))
    literals = np.array(" ".join(body).split(), dtype=np.int64)
    return np.asarray(weights, dtype=np.int64), literals, _clause_starts(literals)


def _maxsat_formula(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, literals, clause starts) of a MaxSAT instance: a WCNF as it
    states them, a plain CNF as unweighted MaxSAT (every clause soft, weight 1)."""
    mtime_ns = path.stat().st_mtime_ns
    if _format(path) == ".cnf":
        _, literals, starts = _formula(path, mtime_ns)
        return np.ones(len(starts), dtype=np.int64), literals, starts
    return _weighted_formula(path, mtime_ns)


def check_maxsat_answer(answer: Answer, instance: Path) -> Answer:
    """An optimum whose model breaks a hard clause, or whose false soft
    clauses weigh other than the claimed cost, becomes `wrong`."""
    if answer.verdict != "optimum":
        return answer
    if not answer.model:
        return Answer("optimum", "no model printed: cost not checked", value=answer.value)
    weights, literals, starts = _maxsat_formula(instance)
    satisfied = _satisfied(answer.model, literals, starts)
    if isinstance(satisfied, str):
        return Answer("wrong", satisfied)
    broken = np.flatnonzero(~satisfied & (weights < 0))
    if len(broken):
        return Answer("wrong", f"the model leaves hard clause {int(broken[0]) + 1} false: "
                               f"{_clause(literals, starts, int(broken[0]))}")
    cost = int(weights[~satisfied & (weights >= 0)].sum())
    if str(cost) != answer.value:
        return Answer("wrong", f"claimed cost {answer.value}, but the model's false soft "
                               f"clauses weigh {cost}")
    return Answer("optimum", f"{CHECKED}: cost {cost}", answer.model, value=answer.value)


def _clause_count(path: Path) -> int:
    if _format(path) == ".wcnf":
        return len(_weighted_formula(path, path.stat().st_mtime_ns)[0])
    return len(_formula(path, path.stat().st_mtime_ns)[2])


def check_mus_answer(answer: Answer, formula: Path) -> Answer:
    """A MUS naming a clause the formula does not have becomes `wrong`
    (whether the clauses are unsatisfiable and minimal is not checked)."""
    if answer.verdict != "mus" or answer.model is None:
        return answer
    count = _clause_count(formula)
    outside = [c for c in answer.model if not 1 <= c <= count]
    if outside:
        return Answer("wrong", f"clause {outside[0]} is not one of the formula's {count}")
    if len(set(answer.model)) != len(answer.model):
        return Answer("wrong", "the MUS names a clause twice")
    return Answer("mus", f"{len(answer.model)} clauses, numbers checked", value=answer.value)
