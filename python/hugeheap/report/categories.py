"""BenchExec's categories and score, per tool and mode, for the campaigns
whose tasks have expected verdicts (a benchmark definition's YAML tasks):
how many results were correct (true, false), wrong (true, false), unknown,
errors or missing an expected verdict, and the SV-COMP score against the
most the tasks allow, where the property is one of SV-COMP's.

A cell (a tool and mode on one task, over its repetitions) counts once, with
the category BenchExec gave the run whose verdict the cell has
(report/analysis.py): the counts are of tasks, as in BenchExec's tables."""

from __future__ import annotations

from dataclasses import dataclass

from .analysis import Analysis

COLUMNS = ("correct true", "correct false", "wrong true", "wrong false", "unknown", "error",
           "missing")


@dataclass
class CategoryCounts:
    tool: str
    mode: str
    counts: dict[str, int]  # a column of COLUMNS -> tasks
    score: int | None  # None where no task's property has a score (not SV-COMP's)
    max_score: int | None


def _column(category: str, status: str) -> str:
    """The column of a result: correct and wrong split by the answer given."""
    from benchexec import result
    if category in (result.CATEGORY_CORRECT, result.CATEGORY_WRONG):
        answered = result.get_result_classification(status)
        return f"{category} {'true' if answered == result.RESULT_CLASS_TRUE else 'false'}"
    if category == result.CATEGORY_CORRECT_UNCONFIRMED:
        return "unknown"
    return category if category in COLUMNS else "error"


def has_expected_verdicts(analysis: Analysis) -> bool:
    return any(c.benchexec and c.benchexec.get("expected") for c in analysis.cells.values())


def count_categories(analysis: Analysis) -> list[CategoryCounts]:
    """Per tool and mode with BenchExec results; empty where no task of the
    campaign has an expected verdict (every category would be `missing`)."""
    if not has_expected_verdicts(analysis):
        return []
    found = []
    for tool in analysis.tools:
        for mode in analysis.modes:
            cells = [c.benchexec for (t, m, _), c in sorted(analysis.cells.items())
                     if t == tool and m == mode and c.benchexec]
            if not cells:
                continue
            counts = dict.fromkeys(COLUMNS, 0)
            for cell in cells:
                counts[_column(cell["category"], cell["status"])] += 1
            scores = [cell["score"] for cell in cells if cell.get("score") is not None]
            most = [cell["max_score"] for cell in cells if cell.get("max_score") is not None]
            found.append(CategoryCounts(tool, mode, counts, sum(scores) if scores else None,
                                        sum(most) if scores else None))
    return found
