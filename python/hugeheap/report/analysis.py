"""From the stored runs of a campaign to the figures of the report.

Repetitions of one (tool, mode, instance) are summarised by their median
CPU time, an unsolved repetition counting as infinitely slow: the instance
counts as solved when most repetitions solved it. Comparisons against the
baseline mode are paired per instance and made on the instances that every
mode of the tool solved, as the THP-for-reasoners paper does."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..campaign.answers.verdicts import Disagreement, judge, solved
from ..campaign.folder import CampaignFolder, CampaignMeta
from ..campaign.store import RunRecord
from ..errors import HarnessError
from ..measure.firsttouch import what_it_means
from ..measure.steal import STEAL_WARNING_MIN_S, STEAL_WARNING_SHARE, steal_is_notable
from . import stats


@dataclass
class Cell:
    """One tool and mode on one instance, over its repetitions."""
    tool: str
    mode: str
    instance: str
    repetitions: int
    verdict: str
    # Median CPU time with unsolved repetitions as infinitely slow; None when
    # the cell is unsolved: what solved counts, PAR-2 and comparisons use.
    solved_cputime: float | None
    # Median of the CPU times measured, whatever the runs' status (a timeout's
    # too); None when no repetition has one: what was measured, for exports.
    measured_cputime: float | None
    walltime: float  # median over all repetitions, whatever their status
    user: float | None
    system: float | None
    memory_peak: int | None
    huge_share: float | None
    tlb_misses: float | None
    status: str
    # What BenchExec made of a run with the cell's verdict where a tool-info
    # module read it (status, category, score, expected verdict, property,
    # task: campaign/answers/toolinfo.py); None for other tools.
    benchexec: dict[str, Any] | None = None
    # The figures the tool measured of itself (answers/adapters.py), each the
    # median over the repetitions that gave it.
    metrics: dict[str, float] = field(default_factory=dict)
    # For runs holding pool pages: the median of the least their peaks can be
    # (memory_peak is the most); None where no repetition recorded it.
    memory_peak_lower: int | None = None


@dataclass
class ModeSummary:
    tool: str
    mode: str
    instances: int
    solved: int
    wrong: int
    par2: float
    common: int  # instances every mode of the tool solved
    common_time: float | None
    common_user: float | None
    common_system: float | None
    saved_percent: float | None
    speedup: stats.Speedup | None
    wilcoxon_p: float | None
    memory_ratio: float | None
    huge_share: float | None
    tlb_ratio: float | None
    tlb_note: str | None


@dataclass
class Analysis:
    name: str
    baseline: str
    tools: list[str]
    modes: list[str]
    cpu_limit: float
    runs: list[RunRecord]
    cells: dict[tuple[str, str, str], Cell]  # (tool, mode, instance)
    instances: list[str]
    summaries: list[ModeSummary]
    disagreements: list[Disagreement]
    machine: list[dict[str, Any]] = field(default_factory=list)
    unreliable_runs: int = 0
    missing_runs: int = 0  # to make every cell as repeated as the most repeated one
    directory: Path | None = None
    commands: dict[str, tuple[list[str], str]] = field(default_factory=dict)  # argv, adapter
    meta: CampaignMeta | None = None  # the campaign's facts as stored

    def instances_of(self, tool: str) -> list[str]:
        """The instances the tool was to run on: the campaign's own list for
        it, else all of the campaign's."""
        return (self.meta.tool_instances if self.meta else {}).get(tool, self.instances)


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _median_time(records: list[RunRecord]) -> float | None:
    """Median CPU time with unsolved repetitions as infinitely slow."""
    middle = statistics.median(r.cputime if solved(r) and r.cputime is not None else math.inf
                               for r in records)
    return None if math.isinf(middle) else middle


def _cell(tool: str, mode: str, instance: str, records: list[RunRecord]) -> Cell:
    verdicts = [r.verdict for r in records]
    verdict = "wrong" if "wrong" in verdicts else max(set(verdicts), key=verdicts.count)
    statuses = [r.status for r in records]
    return Cell(
        tool, mode, instance, len(records), verdict, _median_time(records),
        _median([r.cputime for r in records if r.cputime is not None]),
        statistics.median(r.walltime for r in records),
        _median([r.cputime_user for r in records if r.cputime_user is not None]),
        _median([r.cputime_system for r in records if r.cputime_system is not None]),
        _median_int([r.memory_peak for r in records if r.memory_peak is not None]),
        _median([r.huge_share for r in records if r.huge_share is not None]),
        _median([float(r.tlb_misses) for r in records if r.tlb_misses is not None]),
        max(set(statuses), key=statuses.count),
        next((json.loads(r.benchexec) for r in records if r.benchexec and r.verdict == verdict),
             None),
        _median_metrics(records),
        _median_int([r.memory_peak_lower for r in records if r.memory_peak_lower is not None]))


