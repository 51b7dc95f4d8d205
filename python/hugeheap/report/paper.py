"""The THP-for-reasoners paper's Tables 2 and 3 from campaigns, for one pair
of allocator modes (`--pair system,hugeheap`: without and with huge pages).

Table 2, per tool: instances solved under each mode of the pair (each on its
own), CPU time on the instances both solved, the share of it saved, the same
for user time alone (on a machine whose host backs memory lazily, user time
carries the TLB effect and system time the host's cost), and TLB misses on
those instances with their ratio, where the CPU counts them.

Table 3, per family (the campaign's suite) and tool: CPU time on the instances
both modes solved, and the share saved.

The paper reports hours of wall time over hundreds of competition instances;
these tables report CPU seconds (median of the repetitions) over the
campaign's instances."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HarnessError
from . import stats
from .analysis import Analysis


@dataclass
class PairRow:
    family: str
    tool: str
    instances: int
    solved: tuple[int, int]  # under the first and the second mode
    common: int  # solved by both
    time: tuple[float, float] | None  # CPU seconds on the common instances
    user: tuple[float, float] | None
    saved_percent: float | None
    user_saved_percent: float | None
    tlb: tuple[float, float] | None  # TLB misses on the common instances
    tlb_percent: float | None  # second / first * 100
    tlb_note: str | None  # why there are no TLB figures


def family_of(analysis: Analysis) -> str:
    """A campaign's family: its suite's name, without the -quick of the quick size."""
    return analysis.name.removesuffix("-quick")


def choose_pair(analyses: list[Analysis], pair: str | None
                ) -> tuple[tuple[str, str], list[Analysis]]:
    """The pair of modes asked for (`A,B`), or the baseline and hugeheap (else
    the baseline and the next mode), and the campaigns that have both: a
    campaign run in other modes (MCC's two, say) stays out of the tables.
    HarnessError naming the modes there are if no campaign has both."""
    modes = [m for a in analyses for m in a.modes]
    if pair is None:
        first = analyses[0].baseline
        second = "hugeheap" if "hugeheap" in modes and first != "hugeheap" else next(
            (m for m in modes if m != first), first)
        chosen = (first, second)
    else:
        words = [w.strip() for w in pair.split(",")]
        if len(words) != 2 or not all(words) or words[0] == words[1]:
            raise HarnessError(f"--pair {pair!r}: write two different modes, e.g. "
                               "--pair system,hugeheap")
        chosen = (words[0], words[1])
    having = [a for a in analyses if has_pair(a, chosen)]
    if not having:
        analysis = analyses[0]
        mode = next(m for m in chosen if m not in analysis.modes)
        raise HarnessError(f"--pair: the campaign {analysis.name} has no mode '{mode}' "
                           f"(its modes: {', '.join(analysis.modes)})")
    return chosen, having


def has_pair(analysis: Analysis, pair: tuple[str, str]) -> bool:
    """Whether the campaign ran both modes of the pair."""
    return all(mode in analysis.modes for mode in pair)


def left_out_note(analysis: Analysis, pair: tuple[str, str]) -> str:
    """Why a campaign is not in the paper's tables, and how to see it there."""
    missing = ", ".join(f"'{m}'" for m in pair if m not in analysis.modes)
    return (f"{analysis.name}: not in the paper's tables, it has no mode {missing} (its "
            f"modes: {', '.join(analysis.modes)}; --pair {','.join(analysis.modes[:2])} "
            "shows it)")


def pair_rows(analysis: Analysis, pair: tuple[str, str]) -> list[PairRow]:
    """One row per tool of the campaign."""
    first, second = pair
    rows = []
    for tool in analysis.tools:
        instances = [i for i in analysis.instances
                     if (tool, first, i) in analysis.cells or (tool, second, i) in analysis.cells]
        if not instances:
            continue
        cells = [(analysis.cells.get((tool, first, i)), analysis.cells.get((tool, second, i)))
                 for i in instances]
        solved = (sum(1 for a, _ in cells if a and a.solved_cputime is not None),
                  sum(1 for _, b in cells if b and b.solved_cputime is not None))
        both = [(a, b) for a, b in cells
                if a and b and a.solved_cputime is not None and b.solved_cputime is not None]
        time = user = tlb = None
        saved = user_saved = tlb_percent = None
        if both:
            time = (sum(a.solved_cputime or 0.0 for a, _ in both),
                    sum(b.solved_cputime or 0.0 for _, b in both))
            saved = stats.saved_percent(*time) if time[0] > 0 else None
            if all(a.user is not None and b.user is not None for a, b in both):
                user = (sum(a.user or 0.0 for a, _ in both), sum(b.user or 0.0 for _, b in both))
                user_saved = stats.saved_percent(*user) if user[0] > 0 else None
            if all(a.tlb_misses is not None and b.tlb_misses is not None for a, b in both):
                tlb = (sum(a.tlb_misses or 0.0 for a, _ in both),
                       sum(b.tlb_misses or 0.0 for _, b in both))
                tlb_percent = tlb[1] / tlb[0] * 100 if tlb[0] else None
        note = None
        if tlb is None:
            reasons = {r.tlb_reason for r in analysis.runs
                       if r.tool == tool and r.mode in pair and r.tlb_reason}
            note = "; ".join(sorted(reasons)) or "not measured"
        rows.append(PairRow(family_of(analysis), tool, len(instances), solved, len(both), time,
                            user, saved, user_saved, tlb, tlb_percent, note))
    return rows
