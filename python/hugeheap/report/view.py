"""The report wing in the terminal: `hugeheap report`'s summary tables, how
the runs ended and why a tool solved nothing, what the machine's memory
costs allow to conclude, the figures per instance of tools that measure
themselves, ratios between tools, the paper's Tables 2 and 3, and the files
asked for."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..errors import HarnessError
from ..files import check_writable
from . import tables
from .analysis import Analysis, campaign_notes
from .categories import count_categories
from .compare import Comparison
from .export import check_benchexec_folder, write_benchexec, write_csv
from .failures import count_outcomes, explain
from .figures import RatioAsked, each_tool, ratios, tools_figures
from .html_page import write_html
from .paper import PairRow, choose_pair, has_pair, left_out_note, pair_rows

out = Console(highlight=False)
if not out.is_terminal:  # a file or a pipe: room for the whole table
    out = Console(highlight=False, width=200)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _table(title: str, headers: list[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for header in headers:
        text = header in ("mode", "family", "tool", "answer", "instance")
        table.add_column(header, justify="left" if text else "right")
    for row in rows:
        table.add_row(*row)
    return table


def _print_per_tool(analysis: Analysis, what: str, headers: list[str],
                    rows: list[tuple[str, list[str]]]) -> None:
    """A table of each tool that has rows; rows: (tool, cells)."""
    for tool in analysis.tools:
        mine = [cells for owner, cells in rows if owner == tool]
        if mine:
            out.print(_table(f"{tool}: {what}", headers, mine))


def print_outcomes(analysis: Analysis) -> None:
    counts = count_outcomes(analysis)
    _print_per_tool(analysis, "how the runs ended", tables.OUTCOME_HEADERS,
                    [(c.tool, tables.outcome_row(c)) for c in counts])
    for line in explain(analysis, counts):
        err.print(f"[bold yellow]{line}[/bold yellow]")


def print_categories(analysis: Analysis) -> None:
    """BenchExec's categories and score, where the tasks have expected verdicts."""
    counts = count_categories(analysis)
    _print_per_tool(analysis, "BenchExec's categories", tables.CATEGORY_HEADERS,
                    [(c.tool, tables.category_row(c)) for c in counts])
    if counts:
        out.print(tables.CATEGORY_LEGEND)


def print_summary(analysis: Analysis) -> None:
    for tool in analysis.tools:
        rows = [s for s in analysis.summaries if s.tool == tool]
        if not rows:
            continue
        out.print(_table(tables.summary_title(rows[0], analysis.cpu_limit, analysis.baseline),
                         tables.SUMMARY_HEADERS,
                         [tables.summary_row(s, analysis.baseline) for s in rows]))
        line = tables.standing(rows, analysis.baseline)
        if line:
            out.print(line)
    out.print(tables.LEGEND)
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
    print_outcomes(analysis)
    print_categories(analysis)
    for note in campaign_notes(analysis):
        out.print(note)


def print_figures(analysis: Analysis) -> None:
    """Per instance, for each tool whose runs gave figures of their own."""
    found = tools_figures(analysis)
    for tool, metrics, cells in found:
        out.print(_table(f"{tool}: per instance", tables.figures_headers(metrics),
                         [tables.figures_row(c, metrics) for c in cells]))
    if found:
        out.print(tables.FIGURES_LEGEND)


def print_ratios(analysis: Analysis, asked: list[RatioAsked]) -> None:
    for one in (expanded for pattern in asked for expanded in each_tool(analysis, pattern)):
        found = ratios(analysis, one)
        out.print(_table(f"{one.numerator} / {one.denominator}, {one.figure}",
                         tables.RATIO_HEADERS, [tables.ratio_row(r) for r in found]))
        if not found:
            err.print(f"[yellow]--ratio {one}: no instance where both tools have runs that "
                      "ended ok[/yellow]")
    if asked:
        out.print(tables.RATIO_LEGEND)


def print_paper_tables(pair: tuple[str, str], rows: list[PairRow]) -> None:
    out.print(_table("Table 2: per tool", tables.table2_headers(pair),
                     [tables.table2_row(r) for r in rows]))
    out.print(_table("Table 3: per family and tool", tables.table3_headers(pair),
                     [tables.table3_row(r) for r in rows]))
    out.print(tables.paper_legend(pair))
    notes = {r.tlb_note for r in rows if r.tlb_note}
    if notes:
        out.print(f"TLB misses not measured: {'; '.join(sorted(notes))}")


