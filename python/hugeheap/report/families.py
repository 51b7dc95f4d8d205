"""The table a reader sees first: the library on every family, one row per
family and tool, each family's campaign packed in published/NAME. A block

    <!-- results:families real-sat=SAT real-smt=SMT real-asp -->
    <!-- /results:families -->

names the campaigns in the order of the rows, each with the family it
stands for after `=` (without one, the campaign's suite name); a campaign
whose tools stand for several families names each tool's, as in
`real-paper-size=cadical:SAT,clasp:ASP`. Each row:
hugeheap's speed over glibc's (the mode `system`) with its 95% interval,
its speed over the fastest other mode of the campaign (named), where the
campaign ran it the speed of the library drawing on a reserved pool of huge
pages (the mode `hugeheap-pool`), its peak memory over glibc's and its
share of the heap in huge pages; under the
table, each campaign's date, library and command, and the machine.

The figures are the per-campaign table's (analysis.summarise), on the same
instances: those every mode of the tool solved."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import HarnessError
from . import tables
from .analysis import Analysis, ModeSummary, solved_by_every_mode, summarise
from .markdown import machine_shown, table_head, table_row
from .packed import FAMILIES, PUBLISHED, Packed, check_name
from .paper import family_of
from .stats import Speedup

GLIBC, OURS, POOL = "system", "hugeheap", "hugeheap-pool"
HEADERS = ["family", "tool", "speed over glibc [95% CI]", "over the best peer [95% CI]",
           "from a pool, over glibc [95% CI]", "peak over glibc", "huge"]
POOL_COLUMN, HUGE_COLUMN = 4, 6
LEGEND = (f"Per tool, on the instances every mode solved (beside the tool: how many, of its "
          f"instances): speed over glibc: geometric mean of glibc's CPU time / hugeheap's "
          f"(each the median of the repetitions), with a 95% bootstrap interval (instances "
          f"resampled); over the best peer: the same against the campaign's other mode "
          f"(any but `{GLIBC}` and the library's own, `{OURS}*`) fastest over glibc, named "
          f"after it; from a pool: the same for the mode `{POOL}`, the library drawing on a "
          f"reserved pool of huge pages (`hugeheap pool reserve`), where the campaign ran it; "
          f"peak: "
          f"geometric mean of hugeheap's peak memory / glibc's; huge: median over hugeheap's "
          f"runs of the share of the heap in huge pages (runs.csv's huge_share).")

Campaigns = Callable[[str], tuple[Packed, Analysis]]  # a packed campaign by its name


@dataclass
class FamilyRow:
    family: str
    tool: str
    instances: int
    common: int  # instances every mode of the tool solved
    ours: ModeSummary  # hugeheap against glibc
    peer: str | None  # the fastest other mode over glibc
    over_peer: Speedup | None  # hugeheap against it
    pool: Speedup | None  # hugeheap-pool against glibc, where the campaign ran it


# A campaign's family, as its word gives it: one for all its tools, one per
# tool (TOOL:FAMILY,...; TOOL:- leaves the tool's row out, where another
# campaign measured it again), or none (its suite's name).
Label = str | dict[str, str] | None
LEFT_OUT = "-"


def label_of(word: str, label: str) -> Label:
    """The family or families after a word's '=' (label: the text there)."""
    if ":" not in label:
        return label or None
    per_tool: dict[str, str] = {}
    for pair in label.split(","):
        tool, colon, family = pair.partition(":")
        if not (tool and colon and family):
            raise HarnessError(f"<!-- results:{FAMILIES} -->: '{word}': '{pair}' is not "
                               "TOOL:FAMILY; name one family for the campaign, or one for "
                               "each tool as in cadical:SAT,clasp:ASP")
        if tool in per_tool:
            raise HarnessError(f"<!-- results:{FAMILIES} -->: '{word}' gives the tool "
                               f"'{tool}' two families")
        per_tool[tool] = family
    return per_tool


def chosen(words: list[str]) -> list[tuple[str, Label]]:
    """The campaigns a block's words name, each with its family's label."""
    if not words:
        raise HarnessError(f"<!-- results:{FAMILIES} --> names no campaign: list the packed "
                           f"campaigns, one per family, e.g. <!-- results:{FAMILIES} "
                           "real-sat=SAT real-smt=SMT -->")
    found: list[tuple[str, Label]] = []
    for word in words:
        name, equals, label = word.partition("=")
        check_name(name)
        if equals and not label:
            raise HarnessError(f"<!-- results:{FAMILIES} -->: '{word}' gives no family after "
                               f"'=': write {name}=FAMILY, or {name} alone for its suite's name")
        if any(name == seen for seen, _ in found):
            raise HarnessError(f"<!-- results:{FAMILIES} -->: the campaign '{name}' is named "
                               "twice")
        found.append((name, label_of(word, label)))
    return found


