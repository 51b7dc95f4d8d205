"""Why runs did not solve: per tool and mode, how many runs ended each way
(solved, unsolved, timeout, memout, error with its most common exit code or
signal, wrong), and for a tool that solved nothing (or a mode of it that
solved nothing where others did) one line saying why and what to try."""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..campaign.answers.adapters import TOOL_INFO, suggested_adapter
from ..campaign.answers.verdicts import solved
from ..campaign.folder import CampaignFolder
from ..campaign.store import RunRecord
from .analysis import Analysis

OUTCOMES = ("solved", "unsolved", "timeout", "memout", "error", "wrong")

_EXIT_MEANING = {10: "satisfiable", 20: "unsatisfiable", 30: "an optimum found"}


@dataclass
class OutcomeCounts:
    tool: str
    mode: str
    runs: int
    counts: dict[str, int]  # outcome -> runs
    error_cause: str | None  # the most common exit code or signal of the errors
    unsolved_cause: str | None  # the adapter's most common reason for no answer


def outcome(record: RunRecord) -> str:
    if record.verdict == "wrong":
        return "wrong"
    if solved(record):
        return "solved"
    if record.status in ("timeout", "memout"):
        return record.status
    if record.status in ("error", "signal") or record.verdict == "error":
        return "error"
    return "unsolved"


def _cause(record: RunRecord) -> str:
    if record.signal is not None:
        try:
            return f"signal {record.signal} ({signal.Signals(record.signal).name})"
        except ValueError:
            return f"signal {record.signal}"
    return f"exit code {record.exit_code}"


def _most_common(values: list[str]) -> str | None:
    return Counter(values).most_common(1)[0][0] if values else None


def count_outcomes(analysis: Analysis) -> list[OutcomeCounts]:
    by_mode: dict[tuple[str, str], list[RunRecord]] = {}
    for record in analysis.runs:
        by_mode.setdefault((record.tool, record.mode), []).append(record)
    found = []
    for tool in analysis.tools:
        for mode in analysis.modes:
            runs = by_mode.get((tool, mode), [])
            if not runs:
                continue
            kinds = [outcome(r) for r in runs]
            found.append(OutcomeCounts(
                tool, mode, len(runs), {k: kinds.count(k) for k in OUTCOMES},
                _most_common([_cause(r) for r, k in zip(runs, kinds, strict=True)
                              if k == "error"]),
                _most_common([r.verdict_detail or "no answer" for r, k in
                              zip(runs, kinds, strict=True) if k == "unsolved"])))
    return found


def _advice(analysis: Analysis, tool: str, kind: str, cause: str | None,
            runs: list[RunRecord]) -> str:
    argv, adapter = analysis.commands.get(tool, ([tool], "?"))
    program = Path(argv[0]).name if argv else tool
    # A tool-info module reads the answers of its tool: no adapter to suggest.
    suggested = None if adapter.startswith(TOOL_INFO) else suggested_adapter(program)
    if kind == "error" and cause and cause.startswith("exit code "):
        code = int(cause.split()[-1]) if cause.split()[-1].isdigit() else None
        if code in _EXIT_MEANING and adapter not in ("sat", "asp", "maxsat") and \
                not adapter.startswith(TOOL_INFO):
            better = suggested if suggested in ("asp", "sat") else "sat"
            return (f"is the adapter right? {program} reports {_EXIT_MEANING[code]} with exit "
                    f"code {code}; try adapter = \"{better}\"")
        if code == 127:
            return "the command was not found: check its program and path in the suite"
        if code == 126:
            return "the command is not executable: check its program in the suite"
    if kind == "timeout":
        return (f"every such run reached the CPU limit ({analysis.cpu_limit:g} s): raise "
                "cpu_time in [limits], or use smaller instances")
    if kind == "memout":
        return "raise memory in [limits], or use smaller instances"
    if kind == "wrong" and adapter.startswith(TOOL_INFO):
        return ("its answers contradict the tasks' expected verdicts (see BenchExec's "
                "categories) or each other (see WRONG ANSWERS)")
    if kind == "wrong":
        return "its answers were contradicted (see WRONG ANSWERS)"
    if kind == "unsolved" and suggested and suggested != adapter:
        return (f"the adapter \"{adapter}\" found no answer in {program}'s output; try "
                f"adapter = \"{suggested}\"")
    example = next((r.output for r in runs if r.output), None)
    where = (f"{CampaignFolder(analysis.directory).outputs / example}"
             if example and analysis.directory else "the run's output")
    if kind == "unsolved":
        return f"the adapter \"{adapter}\" found no answer: see {where}"
    return f"see {where}"


def explain(analysis: Analysis, counts: list[OutcomeCounts]) -> list[str]:
    """One line for each tool that solved nothing, and for each mode of a tool
    that solved nothing where another mode of it solved something."""
    lines = []
    for tool in analysis.tools:
        mine = [c for c in counts if c.tool == tool]
        if not mine:
            continue
        if sum(c.counts["solved"] for c in mine) == 0:
            groups = [(tool, mine, [r for r in analysis.runs if r.tool == tool])]
        else:
            groups = [(f"{tool} under {c.mode}", [c],
                       [r for r in analysis.runs if r.tool == tool and r.mode == c.mode])
                      for c in mine if c.counts["solved"] == 0]
        for label, group, runs in groups:
            total = sum(c.runs for c in group)
            merged: Counter[str] = Counter()
            for c in group:
                merged.update(c.counts)
            kind, number = merged.most_common(1)[0]
            causes = [c.error_cause if kind == "error" else c.unsolved_cause
                      for c in group if c.counts[kind]]
            cause = _most_common([c for c in causes if c])
            said = f"with {cause}" if kind == "error" and cause else (
                f"({cause})" if kind == "unsolved" and cause else "")
            lines.append(f"{label}: {number} of {total} runs ended '{kind}'"
                         f"{' ' + said if said else ''}: "
                         f"{_advice(analysis, tool, kind, cause, runs)}")
    return lines
