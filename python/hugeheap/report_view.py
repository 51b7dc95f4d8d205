"""`hugeheap report`: the summary tables in the terminal, and the files asked for."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from .analysis import Analysis, ModeSummary, analyse
from .errors import HarnessError
from .export import write_benchexec, write_csv

out = Console(highlight=False)
if not out.is_terminal:  # a file or a pipe: room for the whole table
    out = Console(highlight=False, width=200)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fmt(value: float | None, pattern: str = "{:.2f}", missing: str = "-") -> str:
    return missing if value is None else pattern.format(value)


def summary_row(s: ModeSummary, baseline: str) -> list[str]:
    """The cells of one mode's line, as the terminal and the HTML page show them."""
    is_base = s.mode == baseline
    speedup = "baseline" if is_base else (
        "-" if s.speedup is None else
        f"{s.speedup.geomean:.3f} [{s.speedup.low:.3f}, {s.speedup.high:.3f}]")
    return [
        s.mode, f"{s.solved}/{s.instances}" + (f" ({s.wrong} wrong)" if s.wrong else ""),
        fmt(s.par2), fmt(s.common_time),
        f"{fmt(s.common_user, '{:.1f}')} / {fmt(s.common_system, '{:.1f}')}",
        "-" if is_base else fmt(s.saved_percent, "{:+.1f}%"), speedup,
        "-" if is_base else fmt(s.wilcoxon_p, "{:.3g}"),
        fmt(s.memory_ratio, "{:.3f}"), fmt(s.huge_share, "{:.0%}"),
        fmt(s.tlb_ratio, "{:.3f}", "n/a"),
    ]


SUMMARY_HEADERS = ["mode", "solved", "PAR-2 s", "common s", "user/sys s", "saved",
                   "speed-up [95% CI]", "Wilcoxon p", "peak mem", "huge", "TLB"]


LEGEND = ("common s, user/sys s: CPU seconds on the instances every mode solved (median of the "
          "repetitions); saved: share of the baseline's time saved there; speed-up: geometric "
          "mean over those instances of baseline time / mode time, with a 95% bootstrap interval "
          "(instances resampled); Wilcoxon p: paired signed-rank test; peak mem: geometric mean "
          "of mode / baseline peak memory; huge: median share of the heap in huge pages; TLB: "
          "geometric mean of mode / baseline dTLB misses.")


def print_summary(analysis: Analysis) -> None:
    for tool in analysis.tools:
        rows = [s for s in analysis.summaries if s.tool == tool]
        if not rows:
            continue
        common = rows[0].common
        table = Table(title=f"{tool}: {rows[0].instances} instances, {common} solved by every "
                      f"mode; CPU limit {analysis.cpu_limit:g} s; baseline {analysis.baseline}",
                      title_justify="left")
        for header in SUMMARY_HEADERS:
            table.add_column(header, justify="left" if header == "mode" else "right")
        for summary in rows:
            table.add_row(*summary_row(summary, analysis.baseline))
        out.print(table)
    out.print(LEGEND)
    notes = {s.tlb_note for s in analysis.summaries if s.tlb_note}
    if notes:
        out.print(f"TLB misses not measured: {'; '.join(sorted(notes))}")
    if analysis.missing_runs:
        err.print(f"[yellow]the campaign is not complete: {analysis.missing_runs} runs are "
                  "missing (an instance without runs counts as unsolved); run `hugeheap bench` "
                  "on it again to finish it[/yellow]")
    if analysis.unreliable_runs:
        err.print(f"[yellow]{analysis.unreliable_runs} runs were measured without cgroups "
                  "(rusage only): their CPU time and memory may miss descendants[/yellow]")
    for disagreement in analysis.disagreements:
        err.print(f"[bold red]WRONG ANSWERS: {disagreement.describe()}[/bold red]")


def report_command(directory: str, html_file: str | None, csv_file: str | None,
                   benchexec_dir: str | None) -> None:
    path = Path(directory)
    if not path.is_dir():
        raise HarnessError(f"{directory}: no such campaign directory")
    analysis = analyse(path)
    if not analysis.runs:
        raise HarnessError(f"{directory}: the campaign has no finished runs yet")
    print_summary(analysis)
    if csv_file:
        write_csv(analysis, Path(csv_file))
        out.print(f"runs (CSV): {csv_file}")
    if benchexec_dir:
        files = write_benchexec(analysis, Path(benchexec_dir))
        out.print(f"BenchExec results: {len(files)} files in {benchexec_dir}")
    if html_file:
        from .html_report import write_html
        write_html(analysis, Path(html_file))
        out.print(f"HTML report: {Path(html_file).resolve()}")
