"""The HTML report: one self-contained file (plotly's script embedded, no
network fetch) with the summary tables, how the runs ended (and why a tool
solved nothing), the paper's Tables 2 and 3 when asked for, a cactus plot and
log-log scatter plots per tool, a sortable and filterable per-instance table,
and the machine the campaign ran on with what its memory costs allow to
conclude."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from ..files import write_whole
from . import tables
from .analysis import Analysis, campaign_notes
from .categories import count_categories
from .failures import count_outcomes, explain
from .paper import PairRow

Paper = tuple[tuple[str, str], list[PairRow]]  # the pair of modes, and a row per tool

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.6em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child, td.text { text-align: left; }
th { background: #f3f3f3; }
#instances th { cursor: pointer; user-select: none; }
#instances th.sorted-up::after { content: " \\25B2"; }
#instances th.sorted-down::after { content: " \\25BC"; }
.wrong { color: #b00; font-weight: bold; } .legend { color: #555; max-width: 60em; }
.explain { color: #a60; font-weight: bold; } .memory { max-width: 60em; background: #f6f6e8;
  padding: 0.5em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; } .plot { width: 520px; height: 460px; }
#filter { font-size: 1em; padding: 0.3em; width: 24em; }
"""

# Sorting and filtering of the per-instance table: numbers sort by their
# data-value, text by itself; the filter keeps rows containing every word typed.
_TABLE_SCRIPT = """
(function () {
  const table = document.getElementById("instances");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const filter = document.getElementById("filter");
  const count = document.getElementById("shown");
  filter.addEventListener("input", function () {
    const words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    for (const row of rows) {
      const text = row.textContent.toLowerCase();
      const keep = words.every(w => text.includes(w));
      row.style.display = keep ? "" : "none";
      if (keep) shown++;
    }
    count.textContent = shown;
  });
  Array.from(table.tHead.rows[0].cells).forEach(function (header, column) {
    header.addEventListener("click", function () {
      const up = !header.classList.contains("sorted-up");
      for (const h of table.tHead.rows[0].cells) h.classList.remove("sorted-up", "sorted-down");
      header.classList.add(up ? "sorted-up" : "sorted-down");
      const key = function (row) {
        const cell = row.cells[column];
        const value = cell.dataset.value;
        return value === undefined ? cell.textContent : parseFloat(value);
      };
      rows.sort(function (a, b) {
        const x = key(a), y = key(b);
        const order = (typeof x === "number" && typeof y === "number") ? x - y
          : String(x).localeCompare(String(y));
        return up ? order : -order;
      });
      for (const row of rows) body.appendChild(row);
    });
  });
})();
"""


def _escaped(value: Any) -> str:
    """Text or a value, safe inside HTML."""
    return html.escape(str(value))


def _figure_html(figure: go.Figure, div_id: str) -> str:
    return str(figure.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                              config={"displaylogo": False, "responsive": True}))


def _cactus(analysis: Analysis, tool: str) -> go.Figure:
    figure = go.Figure()
    for mode in analysis.modes:
        times = sorted(c.solved_cputime for key, c in analysis.cells.items()
                       if key[0] == tool and key[1] == mode and c.solved_cputime is not None)
        figure.add_trace(go.Scatter(x=list(range(1, len(times) + 1)), y=times,
                                    mode="lines+markers", name=mode))
    figure.update_layout(title=f"{tool}: cactus plot", xaxis_title="instances solved",
                         yaxis_title="CPU time (s)", yaxis_type="log",
                         margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return figure


def _scatter(analysis: Analysis, tool: str, mode: str) -> go.Figure:
    limit = analysis.cpu_limit
    xs, ys, names = [], [], []
    for instance in analysis.instances:
        base = analysis.cells.get((tool, analysis.baseline, instance))
        this = analysis.cells.get((tool, mode, instance))
        if base is None or this is None:
            continue
        # Unsolved runs sit on the limit, so that they stay visible.
        xs.append(base.solved_cputime if base.solved_cputime is not None else limit)
        ys.append(this.solved_cputime if this.solved_cputime is not None else limit)
        names.append(instance)
    low = max(min(xs + ys + [limit]) / 2, 1e-3)
    high = max(xs + ys + [low]) * 2  # up to the limit only where a run reached it
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name="instances", text=names,
                                hovertemplate="%{text}<br>baseline %{x:.3f} s<br>"
                                              f"{html.escape(mode)} %{{y:.3f}} s<extra></extra>"))
    for factor, label in ((1, "same time"), (2, "2x slower"), (0.5, "2x faster")):
        figure.add_trace(go.Scatter(x=[low, high], y=[low * factor, high * factor],
                                    mode="lines", name=label,
                                    line={"dash": "solid" if factor == 1 else "dash",
                                          "color": "#888", "width": 1}))
    figure.update_layout(title=f"{tool}: {mode} against {analysis.baseline}",
                         xaxis_title=f"{analysis.baseline} CPU time (s)",
                         yaxis_title=f"{mode} CPU time (s)", xaxis_type="log", yaxis_type="log",
                         showlegend=True,
                         margin={"l": 60, "r": 20, "t": 50, "b": 50})
    return figure


