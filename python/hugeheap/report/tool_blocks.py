"""The blocks of a packed campaign that compares tools rather than modes
(hhtab against SWI-Prolog, a program at one thread and at two), made from
the figures the tools measured of themselves (figures.py), as `hugeheap
report` shows them in the terminal:
- `<!-- results:NAME figures [TOOL ...] -->`: for each tool that gave
  figures (or each of those named), a table per instance and mode of the
  harness's medians and the tool's own;
- `<!-- results:NAME ratio A/B:FIGURE ... -->`: a table per ratio asked (as
  `--ratio` takes them: A may be a glob, a table for each tool it matches),
  per instance and mode: each tool's median of the figure, the ratio of the
  medians and the median of the ratios of each repetition, and both tools'
  peak memory.
Under the tables, the legend and the campaign's provenance
(markdown.provenance)."""

from __future__ import annotations

from ..errors import HarnessError
from . import tables
from .analysis import Analysis, Cell
from .figures import Ratio, RatioAsked, each_tool, parse_ratio, ratios, tools_figures
from .markdown import provenance, table_head, table_row
from .packed import Packed

FIGURES = "figures"  # the marker's words after NAME
RATIO = "ratio"


def figures_block(packed: Packed, analysis: Analysis, folder: str,
                  tools: list[str] | None = None) -> str:
    """The whole block of the tools' own figures; folder: the packed
    campaign's folder as the docs name it; tools: only these tools' tables
    (default: every tool's). HarnessError where no tool gave figures of its
    own, or a tool named gave none."""
    found = tools_figures(analysis)
    if not found:
        raise HarnessError(f"<!-- results:{packed.name} {FIGURES} -->: no tool of the campaign "
                           "measured figures of its own; use <!-- results:NAME --> or "
                           "<!-- results:NAME by-instance -->")
    if tools:
        with_figures = [tool for tool, _, _ in found]
        for tool in tools:
            if tool not in with_figures:
                raise HarnessError(f"<!-- results:{packed.name} {FIGURES} {' '.join(tools)} -->: "
                                   f"the campaign has no figures of a tool '{tool}' (tools with "
                                   f"figures: {', '.join(with_figures)})")
        found = [one for one in found if one[0] in tools]
    lines: list[str] = []
    for tool, metrics, cells in found:
        lines += [f"{tool}:", "", *table_head(tables.figures_headers(metrics), 3),
                  *(table_row(tables.figures_row(cell, metrics)) for cell in cells), ""]
    return "\n".join([*lines, tables.FIGURES_LEGEND, "",
                      provenance(packed, analysis, folder, one_table=len(found) == 1)])


def _peak_mib(cell: Cell | None) -> str:
    return tables.shown(None if cell is None or cell.memory_peak is None
                        else cell.memory_peak / 2**20, "{:.0f}")


def _ratio_table(analysis: Analysis, asked: RatioAsked, found: list[Ratio]) -> list[str]:
    top, bottom, figure = asked.numerator, asked.denominator, asked.figure
    lines = [f"{top} / {bottom}, {figure}:", "",
             *table_head(["instance", "mode", f"{top} {figure}", f"{bottom} {figure}",
                          f"{top} / {bottom}", "per repetition", f"peak MiB: {top}, {bottom}"],
                         2)]
    for ratio in found:
        instance, mode, of_medians, per_repetition, _ = tables.ratio_row(ratio)
        peaks = [_peak_mib(analysis.cells.get((tool, mode, ratio.instance)))
                 for tool in (top, bottom)]
        lines.append(table_row([instance, mode, tables.metric_shown(ratio.numerator_median),
                                tables.metric_shown(ratio.denominator_median), of_medians,
                                per_repetition, ", ".join(peaks)]))
    return [*lines, ""]


def ratio_block(packed: Packed, analysis: Analysis, folder: str, texts: list[str]) -> str:
    """The whole block of ratios: a table per ratio, legend, provenance;
    texts: the marker's ratios (A/B:FIGURE). HarnessError where the marker
    names no ratio, or one the campaign cannot give (a tool or figure it has
    not, no instance both tools finished)."""
    if not texts:
        raise HarnessError(f"<!-- results:{packed.name} {RATIO} -->: name the ratios, as "
                           f"<!-- results:{packed.name} {RATIO} A/B:FIGURE ... --> (as `hugeheap "
                           "report --ratio` takes them)")
    asked = [one for text in texts for one in each_tool(analysis, parse_ratio(text))]
    lines: list[str] = []
    for one in asked:
        found = ratios(analysis, one)
        if not found:
            raise HarnessError(f"--ratio {one}: no instance where both tools have runs that "
                               f"ended ok in {packed.name}")
        lines += _ratio_table(analysis, one, found)
    return "\n".join([*lines, tables.RATIO_LEGEND + " Each tool's figure is its median over "
                      "those runs; peak: the median of each tool's peak memory (the run's "
                      "cgroup's, over all its repetitions).", "",
                      provenance(packed, analysis, folder, one_table=len(asked) == 1)])
