"""The tables of a campaign as both the terminal and the HTML page show them:
the summary (headings, one mode's line, legend), how the runs ended, the
figures per instance with the tools' own, ratios between tools, and the
paper's Tables 2 and 3."""

from __future__ import annotations

from .analysis import Cell, ModeSummary
from .categories import COLUMNS, CategoryCounts
from .failures import OutcomeCounts
from .figures import Ratio
from .paper import PairRow
from .stats import Speedup


def shown(value: float | None, pattern: str = "{:.2f}", missing: str = "-") -> str:
    """A figure as the tables show it: `missing` where there is none."""
    return missing if value is None else pattern.format(value)


def summary_title(first: ModeSummary, cpu_limit: float, baseline: str) -> str:
    """The title of a tool's summary (first: the line of any of its modes)."""
    return (f"{first.tool}: {first.instances} instance{'' if first.instances == 1 else 's'}, "
            f"{first.common} solved by every mode; CPU limit {cpu_limit:g} s; baseline "
            f"{baseline}")


def speedup_shown(speedup: Speedup | None) -> str:
    """A speed-up with its 95% interval, as the tables show it."""
    return "-" if speedup is None else \
        f"{speedup.geomean:.3f} [{speedup.low:.3f}, {speedup.high:.3f}]"


def summary_row(s: ModeSummary, baseline: str) -> list[str]:
    """The cells of one mode's line, as the terminal and the HTML page show them."""
    is_base = s.mode == baseline
    speedup = "baseline" if is_base else speedup_shown(s.speedup)
    return [
        s.mode, f"{s.solved}/{s.instances}" + (f" ({s.wrong} wrong)" if s.wrong else ""),
        shown(s.par2), shown(s.common_time),
        f"{shown(s.common_user, '{:.1f}')} / {shown(s.common_system, '{:.1f}')}",
        "-" if is_base else shown(s.saved_percent, "{:+.1f}%"), speedup,
        "-" if is_base else shown(s.wilcoxon_p, "{:.3g}"),
        shown(s.memory_ratio, "{:.3f}"), shown(s.huge_share, "{:.0%}"),
        shown(s.tlb_ratio, "{:.3f}", "n/a"),
    ]


def standing(rows: list[ModeSummary], baseline: str, ours: str = "hugeheap") -> str | None:
    """One line under a tool's summary: which mode was the fastest (by the
    speed-up's geometric mean; the baseline counts as 1), and, when that is
    not hugeheap, how far behind hugeheap is, so that a reader sees it
    without comparing columns. None when there is nothing to rank."""
    ranked = {s.mode: s.speedup.geomean for s in rows if s.speedup is not None}
    if any(s.mode == baseline for s in rows):
        ranked[baseline] = 1.0
    if len(ranked) < 2:
        return None
    fastest = max(ranked, key=lambda mode: ranked[mode])
    tool = rows[0].tool
    if ours not in ranked:
        return f"{tool}: the fastest mode here is {fastest} ({ranked[fastest]:.3f} of the " \
            "baseline's speed)"
    if fastest == ours:
        runner_up = max((m for m in ranked if m != ours), key=lambda mode: ranked[mode])
        return (f"{tool}: {ours} is the fastest mode here ({ranked[ours]:.3f}; next "
                f"{runner_up}, {ranked[runner_up]:.3f})")
    behind = 1 - ranked[ours] / ranked[fastest]
    return (f"{tool}: {ours} is NOT the fastest mode here: {fastest} is ({ranked[fastest]:.3f} "
            f"against {ours}'s {ranked[ours]:.3f}, {behind:.1%} faster than {ours})")


SUMMARY_HEADERS = ["mode", "solved", "PAR-2 s", "common s", "user/sys s", "saved",
                   "speed-up [95% CI]", "Wilcoxon p", "peak mem", "huge", "TLB"]


LEGEND = ("common s, user/sys s: CPU seconds on the instances every mode solved (median of the "
          "repetitions); saved: share of the baseline's time saved there; speed-up: geometric "
          "mean over those instances of baseline time / mode time, with a 95% bootstrap interval "
          "(instances resampled); Wilcoxon p: paired signed-rank test; peak mem: geometric mean "
          "of mode / baseline peak memory; huge: median share of the heap in huge pages; TLB: "
          "geometric mean of mode / baseline dTLB misses.")


def figures_headers(metrics: list[str]) -> list[str]:
    return ["instance", "mode", "answer", "CPU s", "wall s", "user / sys s", "peak MiB", "huge",
            *metrics]


def answer_shown(cell: Cell) -> str:
    """A cell's answer, with how its runs ended where that was not ok."""
    return cell.verdict if cell.status == "ok" else f"{cell.verdict} ({cell.status})"