def _summary_tables(analysis: Analysis) -> str:
    parts = []
    for tool in analysis.tools:
        rows = [s for s in analysis.summaries if s.tool == tool]
        if not rows:
            continue
        parts.append(f"<h3>{_escaped(tool)}: {rows[0].instances} instances, "
                     f"{rows[0].common} solved by every mode</h3>" + _plain_table(
                         tables.SUMMARY_HEADERS,
                         [tables.summary_row(s, analysis.baseline) for s in rows], "summary"))
        line = tables.standing(rows, analysis.baseline)
        if line:
            parts.append(f"<p class='standing'>{_escaped(line)}</p>")
    parts.append(f"<p class='legend'>{_escaped(tables.LEGEND)}</p>")
    return "\n".join(parts)


def _plain_table(headers: list[str], rows: list[list[str]], css: str) -> str:
    return (f"<table class='{css}'><thead><tr>"
            + "".join(f"<th>{_escaped(h)}</th>" for h in headers) + "</tr></thead><tbody>"
            + "".join("<tr>" + "".join(f"<td>{_escaped(c)}</td>" for c in row) + "</tr>"
                      for row in rows) + "</tbody></table>")


def _per_tool(analysis: Analysis, headers: list[str], rows: list[tuple[str, list[str]]]
              ) -> list[str]:
    """A table of each tool that has rows, under its name; rows: (tool, cells)."""
    return [f"<h3>{_escaped(tool)}</h3>" + _plain_table(
        headers, [cells for owner, cells in rows if owner == tool], "outcomes")
        for tool in analysis.tools if any(owner == tool for owner, _ in rows)]


def _outcomes(analysis: Analysis) -> str:
    counts = count_outcomes(analysis)
    parts = _per_tool(analysis, tables.OUTCOME_HEADERS,
                      [(c.tool, tables.outcome_row(c)) for c in counts])
    parts += [f"<p class='explain'>{_escaped(line)}</p>" for line in explain(analysis, counts)]
    return "\n".join(parts)


def _categories(analysis: Analysis) -> str:
    """BenchExec's categories and score, where the tasks have expected verdicts."""
    counts = count_categories(analysis)
    if not counts:
        return ""
    parts = ["<h2 id='categories'>BenchExec's categories</h2>"]
    parts += _per_tool(analysis, tables.CATEGORY_HEADERS,
                       [(c.tool, tables.category_row(c)) for c in counts])
    parts.append(f"<p class='legend'>{_escaped(tables.CATEGORY_LEGEND)}</p>")
    return "\n".join(parts)


def _paper(paper: Paper) -> str:
    pair, rows = paper
    notes = sorted({r.tlb_note for r in rows if r.tlb_note})
    return ("<h3>Table 2: per tool</h3>"
            + _plain_table(tables.table2_headers(pair), [tables.table2_row(r) for r in rows],
                           "table2")
            + "<h3>Table 3: per family and tool</h3>"
            + _plain_table(tables.table3_headers(pair), [tables.table3_row(r) for r in rows],
                           "table3")
            + f"<p class='legend'>{_escaped(tables.paper_legend(pair))}</p>"
            + (f"<p class='legend'>TLB misses not measured: {_escaped('; '.join(notes))}</p>"
               if notes else ""))


def _number(value: float | None, pattern: str) -> str:
    if value is None:
        return "<td data-value='Infinity'>-</td>"
    return f"<td data-value='{value!r}'>{pattern.format(value)}</td>"


