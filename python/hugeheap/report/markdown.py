"""The table of a packed campaign in Markdown, as the docs publish it: for
each tool, each mode against the baseline (solved, time on the instances every
mode solved, the speed-up with its interval, peak memory, the huge-page
share where it was recorded), the cells the terminal shows (tables.py), and
under them where the figures come from: date, machine, library, command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..files import write_whole
from . import tables
from .analysis import Analysis
from .packed import Packed, is_packed

# The terminal summary's columns the docs show (PAR-2 and the TLB ratio
# only where it was measured are left to `hugeheap report`).
_SHOWN = ["mode", "solved", "common s", "user/sys s", "saved", "speed-up [95% CI]",
          "Wilcoxon p", "peak mem", "huge"]


def table_row(cells: list[str]) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def table_head(headers: list[str], left: int) -> list[str]:
    """A Markdown table's first two lines: its headers, its first `left`
    columns aligned left and the others (the figures) right."""
    return [table_row(headers),
            "|" + "|".join(":---" if i < left else "---:" for i in range(len(headers))) + "|"]


def _columns(analysis: Analysis) -> list[str]:
    shown = list(_SHOWN)
    if all(s.huge_share is None for s in analysis.summaries):
        shown.remove("huge")
    if any(s.tlb_ratio is not None for s in analysis.summaries):
        shown.append("TLB")
    return shown


def summary_tables(analysis: Analysis) -> list[str]:
    """One Markdown table for every tool, each mode against the baseline (the
    tool named on its first line, with how many instances every mode
    solved), what it compares above it and each tool's standing below."""
    columns = _columns(analysis)
    picks = [tables.SUMMARY_HEADERS.index(name) for name in columns]
    lines = [f"Baseline {analysis.baseline}; CPU limit {analysis.cpu_limit:g} s; beside each "
             "tool, of its instances those every mode solved, on which the times are.", "",
             *table_head(["tool", *columns], 2)]
    standings = []
    for tool in analysis.tools:
        rows = [s for s in analysis.summaries if s.tool == tool]
        for k, summary in enumerate(rows):
            cells = tables.summary_row(summary, analysis.baseline)
            named = f"{tool} ({summary.common}/{summary.instances})" if k == 0 else ""
            lines.append(table_row([named, *(cells[i] for i in picks)]))
        line = tables.standing(rows, analysis.baseline) if rows else None
        if line:
            standings.append(f"- {line}")
    return [*lines, "", *standings, ""] if standings else [*lines, ""]


def machine_shown(record: dict[str, Any]) -> str:
    """A session's machine in one phrase."""
    memory = record.get("memory_bytes")
    thp = record.get("thp") or {}
    parts = [f"{record.get('cpu_count', '?')} CPUs ({record.get('cpu_model') or 'unknown'})",
             f"{memory / 2**30:.0f} GiB" if memory else "memory unknown",
             f"Linux {record.get('kernel', '?')}", f"glibc {record.get('glibc', '?')}",
             f"THP enabled={thp.get('enabled', '?')} defrag={thp.get('defrag', '?')}"]
    return f"{record.get('hostname', 'unknown host')}: " + ", ".join(parts)


def provenance(packed: Packed, analysis: Analysis, folder: str, one_table: bool = False) -> str:
    """Where the tables come from, in one paragraph; folder: the packed
    campaign's folder as the docs name it; one_table: the block has one."""
    date = packed.date.replace("T", " ")[:16] + " UTC"
    machines = dict.fromkeys(machine_shown(m) for m in packed.machine) or {"not recorded": None}
    libraries = "; ".join(f"{mode}: {lib.get('version') or 'version unknown'}, sha256 "
                          f"`{(lib.get('sha256') or 'unknown')[:16]}`"
                          for mode, lib in packed.libraries.items()) or "none of the modes"
    made = "this table is" if one_table else "these tables are"
    repetitions = max((c.repetitions for c in analysis.cells.values()), default=0)
    return (f"Campaign `{packed.name}` (suite `{analysis.name}`, {len(analysis.runs)} runs, "
            f"{repetitions} repetition{'' if repetitions == 1 else 's'} of each), "
            f"started {date}. Machine: {'; '.join(machines)}. libhugeheap ({libraries}). "
            f"Reproduce: `{packed.command}`. Data: `{folder}/`; {made} made from it by `make "
            f"results`: change the data, not the {'table' if one_table else 'tables'}.")


def markdown(packed: Packed, analysis: Analysis, folder: str) -> str:
    """The whole block: tables, legend, provenance."""
    return "\n".join([*summary_tables(analysis), tables.LEGEND, "",
                      provenance(packed, analysis, folder)])


def check_markdown_source(directories: list[Path]) -> None:
    """HarnessError unless report --markdown has one packed campaign to write."""
    if len(directories) != 1 or not is_packed(directories[0]):
        raise HarnessError("--markdown writes the tables of one packed campaign: give one DIR "
                           "that `hugeheap results pack` made")


def write_markdown(packed: Packed, analysis: Analysis, folder: Path, path: Path) -> None:
    """The block of the packed campaign read from folder (report --markdown),
    to path."""
    write_whole(path, markdown(packed, analysis, folder.as_posix()) + "\n")