def check_outputs(html_file: Path | None, csv_file: Path | None,
                  benchexec_dir: Path | None, markdown_file: Path | None = None) -> None:
    """HarnessError before anything is read if a file asked for could not be
    written (no folder is made for it, but --benchexec's own)."""
    for path, option in ((html_file, "--html"), (csv_file, "--csv"),
                         (markdown_file, "--markdown")):
        if path is not None:
            check_writable(path, option)
    if benchexec_dir is not None:
        check_benchexec_folder(benchexec_dir, "--benchexec")


def show(analyses: list[Analysis], html_file: Path | None, csv_file: Path | None,
         benchexec_dir: Path | None, which_tables: str | None = None,
         pair: str | None = None, asked_ratios: list[RatioAsked] | None = None
         ) -> None:
    """The summary of each campaign in the terminal (with the ratios asked
    for), the paper's tables over all of them if asked, then the files asked
    for (of one campaign)."""
    if len(analyses) > 1 and (html_file or csv_file or benchexec_dir):
        raise HarnessError("--html, --csv and --benchexec write one campaign: give one DIR")
    paper = None
    left_out: list[str] = []
    if which_tables == "paper":
        chosen, having = choose_pair(analyses, pair)
        paper = (chosen, [row for a in having for row in pair_rows(a, chosen)])
        left_out = [left_out_note(a, chosen) for a in analyses if not has_pair(a, chosen)]
    elif pair is not None:
        raise HarnessError("--pair chooses the modes of --tables paper: add --tables paper")
    for analysis in analyses:
        if len(analyses) > 1:
            out.rule(f"campaign {analysis.name}")
        print_summary(analysis)
        print_figures(analysis)
        print_ratios(analysis, asked_ratios or [])
    if paper:
        print_paper_tables(*paper)
        for note in left_out:
            out.print(note)
    analysis = analyses[0]
    if csv_file:
        write_csv(analysis, csv_file)
        out.print(f"runs (CSV): {csv_file}")
    if benchexec_dir:
        files = write_benchexec(analysis, benchexec_dir)
        out.print(f"BenchExec results: {len(files)} files in {benchexec_dir}")
    if html_file:
        write_html(analysis, html_file, paper)
        out.print(f"HTML report: {html_file.resolve()}")


COMPARISON_HEADERS = ["mode", "runs", "answer", "CPU s", "user / sys s", "wall s",
                      "speed-up [95% CI]", "Wilcoxon p", "peak MiB", "peak vs base", "huge"]
COMPARISON_LEGEND = (
    "CPU s, user / sys s, wall s, peak MiB, huge: medians over the runs that answered; "
    "speed-up: geometric mean over the repetitions of baseline CPU time / mode CPU time (the "
    "modes of a repetition ran back to back on the same cores, in a shuffled order), with a "
    "95% bootstrap interval over repetitions; Wilcoxon p: paired signed-rank test; peak vs "
    "base: geometric mean of mode / baseline peak memory; huge: share of the heap in huge "
    "pages.")


def print_comparison(comparison: Comparison) -> None:
    """What `hugeheap compare` found, on stdout (the notes on stderr)."""
    c = comparison
    rows = []
    for m in c.modes:
        is_base = m.mode == c.baseline
        speedup = "baseline" if is_base else (
            "-" if m.speedup is None else
            f"{m.speedup.geomean:.3f} [{m.speedup.low:.3f}, {m.speedup.high:.3f}]")
        rows.append([
            m.mode, f"{m.solved}/{m.runs}", ", ".join(m.answers), tables.shown(m.cputime),
            f"{tables.shown(m.user)} / {tables.shown(m.system)}", tables.shown(m.walltime),
            speedup, "-" if is_base else tables.shown(m.wilcoxon_p, "{:.3g}"),
            "-" if m.memory_peak is None else f"{m.memory_peak / 2**20:.1f}",
            "-" if is_base else tables.shown(m.memory_ratio, "{:.3f}"),
            tables.shown(m.huge_share, "{:.0%}")])
    out.print(_table(f"{c.command}: {c.repetitions} repetitions; CPU limit {c.cpu_limit:g} s; "
                     f"baseline {c.baseline}", COMPARISON_HEADERS, rows))
    out.print(COMPARISON_LEGEND)
    if c.memory_note:
        out.print(c.memory_note)
    for warning in c.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")
    if c.unreliable_runs:
        err.print(f"[yellow]{c.unreliable_runs} runs were measured without cgroups (rusage "
                  "only): their CPU time and memory may miss descendants[/yellow]")