def cells_of(runs: list[RunRecord]) -> dict[tuple[str, str, str], Cell]:
    """Each (tool, mode, instance) of the runs over its repetitions among them."""
    grouped: dict[tuple[str, str, str], list[RunRecord]] = defaultdict(list)
    for record in runs:
        grouped[(record.tool, record.mode, record.instance)].append(record)
    return {key: _cell(*key, records) for key, records in grouped.items()}


def run_metrics(record: RunRecord) -> dict[str, float]:
    """The figures a run's tool measured of itself (none in older campaigns)."""
    return json.loads(record.metrics) if record.metrics else {}


def _median_metrics(records: list[RunRecord]) -> dict[str, float]:
    values: dict[str, list[float]] = defaultdict(list)
    for record in records:
        for name, value in run_metrics(record).items():
            values[name].append(value)
    return {name: statistics.median(found) for name, found in sorted(values.items())}


def _median_int(values: list[int]) -> int | None:
    median = _median([float(v) for v in values])
    return None if median is None else int(median)


def _ratio(pairs: list[tuple[float | None, float | None]]) -> float | None:
    usable = [b / a for a, b in pairs if a and b]
    return stats.geometric_mean(usable) if usable else None


def analyse(directory: Path, tools: list[str] | None = None) -> Analysis:
    """The figures of the campaign in directory; tools: only these of its
    tools, as if the campaign had had no other (one that `hugeheap bench
    --tools` ran in part). HarnessError if there is no campaign there, it has
    no finished run yet or no tool of a name in tools."""
    if not directory.is_dir():
        raise HarnessError(f"{directory}: no such campaign directory")
    folder = CampaignFolder(directory)
    store = folder.open_store(readonly=True)
    try:
        runs = store.runs()
        meta = CampaignMeta.load(store)
    finally:
        store.close()
    if not runs or meta is None:
        raise HarnessError(f"{directory}: the campaign has no finished runs yet")
    if tools is not None:
        meta, runs = only_tools(meta, runs, tools)
    return analyse_runs(meta, runs, folder.sessions(), directory)


def only_tools(meta: CampaignMeta, runs: list[RunRecord], tools: list[str]
               ) -> tuple[CampaignMeta, list[RunRecord]]:
    """The campaign's facts and runs narrowed to the named tools; HarnessError
    naming a tool it does not have."""
    if not tools:
        raise HarnessError("--tools: name at least one of the campaign's tools (its tools: "
                           f"{', '.join(meta.tools)})")
    unknown = [name for name in tools if name not in meta.tools]
    if unknown:
        raise HarnessError(f"--tools: the campaign has no tool {', '.join(unknown)} (its "
                           f"tools: {', '.join(meta.tools)})")
    chosen = [name for name in meta.tools if name in tools]
    narrowed = replace(meta, tools=chosen, tool_instances={
        name: instances for name, instances in meta.tool_instances.items() if name in chosen})
    return narrowed, [r for r in runs if r.tool in chosen]


def analyse_runs(meta: CampaignMeta, runs: list[RunRecord], machine: list[dict[str, Any]],
                 directory: Path | None) -> Analysis:
    """The figures of a campaign's runs, wherever they were read from (its
    folder, or its packed form: packed.py); machine: its sessions' machine
    records; directory: the campaign folder holding the runs' outputs, if
    there is one."""
    baseline, tools, modes, cpu_limit = meta.baseline, meta.tools, meta.modes, meta.cpu_limit_s
    planned = meta.identity.get("instances", [])
    commands = {name: (entry[0], entry[1])
                for name, entry in meta.identity.get("tools", {}).items()}
    tool_instances = meta.tool_instances
    disagreements = judge(runs)
    by_mode: dict[tuple[str, str], list[RunRecord]] = defaultdict(list)
    for record in runs:
        by_mode[(record.tool, record.mode)].append(record)
    cells = cells_of(runs)
    instances = sorted({r.instance for r in runs} | set(planned))
    summaries = []
    for tool in tools:
        its_instances = tool_instances.get(tool, instances)
        common = solved_by_every_mode(tool, its_instances, modes, cells)
        summaries += [summarise(tool, mode, baseline, its_instances, common, cells,
                                by_mode[(tool, mode)], cpu_limit)
                      for mode in modes if (tool, mode) in by_mode]
    most = max((c.repetitions for c in cells.values()), default=0)
    missing = sum(most - (cells[(t, m, i)].repetitions if (t, m, i) in cells else 0)
                  for t in tools for m in modes for i in tool_instances.get(t, instances))
    return Analysis(meta.suite_name, baseline, tools, modes, cpu_limit, runs, cells, instances,
                    summaries, disagreements, machine, sum(1 for r in runs if not r.reliable),
                    missing, directory, commands, meta)


