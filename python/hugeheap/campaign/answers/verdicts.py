"""Which answers hold: runs that contradict each other on an instance cannot
all be right, and are marked `wrong`, loudly.

Some answers are facts of the instance, whichever tool gave them: SAT against
UNSAT (an optimum found is also a SAT answer), two different optimum costs,
two different answer counts of a query, two different state counts of a net.
Where a checked model proves one side (checks.py), the answers it refutes are
the wrong ones: UNSAT against a checked model, an optimum costlier than a
checked model's. Otherwise every contradicting answer is marked wrong, since
we cannot tell which is right.

Other answers are facts of one tool (the states Spin stored, the MUS a
particular extractor found, a regex's word): the runs of that tool on the
instance, under every allocator mode, must agree. A property violation in one
mode and not in another is such a disagreement, and so is a counterexample
a model checker finds in another frame under another mode.

A model checker's answers are facts of the tool (the frame of a
counterexample depends on the algorithm: bounded model checking finds the
shortest, PDR often a longer one) and, between tools, partly of the design:
a proof contradicts any counterexample, and no counterexample in N frames
contradicts one in a frame before N."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from ..store import RunRecord
from .checks import CHECKED

UNSOLVED = {"unknown", "error", "wrong"}  # any other answer (sat, unsat, done, a regex's) solves
FAILED = {"error", "wrong"}
SATISFIABILITY = {"sat", "unsat", "optimum"}  # answers about the instance, whoever gave them
INSTANCE_VALUES = {"answers", "states"}  # values that are facts of the instance
SAFETY = {"cex", "bounded", "proved"}  # a model checker's answers on a design's property


@dataclass
class Disagreement:
    instance: str
    claims: dict[str, list[str]]  # what was said -> "tool/mode#repetition" of each run saying it
    blame: str  # which runs are marked wrong, and why
    tool: str | None = None  # set where the runs of one tool disagree

    def describe(self) -> str:
        parts = []
        for number, (claim, runs) in enumerate(self.claims.items()):
            listed = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
            parts.append(f"{len(runs)}{' run(s)' if number == 0 else ''} say {claim} ({listed})")
        return f"{self.instance}: {', '.join(parts)}; {self.blame}"


def _label(record: RunRecord) -> str:
    return f"{record.tool}/{record.mode}#{record.repetition}"


def _claim(record: RunRecord) -> str:
    if record.verdict in ("sat", "unsat"):
        return record.verdict.upper()
    if record.verdict == "optimum":
        return f"OPTIMUM {record.answer_value}"
    return record.verdict + (f" {record.answer_value}" if record.answer_value is not None else "")


def _checked(record: RunRecord) -> bool:
    return (record.verdict_detail or "").startswith(CHECKED)


def _cost(record: RunRecord) -> tuple[float, ...]:
    """An optimum's cost, comparable (ASP's costs have one number per level)."""
    try:
        return tuple(float(word) for word in (record.answer_value or "").split())
    except ValueError:
        return ()


def _frames(record: RunRecord) -> int:
    """The frame of a counterexample, or the frames without one."""
    value = record.answer_value or ""
    return int(value) if value.isdigit() else -1


def _contradict(runs: list[RunRecord]) -> bool:
    verdicts = {r.verdict for r in runs}
    if "unsat" in verdicts and verdicts & {"sat", "optimum"}:
        return True
    counterexamples = [_frames(r) for r in runs if r.verdict == "cex"]
    if counterexamples and any(r.verdict == "proved" or r.verdict == "bounded" and
                               _frames(r) > min(counterexamples) for r in runs):
        return True
    for verdict in verdicts - {"sat", "unsat"} - SAFETY:
        if len({r.answer_value for r in runs if r.verdict == verdict}) > 1:
            return True
    return False


def _refutes(proof: RunRecord, other: RunRecord) -> bool:
    """Whether a checked answer proves another one wrong."""
    if other.verdict == "unsat":
        return proof.verdict in ("sat", "optimum")
    if other.verdict == "optimum" and proof.verdict == "optimum":
        found, claimed = _cost(proof), _cost(other)
        return bool(found and claimed) and found < claimed
    return False


def _mark_wrong(records: list[RunRecord]) -> None:
    for record in records:
        record.verdict_detail = f"said {_claim(record)}, contradicted on this instance"
        record.verdict = "wrong"


def _claims(runs: Iterable[RunRecord]) -> dict[str, list[str]]:
    """Who claimed what, in the order of runs."""
    claims: dict[str, list[str]] = defaultdict(list)
    for record in runs:
        claims[_claim(record)].append(_label(record))
    return dict(claims)


def _judge_fact(instance: str, runs: list[RunRecord]) -> Disagreement | None:
    """Runs whose answers are facts of the instance."""
    if not _contradict(runs):
        return None
    claims = _claims(sorted(runs, key=lambda r: (r.verdict not in ("sat", "optimum"), _claim(r))))
    proofs = [r for r in runs if _checked(r)]
    refuted = [r for r in runs if any(_refutes(p, r) for p in proofs)]
    rest = [r for r in runs if r not in refuted]
    if refuted and not _contradict(rest):
        proved = ", ".join(sorted({_claim(p) for p in proofs}))
        said = ", ".join(sorted({_claim(r) for r in refuted}))
        blame = f"a checked model proves {proved}: the {said} runs are marked wrong"
        _mark_wrong(refuted)
    else:
        blame = ("no model was checked: all of them are marked wrong" if not proofs
                 else "the checked models do not settle it: all of them are marked wrong")
        _mark_wrong(runs)
    return Disagreement(instance, claims, blame)


def judge(records: Iterable[RunRecord]) -> list[Disagreement]:
    """Marks contradicting runs `wrong` in place; returns what disagreed."""
    by_fact: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    by_tool: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    safety: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.verdict in UNSOLVED:
            continue
        if record.verdict in SATISFIABILITY:
            by_fact[(record.instance, "satisfiability")].append(record)
        elif record.verdict in INSTANCE_VALUES:
            by_fact[(record.instance, record.verdict)].append(record)
        else:
            by_tool[(record.instance, record.tool)].append(record)
            if record.verdict in SAFETY:
                safety[record.instance].append(record)
    found = []
    for (instance, _), runs in sorted(by_fact.items()):
        disagreement = _judge_fact(instance, runs)
        if disagreement:
            found.append(disagreement)
    for (instance, tool), runs in sorted(by_tool.items()):
        claims = {(r.verdict, r.answer_value) for r in runs}
        if len(claims) > 1:
            claimed = _claims(runs)
            _mark_wrong(runs)
            found.append(Disagreement(instance, claimed, "the modes of one tool must "
                                      "agree: all of them are marked wrong", tool))
    # Between model checkers, once each agrees with itself.
    for instance, runs in sorted(safety.items()):
        disagreement = _judge_fact(instance, [r for r in runs if r.verdict != "wrong"])
        if disagreement:
            found.append(disagreement)
    return found


def solved(record: RunRecord) -> bool:
    return record.status == "ok" and record.verdict not in UNSOLVED


def failed(record: RunRecord) -> bool:
    return record.status in ("error", "signal") or record.verdict in FAILED
