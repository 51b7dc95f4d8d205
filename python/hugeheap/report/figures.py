"""Figures per instance where a campaign compares tools rather than modes:
the figures the tools measured of themselves (a query's or an exploration's
own time, bytes per state: answers/adapters.py), and ratios between two tools
of the same campaign (`--ratio A/B:FIGURE`), such as a program's time at two
threads over its time at one, or SWI-Prolog's query time over hhtab's. A may
be a glob (`'hhtab-*/hhtab-base:query_s'`): each tool it matches but B over B.

A ratio is given two ways, per instance and mode: of the medians (A's median
over B's), and the median of the ratios of each repetition (A's repetition r
over B's repetition r: the runs of one repetition ran close in time, so this
one is less disturbed by a slow stretch of the machine)."""

from __future__ import annotations

import fnmatch
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from ..campaign.store import RunRecord
from ..errors import HarnessError
from .analysis import Analysis, Cell, run_metrics

# The figures the harness measures of every run, by the name --ratio gives them.
MEASURED: dict[str, Callable[[RunRecord], float | None]] = {
    "cpu": lambda r: r.cputime,
    "wall": lambda r: r.walltime,
    "user": lambda r: r.cputime_user,
    "sys": lambda r: r.cputime_system,
    "peak": lambda r: None if r.memory_peak is None else float(r.memory_peak),
}


@dataclass(frozen=True)
class RatioAsked:
    """--ratio NUMERATOR/DENOMINATOR[:FIGURE]: two tools and a figure."""
    numerator: str
    denominator: str
    figure: str  # a name of MEASURED or a metric of the tools

    def __str__(self) -> str:
        return f"{self.numerator}/{self.denominator}:{self.figure}"


@dataclass
class Ratio:
    asked: RatioAsked
    instance: str
    mode: str
    numerator_median: float  # the first tool's figure, median over its repetitions
    denominator_median: float  # the second's
    of_medians: float | None
    per_repetition: list[float]  # repetitions both tools finished with the figure

    @property
    def median_per_repetition(self) -> float | None:
        return statistics.median(self.per_repetition) if self.per_repetition else None


def parse_ratio(text: str) -> RatioAsked:
    """--ratio's value; HarnessError naming the form where it is not one."""
    tools, _, figure = text.partition(":")
    numerator, slash, denominator = tools.partition("/")
    if not slash or not numerator or not denominator or (_ and not figure):
        raise HarnessError(f"--ratio {text}: write TOOL_A/TOOL_B or TOOL_A/TOOL_B:FIGURE (a "
                           f"figure: {', '.join(MEASURED)} or a metric of the tools)")
    return RatioAsked(numerator, denominator, figure or "cpu")


def each_tool(analysis: Analysis, asked: RatioAsked) -> list[RatioAsked]:
    """The ratio asked for each tool its numerator matches (B itself left
    out); HarnessError where it matches none."""
    matched = [tool for tool in analysis.tools
               if fnmatch.fnmatchcase(tool, asked.numerator) and tool != asked.denominator]
    if not matched:
        raise HarnessError(f"--ratio {asked}: the campaign has no tool {asked.numerator} (its "
                           f"tools: {', '.join(analysis.tools)})")
    return [RatioAsked(tool, asked.denominator, asked.figure) for tool in matched]


def metric_names(analysis: Analysis, tool: str) -> list[str]:
    """The metrics any run of the tool gave, sorted."""
    return sorted({name for r in analysis.runs if r.tool == tool for name in run_metrics(r)})


def tools_figures(analysis: Analysis) -> list[tuple[str, list[str], list[Cell]]]:
    """For each tool whose runs gave figures of their own: the tool, the
    figures' names and its cells by instance, then mode in the campaign's
    order."""
    found = []
    for tool in analysis.tools:
        metrics = metric_names(analysis, tool)
        if metrics:
            found.append((tool, metrics, sorted(
                (c for c in analysis.cells.values() if c.tool == tool),
                key=lambda c: (c.instance, analysis.modes.index(c.mode)))))
    return found


def _figure(record: RunRecord, figure: str) -> float | None:
    if figure in MEASURED:
        return MEASURED[figure](record)
    return run_metrics(record).get(figure)


def _check_asked(analysis: Analysis, asked: RatioAsked) -> None:
    """HarnessError for a tool the campaign has not, or a figure neither
    measured nor given by both tools."""
    for tool in (asked.numerator, asked.denominator):
        if tool not in analysis.tools:
            raise HarnessError(f"--ratio {asked}: the campaign has no tool {tool} (its tools: "
                               f"{', '.join(analysis.tools)})")
        if asked.figure not in MEASURED and asked.figure not in metric_names(analysis, tool):
            known = [*MEASURED, *metric_names(analysis, tool)]
            raise HarnessError(f"--ratio {asked}: {tool} has no figure {asked.figure} (it has "
                               f"{', '.join(known)})")


def _figures_by_repetition(analysis: Analysis, asked: RatioAsked
                          ) -> dict[tuple[str, str, str], dict[int, float]]:
    """(tool, instance, mode) -> repetition -> the figure, for both tools of
    the ratio, over the runs that ended ok and gave it."""
    figures: dict[tuple[str, str, str], dict[int, float]] = defaultdict(dict)
    for r in analysis.runs:
        if r.tool in (asked.numerator, asked.denominator) and r.status == "ok":
            value = _figure(r, asked.figure)
            if value is not None:
                figures[(r.tool, r.instance, r.mode)][r.repetition] = value
    return figures


def ratios(analysis: Analysis, asked: RatioAsked) -> list[Ratio]:
    """The ratio per instance both tools ran on and mode, over the runs that
    ended ok; HarnessError as _check_asked says."""
    _check_asked(analysis, asked)
    figures = _figures_by_repetition(analysis, asked)
    found = []
    for instance in analysis.instances:
        for mode in analysis.modes:
            above = figures.get((asked.numerator, instance, mode))
            below = figures.get((asked.denominator, instance, mode))
            if not above or not below:
                continue
            top, middle = statistics.median(above.values()), statistics.median(below.values())
            found.append(Ratio(
                asked, instance, mode, top, middle, top / middle if middle else None,
                [above[rep] / below[rep] for rep in sorted(above.keys() & below.keys())
                 if below[rep]]))
    return found
