"""The figures of `hugeheap compare`: one command under several modes, N
repetitions. The runs of one repetition ran back to back on the same cores,
so they are compared pair by pair: the speed-up is the geometric mean over
repetitions of baseline CPU time / mode CPU time, with a bootstrap interval
that resamples repetitions, and a Wilcoxon test over the pairs (the report's
statistics, over repetitions instead of instances)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..campaign.answers.verdicts import solved
from ..campaign.store import RunRecord
from . import stats
from .analysis import analyse, memory_note


@dataclass
class ModeFigures:
    mode: str
    runs: int
    solved: int  # runs that gave an answer within the limits
    answers: list[str]  # the answers the runs gave (verdict and value), each once
    cputime: float | None  # medians over the solved runs
    user: float | None
    system: float | None
    walltime: float | None
    memory_peak: int | None
    huge_share: float | None
    speedup: stats.Speedup | None  # against the baseline, paired by repetition
    wilcoxon_p: float | None
    memory_ratio: float | None  # geometric mean over the pairs of mode / baseline peak


@dataclass
class Comparison:
    command: str
    instance: str
    baseline: str
    cpu_limit: float
    repetitions: int  # the most any mode has
    modes: list[ModeFigures]
    unreliable_runs: int
    warnings: list[str]  # the runs' warnings, each once
    memory_note: str | None  # what this machine's first-touch costs allow to conclude


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def compare(directory: Path) -> Comparison:
    """The comparison stored in directory (HarnessError if none is there)."""
    analysis = analyse(directory)
    tool = analysis.tools[0]
    command, _ = analysis.commands.get(tool, ([tool], ""))
    by_mode: dict[str, dict[int, RunRecord]] = {mode: {} for mode in analysis.modes}
    for run in analysis.runs:
        by_mode.setdefault(run.mode, {})[run.repetition] = run
    base = by_mode[analysis.baseline]
    figures = [_figures(mode, runs, base, mode == analysis.baseline)
               for mode, runs in by_mode.items()]
    warnings = sorted({w for run in analysis.runs for w in _warnings(run)})
    return Comparison(
        command=" ".join(command), instance=analysis.instances[0], baseline=analysis.baseline,
        cpu_limit=analysis.cpu_limit,
        repetitions=max((len(runs) for runs in by_mode.values()), default=0), modes=figures,
        unreliable_runs=analysis.unreliable_runs,
        warnings=warnings, memory_note=memory_note(analysis))


def _figures(mode: str, runs: dict[int, RunRecord], base: dict[int, RunRecord],
             is_baseline: bool) -> ModeFigures:
    done = [run for run in runs.values() if solved(run)]
    pairs = [(base[r], run) for r, run in sorted(runs.items())
             if r in base and solved(run) and solved(base[r])
             and (base[r].cputime or 0) > 0 and (run.cputime or 0) > 0]
    base_times = [b.cputime or 0.0 for b, _ in pairs]
    mode_times = [m.cputime or 0.0 for _, m in pairs]
    peaks = [m.memory_peak / b.memory_peak for b, m in pairs
             if m.memory_peak and b.memory_peak]
    return ModeFigures(
        mode=mode, runs=len(runs), solved=len(done),
        answers=sorted({run.verdict + (f" {run.answer_value}" if run.answer_value else "")
                        for run in runs.values()}),
        cputime=_median([r.cputime for r in done if r.cputime is not None]),
        user=_median([r.cputime_user for r in done if r.cputime_user is not None]),
        system=_median([r.cputime_system for r in done if r.cputime_system is not None]),
        walltime=_median([r.walltime for r in done]),
        memory_peak=None if not done or any(r.memory_peak is None for r in done)
        else int(statistics.median(r.memory_peak or 0 for r in done)),
        huge_share=_median([r.huge_share for r in done if r.huge_share is not None]),
        speedup=stats.speedup(base_times, mode_times) if pairs and not is_baseline else None,
        wilcoxon_p=stats.wilcoxon_p(base_times, mode_times) if not is_baseline else None,
        memory_ratio=stats.geometric_mean(peaks) if peaks and not is_baseline else None)


def _warnings(run: RunRecord) -> list[str]:
    found = json.loads(run.warnings or "[]")
    return [str(w) for w in found] if isinstance(found, list) else []