def figures_row(cell: Cell, metrics: list[str]) -> list[str]:
    """One tool and mode on one instance: the harness's medians, then the
    tool's own (metrics: the names of the columns)."""
    return [cell.instance, cell.mode, answer_shown(cell), shown(cell.solved_cputime, "{:.3f}"),
            shown(cell.walltime, "{:.3f}"),
            f"{shown(cell.user, '{:.2f}')} / {shown(cell.system, '{:.2f}')}",
            shown(None if cell.memory_peak is None else cell.memory_peak / 2**20, "{:.1f}"),
            shown(cell.huge_share, "{:.0%}"),
            *(metric_shown(cell.metrics.get(name)) for name in metrics)]


def metric_shown(value: float | None) -> str:
    """A tool's own figure: whole with separators from a thousand on (bytes,
    states per second), else four significant digits (seconds, ratios)."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


FIGURES_LEGEND = ("Per instance, medians of the repetitions: CPU s (unsolved: -), wall s, user "
                  "/ sys s and peak MiB of the whole process as the harness measured them; "
                  "huge: share of the heap in huge pages; the columns after it are what the "
                  "tool measured of itself (e.g. query_s, explore_s: the query's or the "
                  "exploration's own time, loading left out).")

RATIO_HEADERS = ["instance", "mode", "of medians", "per repetition", "repetitions"]
RATIO_LEGEND = ("of medians: the first tool's median over the second's; per repetition: the "
                "median of the ratios of the runs of each repetition (runs that ended ok).")


def ratio_row(ratio: Ratio) -> list[str]:
    return [ratio.instance, ratio.mode, shown(ratio.of_medians, "{:.3f}"),
            shown(ratio.median_per_repetition, "{:.3f}") + (
                " (" + ", ".join(f"{r:.2f}" for r in ratio.per_repetition) + ")"
                if len(ratio.per_repetition) > 1 else ""),
            str(len(ratio.per_repetition))]


OUTCOME_HEADERS = ["mode", "runs", "solved", "unsolved", "timeout", "memout", "error", "wrong"]


def outcome_row(c: OutcomeCounts) -> list[str]:
    """How one tool's runs under one mode ended."""
    error = str(c.counts["error"]) + (f" ({c.error_cause})" if c.counts["error"] and
                                      c.error_cause else "")
    return [c.mode, str(c.runs), str(c.counts["solved"]), str(c.counts["unsolved"]),
            str(c.counts["timeout"]), str(c.counts["memout"]), error, str(c.counts["wrong"])]


CATEGORY_HEADERS = ["mode", *COLUMNS, "score"]
CATEGORY_LEGEND = ("BenchExec's categories of each task's result against its expected verdict "
                   "(correct and wrong split by the answer, true or false; missing: the task "
                   "has no expected verdict for the property); score: SV-COMP's, of the most "
                   "the tasks allow, where the property is one of SV-COMP's.")


def category_row(c: CategoryCounts) -> list[str]:
    """BenchExec's categories of one tool's results under one mode."""
    score = "-" if c.score is None else f"{c.score} of {c.max_score}"
    return [c.mode, *(str(c.counts[column]) for column in COLUMNS), score]


def table2_headers(pair: tuple[str, str]) -> list[str]:
    first, second = pair
    return ["family", "tool", f"# {first}", f"# {second}", "both", f"t {first} s",
            f"t {second} s", "saved", "user saved", f"TLB {first}", f"TLB {second}", "r_tlb"]


def table2_row(row: PairRow) -> list[str]:
    """The paper's Table 2 for one tool: solved, time on the instances both
    modes solved, saved, TLB misses and their ratio (in %)."""
    return [row.family, row.tool, str(row.solved[0]), str(row.solved[1]), str(row.common),
            shown(row.time[0] if row.time else None), shown(row.time[1] if row.time else None),
            shown(row.saved_percent, "{:+.1f}%"), shown(row.user_saved_percent, "{:+.1f}%"),
            shown(row.tlb[0] if row.tlb else None, "{:.3g}", "n/a"),
            shown(row.tlb[1] if row.tlb else None, "{:.3g}", "n/a"),
            shown(row.tlb_percent, "{:.2f}%", "n/a")]


def table3_headers(pair: tuple[str, str]) -> list[str]:
    first, second = pair
    return ["family", "tool", "both", f"t {first} s", f"t {second} s", "saved"]


def table3_row(row: PairRow) -> list[str]:
    """The paper's Table 3 for one family and tool."""
    return [row.family, row.tool, str(row.common), shown(row.time[0] if row.time else None),
            shown(row.time[1] if row.time else None), shown(row.saved_percent, "{:+.1f}%")]


def paper_legend(pair: tuple[str, str]) -> str:
    first, second = pair
    return (f"Tables 2 and 3 of the THP-for-reasoners paper, {first} (without) against {second} "
            f"(with): # solved under each mode; both: instances both solved; t: CPU seconds "
            "there (median of the repetitions; the paper: hours of wall time); saved: "
            f"(t {first} - t {second}) / t {first}; user saved: the same for user time alone "
            "(it carries the TLB effect); TLB: dTLB and iTLB misses there, r_tlb their ratio "
            f"{second} / {first}.")
