"""The summary table of a campaign as both the terminal and the HTML page
show it: its headings, the cells of one mode's line, and the legend."""

from __future__ import annotations

from .analysis import ModeSummary


def shown(value: float | None, pattern: str = "{:.2f}", missing: str = "-") -> str:
    """A figure as the tables show it: `missing` where there is none."""
    return missing if value is None else pattern.format(value)


def summary_row(s: ModeSummary, baseline: str) -> list[str]:
    """The cells of one mode's line, as the terminal and the HTML page show them."""
    is_base = s.mode == baseline
    speedup = "baseline" if is_base else (
        "-" if s.speedup is None else
        f"{s.speedup.geomean:.3f} [{s.speedup.low:.3f}, {s.speedup.high:.3f}]")
    return [
        s.mode, f"{s.solved}/{s.instances}" + (f" ({s.wrong} wrong)" if s.wrong else ""),
        shown(s.par2), shown(s.common_time),
        f"{shown(s.common_user, '{:.1f}')} / {shown(s.common_system, '{:.1f}')}",
        "-" if is_base else shown(s.saved_percent, "{:+.1f}%"), speedup,
        "-" if is_base else shown(s.wilcoxon_p, "{:.3g}"),
        shown(s.memory_ratio, "{:.3f}"), shown(s.huge_share, "{:.0%}"),
        shown(s.tlb_ratio, "{:.3f}", "n/a"),
    ]


SUMMARY_HEADERS = ["mode", "solved", "PAR-2 s", "common s", "user/sys s", "saved",
                   "speed-up [95% CI]", "Wilcoxon p", "peak mem", "huge", "TLB"]


LEGEND = ("common s, user/sys s: CPU seconds on the instances every mode solved (median of the "
          "repetitions); saved: share of the baseline's time saved there; speed-up: geometric "
          "mean over those instances of baseline time / mode time, with a 95% bootstrap interval "
          "(instances resampled); Wilcoxon p: paired signed-rank test; peak mem: geometric mean "
          "of mode / baseline peak memory; huge: median share of the heap in huge pages; TLB: "
          "geometric mean of mode / baseline dTLB misses.")