def solved_by_every_mode(tool: str, instances: list[str], modes: list[str],
                         cells: dict[tuple[str, str, str], Cell]) -> list[str]:
    """The instances every mode solved for the tool: where its comparisons are made."""
    return [i for i in instances
            if all((tool, m, i) in cells and cells[(tool, m, i)].solved_cputime is not None
                   for m in modes)]


def summarise(tool: str, mode: str, baseline: str, instances: list[str], common: list[str],
              cells: dict[tuple[str, str, str], Cell], mode_runs: list[RunRecord],
              cpu_limit: float) -> ModeSummary:
    """One tool and mode; common: the instances every mode of the tool solved;
    mode_runs: the runs of this tool and mode."""
    mine = [cells[(tool, mode, i)] for i in instances if (tool, mode, i) in cells]
    base = [cells[(tool, baseline, i)] for i in common]
    this = [cells[(tool, mode, i)] for i in common]
    base_times = [c.solved_cputime or 0.0 for c in base]
    this_times = [c.solved_cputime or 0.0 for c in this]
    comparable = mode != baseline and common and all(t > 0 for t in base_times + this_times)
    shares = [r.huge_share for r in mode_runs if r.huge_share is not None]
    tlb_ratio = _ratio([(b.tlb_misses, t.tlb_misses) for b, t in zip(base, this, strict=True)])
    tlb_note = None
    if tlb_ratio is None:
        reasons = {r.tlb_reason for r in mode_runs if r.tlb_reason}
        tlb_note = "; ".join(sorted(reasons)) or "not measured"
    return ModeSummary(
        tool=tool, mode=mode, instances=len(instances),
        solved=sum(1 for c in mine if c.solved_cputime is not None),
        wrong=sum(1 for c in mine if c.verdict == "wrong"),
        par2=stats.par2([c.solved_cputime for c in mine] +
                        [None] * (len(instances) - len(mine)), cpu_limit) if instances else 0.0,
        common=len(common), common_time=sum(this_times) if common else None,
        common_user=sum(c.user or 0.0 for c in this) if common else None,
        common_system=sum(c.system or 0.0 for c in this) if common else None,
        saved_percent=stats.saved_percent(sum(base_times), sum(this_times))
        if comparable else None,
        speedup=stats.speedup(base_times, this_times) if comparable else None,
        wilcoxon_p=stats.wilcoxon_p(base_times, this_times) if comparable else None,
        memory_ratio=_ratio([(b.memory_peak, t.memory_peak)
                             for b, t in zip(base, this, strict=True)])
        if mode != baseline else 1.0,
        huge_share=statistics.median(shares) if shares else None,
        tlb_ratio=tlb_ratio if mode != baseline else None,
        tlb_note=tlb_note)


def steal_note(runs: list[RunRecord]) -> str | None:
    """How much of the runs' wall time the host of a virtual machine took for
    other work (steal time), where a run lost enough of it to carry a warning
    (measure.steal.steal_is_notable); None where none did (or none was
    measured)."""
    measured = [r for r in runs if r.steal_time is not None]
    hit = [r for r in measured if steal_is_notable(r.steal_time, r.walltime)]
    if not hit:
        return None
    worst = max(hit, key=lambda r: r.steal_time or 0.0)
    return (f"Steal time: in {len(hit)} of {len(measured)} runs the host of this virtual "
            f"machine took over {STEAL_WARNING_SHARE:.0%} of the wall time (and "
            f"{STEAL_WARNING_MIN_S} s or more) for other work "
            f"({sum(r.steal_time or 0.0 for r in measured):.1f} s in all runs; at most "
            f"{worst.steal_time:.2f} s of {worst.walltime:.2f} s, {worst.tool} {worst.instance} "
            f"{worst.mode}). Their wall times are longer by up to that much: compare CPU "
            "times, or modes run side by side with enough repetitions.")


def campaign_notes(analysis: Analysis) -> list[str]:
    """What a report says under its tables about how far the campaign's
    measurements go: the machine's first-touch costs, the host's steal time."""
    return [note for note in (memory_note(analysis), steal_note(analysis.runs)) if note]


def memory_note(analysis: Analysis) -> str | None:
    """What the first-touch cost of memory on the campaign's machine allows to
    conclude (from the latest session's record), if it was measured."""
    latest = analysis.machine[-1] if analysis.machine else {}
    facts = latest.get("first_touch")
    return what_it_means(facts) if isinstance(facts, dict) else None