def _instance_table(analysis: Analysis) -> str:
    headers = ["tool", "instance", "mode", "answer", "CPU s", "vs baseline", "wall s",
               "user s", "system s", "peak MiB", "huge", "runs", "the tool's own figures"]
    rows = []
    for (tool, mode, instance), cell in sorted(analysis.cells.items()):
        base = analysis.cells.get((tool, analysis.baseline, instance))
        ratio = (base.solved_cputime / cell.solved_cputime) \
            if base and base.solved_cputime and cell.solved_cputime else None
        verdict_class = "text wrong" if cell.verdict == "wrong" else "text"
        shown = tables.answer_shown(cell)
        own = ", ".join(f"{name} {tables.metric_shown(value)}"
                        for name, value in cell.metrics.items())
        rows.append(
            f"<tr><td class='text'>{_escaped(tool)}</td>"
            f"<td class='text'>{_escaped(instance)}</td>"
            f"<td class='text'>{_escaped(mode)}</td>"
            f"<td class='{verdict_class}'>{_escaped(shown)}</td>"
            + _number(cell.solved_cputime, "{:.3f}") + _number(ratio, "{:.3f}x")
            + _number(cell.walltime, "{:.3f}") + _number(cell.user, "{:.3f}")
            + _number(cell.system, "{:.3f}")
            + _number(None if cell.memory_peak is None else cell.memory_peak / 2**20, "{:.1f}")
            + _number(cell.huge_share, "{:.0%}") + f"<td>{cell.repetitions}</td>"
            f"<td class='text'>{_escaped(own)}</td></tr>")
    return ("<p><input id='filter' type='search' placeholder='filter: words to match'> "
            f"<span id='shown'>{len(rows)}</span> of {len(rows)} rows; click a heading to sort"
            "</p><table id='instances'><thead><tr>"
            + "".join(f"<th>{_escaped(h)}</th>" for h in headers) + "</tr></thead><tbody>"
            + "\n".join(rows) + "</tbody></table>")


def _machine(analysis: Analysis) -> str:
    if not analysis.machine:
        return "<p>No machine information was recorded.</p>"
    latest = analysis.machine[-1]
    plain = {k: v for k, v in latest.items() if not isinstance(v, dict)}
    parts = ["<table class='machine'>"]
    for key, value in plain.items():
        parts.append(f"<tr><th>{_escaped(key)}</th>"
                     f"<td class='text'>{_escaped(json.dumps(value))}</td></tr>")
    for key in ("thp", "first_touch", "allocators", "tools"):
        for name, value in (latest.get(key) or {}).items():
            parts.append(f"<tr><th>{_escaped(key)}: {_escaped(name)}</th><td class='text'>"
                         f"{_escaped(json.dumps(value))}</td></tr>")
    parts.append("</table>")
    hosts = {(s.get("hostname"), s.get("kernel"), json.dumps(s.get("thp"))) for s in
             analysis.machine}
    if len(hosts) > 1:
        parts.append(f"<p class='wrong'>The campaign ran in {len(analysis.machine)} sessions on "
                     "machines or settings that differ: compare with care.</p>")
    else:
        parts.append(f"<p>{len(analysis.machine)} session(s), all on this machine.</p>")
    return "\n".join(parts)


def render(analysis: Analysis, paper: Paper | None = None) -> str:
    plots = []
    for number, tool in enumerate(analysis.tools):
        if not any(key[0] == tool for key in analysis.cells):
            continue
        plots.append(f"<h3>{_escaped(tool)}</h3><div class='plots'>")
        cactus = _figure_html(_cactus(analysis, tool), f"cactus-{number}")
        plots.append(f"<div class='plot'>{cactus}</div>")
        for index, mode in enumerate(m for m in analysis.modes if m != analysis.baseline):
            figure = _scatter(analysis, tool, mode)
            plots.append(f"<div class='plot'>{_figure_html(figure, f'scatter-{number}-{index}')}"
                         "</div>")
        plots.append("</div>")
    wrong = "".join(f"<p class='wrong'>WRONG ANSWERS: {_escaped(d.describe())}</p>"
                    for d in analysis.disagreements)
    if analysis.missing_runs:
        wrong += (f"<p class='wrong'>The campaign is not complete: {analysis.missing_runs} runs "
                  "are missing (an instance without runs counts as unsolved).</p>")
    memory = "".join(f"<p class='memory'>{_escaped(note)}</p>"
                     for note in campaign_notes(analysis))
    tables = f"<h2 id='paper'>The paper's tables</h2>\n{_paper(paper)}" if paper else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>hugeheap report: {_escaped(analysis.name)}</title>
<style>{_STYLE}</style>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>hugeheap campaign {_escaped(analysis.name)}</h1>
<p>{len(analysis.runs)} runs: {len(analysis.tools)} tool(s), {len(analysis.modes)} allocator
modes (baseline <b>{_escaped(analysis.baseline)}</b>), {len(analysis.instances)} instances;
CPU limit {analysis.cpu_limit:g} s (PAR-2 counts an unsolved instance as
{2 * analysis.cpu_limit:g} s).</p>
{wrong}
{memory}
<h2 id="summary">Summary</h2>
{_summary_tables(analysis)}
<h2 id="outcomes">How the runs ended</h2>
{_outcomes(analysis)}
{_categories(analysis)}
{tables}
<h2 id="plots">Plots</h2>
{"".join(plots)}
<h2 id="per-instance">Per instance</h2>
{_instance_table(analysis)}
<h2 id="machine">Machine</h2>
{memory}
{_machine(analysis)}
<script>{_TABLE_SCRIPT}</script>
</body></html>
"""


def write_html(analysis: Analysis, path: Path, paper: Paper | None = None) -> None:
    write_whole(path, render(analysis, paper))
