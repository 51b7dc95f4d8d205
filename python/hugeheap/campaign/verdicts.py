"""Which answers hold: runs that contradict each other on an instance (one
says SAT, another UNSAT) cannot all be right. Where a SAT answer's model was
checked against the formula, the UNSAT answers are the wrong ones; otherwise
every answer on that instance is marked wrong, since we cannot tell."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from .store import RunRecord

UNSOLVED = {"unknown", "error", "wrong"}  # any other answer (sat, unsat, done, a regex's) solves
FAILED = {"error", "wrong"}


@dataclass
class Disagreement:
    instance: str
    sat: list[str]  # "tool/mode#repetition" of each run that said SAT
    unsat: list[str]
    checked_model: bool  # a SAT model was checked: the UNSAT side is wrong

    def describe(self) -> str:
        first = (f"{len(self.sat)} run(s) say SAT ({', '.join(self.sat[:3])}"
                 f"{', ...' if len(self.sat) > 3 else ''})")
        second = (f"{len(self.unsat)} say UNSAT ({', '.join(self.unsat[:3])}"
                  f"{', ...' if len(self.unsat) > 3 else ''})")
        blame = ("a checked model proves SAT: the UNSAT runs are marked wrong"
                 if self.checked_model else "no model was checked: all of them are marked wrong")
        return f"{self.instance}: {first}, {second}; {blame}"


def _label(record: RunRecord) -> str:
    return f"{record.tool}/{record.mode}#{record.repetition}"


def judge(records: Iterable[RunRecord]) -> list[Disagreement]:
    """Marks contradicting runs `wrong` in place; returns what disagreed."""
    by_instance: dict[str, list[RunRecord]] = defaultdict(list)
    for record in records:
        if record.verdict in ("sat", "unsat"):
            by_instance[record.instance].append(record)
    found = []
    for instance, answers in sorted(by_instance.items()):
        sat = [r for r in answers if r.verdict == "sat"]
        unsat = [r for r in answers if r.verdict == "unsat"]
        if not sat or not unsat:
            continue
        checked = any(r.verdict_detail == "model checked" for r in sat)
        found.append(Disagreement(instance, [_label(r) for r in sat], [_label(r) for r in unsat],
                                  checked))
        for record in unsat if checked else sat + unsat:
            record.verdict_detail = f"said {record.verdict}, contradicted on this instance"
            record.verdict = "wrong"
    return found


def solved(record: RunRecord) -> bool:
    return record.status == "ok" and record.verdict not in UNSOLVED


def failed(record: RunRecord) -> bool:
    return record.status in ("error", "signal") or record.verdict in FAILED
