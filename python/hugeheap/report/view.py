"""The report wing in the terminal: `hugeheap report`'s summary tables, and
the files asked for."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from .analysis import Analysis
from .export import write_benchexec, write_csv
from .html_page import write_html
from .tables import LEGEND, SUMMARY_HEADERS, summary_row

out = Console(highlight=False)
if not out.is_terminal:  # a file or a pipe: room for the whole table
    out = Console(highlight=False, width=200)
err = Console(stderr=True, highlight=False, soft_wrap=True)


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


def show(analysis: Analysis, html_file: Path | None, csv_file: Path | None,
         benchexec_dir: Path | None) -> None:
    """The summary in the terminal, then the files asked for."""
    print_summary(analysis)
    if csv_file:
        write_csv(analysis, csv_file)
        out.print(f"runs (CSV): {csv_file}")
    if benchexec_dir:
        files = write_benchexec(analysis, benchexec_dir)
        out.print(f"BenchExec results: {len(files)} files in {benchexec_dir}")
    if html_file:
        write_html(analysis, html_file)
        out.print(f"HTML report: {html_file.resolve()}")