def families_of(name: str, label: Label, analysis: Analysis) -> dict[str, str]:
    """Each tool of the campaign name with the family its row shows."""
    if not isinstance(label, dict):
        return dict.fromkeys(analysis.tools, label or family_of(analysis))
    unknown = [tool for tool in label if tool not in analysis.tools]
    left = [tool for tool in analysis.tools if tool not in label]
    if unknown or left:
        problem = (f"names the tool '{unknown[0]}', which it has not" if unknown else
                   f"gives no family for its tool '{left[0]}'")
        raise HarnessError(f"<!-- results:{FAMILIES} -->: the word of the campaign '{name}' "
                           f"{problem} (its tools: {', '.join(analysis.tools)})")
    kept = {tool: label[tool] for tool in analysis.tools if label[tool] != LEFT_OUT}
    if not kept:
        raise HarnessError(f"<!-- results:{FAMILIES} -->: the word of the campaign '{name}' "
                           f"leaves every tool out ({LEFT_OUT}); leave the campaign out instead")
    return kept


def named(families: dict[str, str]) -> str:
    """The families of a campaign's tools, each once, in the tools' order."""
    return ", ".join(dict.fromkeys(families.values()))


def family_rows(name: str, families: dict[str, str], analysis: Analysis
                ) -> list[FamilyRow]:
    """One row per tool of the packed campaign name, families: each tool's
    family; HarnessError if it lacks glibc's mode or hugeheap's."""
    family = named(families)
    missing = [mode for mode in (GLIBC, OURS) if mode not in analysis.modes]
    if missing:
        raise HarnessError(f"the campaign '{name}' (family {family}) has no mode "
                           f"{' and no mode '.join(repr(m) for m in missing)} (its modes: "
                           f"{', '.join(analysis.modes)}); the families' table compares "
                           f"hugeheap ('{OURS}') with glibc ('{GLIBC}')")
    return [tool_row(analysis, family, tool) for tool, family in families.items()]


def tool_row(analysis: Analysis, family: str, tool: str) -> FamilyRow:
    """hugeheap against glibc and against its best peer for one tool."""
    instances = analysis.instances_of(tool)
    common = solved_by_every_mode(tool, instances, analysis.modes, analysis.cells)

    def against(mode: str, baseline: str) -> ModeSummary:
        runs = [r for r in analysis.runs if r.tool == tool and r.mode == mode]
        return summarise(tool, mode, baseline, instances, common, analysis.cells, runs,
                         analysis.cpu_limit)
    # Peers are the other allocators and glibc with THP; the library's own
    # other modes (hugeheap-nothp, hugeheap-pool) are its ablations and
    # variants, not what a user would pick instead of it.
    peers = {mode: against(mode, GLIBC).speedup for mode in analysis.modes
             if mode != GLIBC and not mode.startswith(OURS)}
    ranked = {mode: speedup.geomean for mode, speedup in peers.items() if speedup}
    peer = max(ranked, key=lambda mode: ranked[mode]) if ranked else None
    return FamilyRow(family, tool, len(instances), len(common), against(OURS, GLIBC), peer,
                     against(OURS, peer).speedup if peer else None,
                     against(POOL, GLIBC).speedup if POOL in analysis.modes else None)


def row_cells(row: FamilyRow) -> list[str]:
    peer = "-" if row.peer is None else f"{tables.speedup_shown(row.over_peer)} ({row.peer})"
    return [row.family, f"{row.tool} ({row.common}/{row.instances})",
            tables.speedup_shown(row.ours.speedup), peer, tables.speedup_shown(row.pool),
            tables.shown(row.ours.memory_ratio, "{:.3f}"),
            tables.shown(row.ours.huge_share, "{:.0%}")]


def sources(loaded: list[tuple[str, str, Packed]]) -> str:
    """Under the table: each family's campaign (data, date, library, command),
    then the machine; loaded: (name, family, packed) in the table's order."""
    lines, machines = [], dict[str, list[str]]()
    for name, family, packed in loaded:
        library = packed.libraries.get(OURS, {}).get("version") or "version unknown"
        lines.append(f"- {family}: `{PUBLISHED}/{name}/`, started "
                     f"{packed.date.replace('T', ' ')[:16]} UTC, libhugeheap {library}; "
                     f"reproduce: `{packed.command}`")
        for machine in dict.fromkeys(machine_shown(m) for m in packed.machine) or ["unknown"]:
            machines.setdefault(machine, []).append(family)
    where = ("Machine: " + next(iter(machines)) if len(machines) == 1 else "Machines: " +
             "; ".join(f"{m} ({', '.join(families)})" for m, families in machines.items()))
    return "\n".join([*lines, "", f"{where}. This table is made from the data by `make "
                      "results`: change the data, not the table."])


def family_block(words: list[str], campaign: Campaigns) -> str:
    """The block `<!-- results:families WORDS -->`: table, legend, sources."""
    rows, loaded = [], []
    for name, label in chosen(words):
        packed, analysis = campaign(name)
        families = families_of(name, label, analysis)
        rows += family_rows(name, families, analysis)
        loaded.append((name, named(families), packed))
    # A column no campaign has figures for is left out.
    dropped = [column for column, empty in ((HUGE_COLUMN, all(r.ours.huge_share is None
                                                                for r in rows)),
                                            (POOL_COLUMN, all(r.pool is None for r in rows)))
               if empty]
    headers = [h for i, h in enumerate(HEADERS) if i not in dropped]
    cells = [[c for i, c in enumerate(row_cells(row)) if i not in dropped] for row in rows]
    table = [*table_head(headers, 2), *(table_row(line) for line in cells)]
    return "\n".join([*table, "", LEGEND, "", sources(loaded)])
