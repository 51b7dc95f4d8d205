"""The block `<!-- results:NAME by-instance -->`: the packed campaign NAME
in one table with a row per tool and instance (the tools in the campaign's
order, each one's instances from the smallest heap up, by the baseline's
peak memory, so that a ladder of heap sizes reads in order), what a reader
needs where the per-tool tables average away what one instance costs (a
small process's memory, say). Its columns: the baseline's CPU time and peak
memory; the speed of every other mode (the baseline's CPU time over the
mode's); the peak memory of every other mode over the baseline's (as bounds
where its runs held pool pages); where
some mode put part of a heap in huge pages, the share of the heap in huge
pages under each mode that did (how far up a ladder of heap sizes huge
pages reach). Each figure is the median over the repetitions that finished correctly
(verdicts.solved: the runs the analysis counts as solving); a mode with
none shows `-`. Under the table, its legend and the campaign's provenance
(markdown.provenance)."""

from __future__ import annotations

from ..campaign.answers.verdicts import solved
from . import tables
from .analysis import Analysis, Cell, cells_of
from .markdown import provenance, table_head, table_row
from .packed import Packed

BY_INSTANCE = "by-instance"  # the marker's word after NAME


def _ratio(above: float | None, below: float | None) -> float | None:
    return above / below if above is not None and below else None


def _cpu(cell: Cell | None) -> float | None:
    return cell.solved_cputime if cell else None


def _peak(cell: Cell | None) -> float | None:
    return None if cell is None or cell.memory_peak is None else float(cell.memory_peak)


def _peak_ratio(cell: Cell | None, below: float | None) -> str:
    """The cell's peak over below; for runs holding pool pages, the least and
    the most it can be, as least-most (one figure where they round alike)."""
    most = tables.shown(_ratio(_peak(cell), below))
    if cell is None or cell.memory_peak_lower is None:
        return most
    least = tables.shown(_ratio(float(cell.memory_peak_lower), below))
    return most if least == most else f"{least}-{most}"


def _bounded(analysis: Analysis) -> bool:
    """Whether some run of the campaign has its peak as bounds (pool pages)."""
    return any(r.memory_peak_lower is not None for r in analysis.runs)


def _huge(cell: Cell | None) -> float | None:
    return cell.huge_share if cell else None


def huge_modes(analysis: Analysis) -> list[str]:
    """The modes, in the campaign's order, with a run that finished correctly
    and had part of its heap in huge pages: the huge column's (none, no
    column)."""
    shared = {r.mode for r in analysis.runs if solved(r) and r.huge_share}
    return [m for m in analysis.modes if m in shared]


def headers(analysis: Analysis, huge: list[str]) -> list[str]:
    """The table's head; huge: huge_modes(analysis)."""
    others = ", ".join(m for m in analysis.modes if m != analysis.baseline)
    return ["tool, instance", f"{analysis.baseline}: CPU s, peak MiB",
            *([f"speed: {others}", f"peak / {analysis.baseline}: {others}"] if others else []),
            *([f"huge: {', '.join(huge)}"] if huge else [])]


def smallest_heap_first(analysis: Analysis, cells: dict[tuple[str, str, str], Cell],
                        tool: str) -> list[str]:
    """The tool's instances by the baseline's peak memory, then by name; those
    the baseline never finished correctly last."""
    def key(instance: str) -> tuple[float, str]:
        peak = _peak(cells.get((tool, analysis.baseline, instance)))
        return (float("inf") if peak is None else peak, instance)
    return sorted(analysis.instances_of(tool), key=key)


def rows(analysis: Analysis, huge: list[str]) -> list[list[str]]:
    """The table's cells, a row per tool and instance; huge: huge_modes(analysis)."""
    cells = cells_of([r for r in analysis.runs if solved(r)])
    others = [m for m in analysis.modes if m != analysis.baseline]
    found = []
    for tool in analysis.tools:
        for instance in smallest_heap_first(analysis, cells, tool):
            base = cells.get((tool, analysis.baseline, instance))
            peak = _peak(base)
            moded = [cells.get((tool, mode, instance)) for mode in others]
            found.append([
                f"{tool}, {instance}",
                f"{tables.shown(_cpu(base), '{:.3f}')}, "
                f"{tables.shown(None if peak is None else peak / 2**20, '{:.1f}')}",
                *([", ".join(tables.shown(_ratio(_cpu(base), _cpu(cell))) for cell in moded),
                   ", ".join(_peak_ratio(cell, peak) for cell in moded)]
                  if others else []),
                *([", ".join(tables.shown(_huge(cells.get((tool, mode, instance))), "{:.0%}")
                             for mode in huge)] if huge else [])])
    return found


def legend(baseline: str, huge: bool, bounded: bool = False) -> str:
    """bounded: some mode's runs held pool pages (_bounded)."""
    return (f"Per tool and instance, medians over the repetitions that finished correctly "
            f"(ended ok, the answer not unknown, error or wrong): "
            f"{baseline}: its CPU time (user + system) in seconds and its peak memory in MiB "
            f"(the peak of the run's cgroup, as the campaign recorded it); speed: {baseline}'s "
            f"CPU time / the mode's, for each other mode in the order named; peak / {baseline}: "
            f"the mode's peak memory / {baseline}'s, in the same order"
            + (" (for a mode whose runs held pages of the hugetlb pool, least-most: its peak "
               "is at least the most memory and pool pages seen held at one moment, read "
               "together every 10 ms, and at most memory's peak and the pool pages' peak "
               "added, which may fall at different moments; campaigns since 2026-12-07 on "
               "cgroup v1 without swap add memory's peak over each 10-20 ms between readings "
               "of its peak counters and the pool pages' peak so far, and take the largest "
               "sum)" if bounded else "")
            + "; "
            + ("huge: the share of the heap in huge pages (runs.csv's huge_share), for each "
               "mode that put part of a heap in them, in the order named (- also where no "
               "sample of the runs saw 1 MiB of anonymous memory: runs too short or too "
               "small to tell); "
               if huge else "")
            + f"-: the mode, or {baseline}, has no run on the instance that finished correctly.")


def instance_block(packed: Packed, analysis: Analysis, folder: str) -> str:
    """The whole block: table, legend, provenance; folder: the packed
    campaign's folder as the docs name it."""
    huge = huge_modes(analysis)
    return "\n".join([*table_head(headers(analysis, huge), 1),
                      *(table_row(row) for row in rows(analysis, huge)), "",
                      legend(analysis.baseline, bool(huge), _bounded(analysis)), "",
                      provenance(packed, analysis, folder, one_table=True)])
