"""The blocks `<!-- results:NAME ratio A/B:FIGURE -->` and `<!-- results:NAME
figures -->`: a campaign that compares tools (SWI-Prolog against hhtab)
published as the ratios of their own figures and the figures themselves,
each cell what the runs give, and their mistakes named."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import pytest
from test_report import record
from test_results import stored

from hugeheap.campaign.store import RunRecord
from hugeheap.errors import HarnessError
from hugeheap.report.blocks import refresh, stale
from hugeheap.report.packed import pack

MODES = ["system", "thp-off"]
TOOLS = ["swipl", "hhtab", "hhtab-wide"]
# query seconds by tool, instance and mode; each repetition's is this times
# (1.0, 0.8, 1.3), so that the median of the ratios differs from the ratio
# of the medians where one repetition is missing
QUERY = {("swipl", "p1"): 4.0, ("swipl", "p2"): 9.0, ("hhtab", "p1"): 1.0, ("hhtab", "p2"): 1.5,
         ("hhtab-wide", "p1"): 2.0, ("hhtab-wide", "p2"): 3.0}
SLOWER_WITHOUT_THP = {"system": 1.0, "thp-off": 1.25}
SPREAD = (1.0, 0.8, 1.3)


def query_s(tool: str, instance: str, mode: str, rep: int) -> float:
    return QUERY[(tool, instance)] * SLOWER_WITHOUT_THP[mode] * SPREAD[rep]


def run(tool: str, instance: str, mode: str, rep: int) -> RunRecord:
    """One run; hhtab's first repetition on p2 without THP times out."""
    if (tool, instance, mode, rep) == ("hhtab", "p2", "thp-off", 0):
        return dataclasses.replace(record(mode, instance, rep, None), tool=tool)
    return dataclasses.replace(
        record(mode, instance, rep, 10.0), tool=tool,
        memory_peak={"swipl": 300, "hhtab": 100, "hhtab-wide": 120}[tool] * 2**20 + rep * 2**20,
        metrics=json.dumps({"query_s": query_s(tool, instance, mode, rep), "answers": 7}))


def checkout(tmp_path: Path, marker: str) -> Path:
    runs = [run(tool, instance, mode, rep) for tool in TOOLS for instance in ("p1", "p2")
            for mode in MODES for rep in range(3)]
    pack(stored(tmp_path / "runs" / "tabling", "tabling-suite", TOOLS, MODES, runs),
         tmp_path / "published", "tabling", "make tabling")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(f"Before.\n<!-- results:tabling {marker} -->\n"
                                               "<!-- /results:tabling -->\nAfter.\n")
    return tmp_path


def expected_row(instance: str, mode: str, tool: str = "hhtab") -> str:
    reps = [r for r in range(3) if (tool, instance, mode, r) != ("hhtab", "p2", "thp-off", 0)]
    top = statistics.median(query_s("swipl", instance, mode, r) for r in range(3))
    bottom = statistics.median(query_s(tool, instance, mode, r) for r in reps)
    each = [query_s("swipl", instance, mode, r) / query_s(tool, instance, mode, r) for r in reps]
    # the peak over every repetition, the one that timed out (150 MiB) too
    peak = statistics.median(150 if r not in reps else
                             {"hhtab": 100, "hhtab-wide": 120}[tool] + r for r in range(3))
    return (f"| {instance} | {mode} | {top:.4g} | {bottom:.4g} | {top / bottom:.3f} | "
            f"{statistics.median(each):.3f} ({', '.join(f'{r:.2f}' for r in each)}) | "
            f"301, {peak:.0f} |")


def test_the_ratio_table_is_what_the_runs_give(tmp_path: Path) -> None:
    root = checkout(tmp_path, "ratio swipl/hhtab:query_s")
    page = root / "docs" / "page.md"
    assert stale(root) == [page] and refresh(root) == [page]
    lines = page.read_text().split("\n")
    assert lines[:6] == [
        "Before.", "<!-- results:tabling ratio swipl/hhtab:query_s -->",
        "swipl / hhtab, query_s:", "",
        "| instance | mode | swipl query_s | hhtab query_s | swipl / hhtab | per repetition "
        "| peak MiB: swipl, hhtab |",
        "|:---|:---|---:|---:|---:|---:|---:|"]
    assert lines[6:10] == [expected_row(i, m) for i in ("p1", "p2") for m in MODES]
    # the missing repetition: two ratios, whose median is not the ratio of the medians
    assert lines[9].split(" | ")[4] != lines[9].split(" | ")[5].split(" ")[0]
    assert lines[11].startswith("of medians: the first tool's median over the second's")
    assert lines[13].startswith("Campaign `tabling` (suite `tabling-suite`, 36 runs")
    assert lines[13].endswith("this table is made from it by `make results`: change the "
                              "data, not the table.")
    assert lines[14:] == ["<!-- /results:tabling -->", "After.", ""]
    assert stale(root) == []


def test_a_glob_gives_a_table_per_tool(tmp_path: Path) -> None:
    """Two ratios named give two tables; the first tool as a glob, a table
    for each tool it matches but the second (each hhtab over swipl)."""
    root = checkout(tmp_path, "ratio swipl/hhtab:query_s swipl/hhtab-wide:query_s")
    refresh(root)
    text = (root / "docs" / "page.md").read_text()
    assert "swipl / hhtab, query_s:" in text and "swipl / hhtab-wide, query_s:" in text
    assert expected_row("p1", "system", "hhtab-wide") in text
    assert "these tables are made from it" in text
    root = checkout(tmp_path / "glob", "ratio hh*/swipl:cpu")
    refresh(root)
    text = (root / "docs" / "page.md").read_text()
    assert "hhtab / swipl, cpu:" in text and "hhtab-wide / swipl, cpu:" in text
    assert "| p1 | system | 10 | 10 | 1.000 | 1.000 (1.00, 1.00, 1.00) | 101, 301 |" in text


@pytest.mark.parametrize("marker, problem", [
    ("ratio", "<!-- results:tabling ratio -->: name the ratios, as <!-- results:tabling ratio "
              "A/B:FIGURE ... -->"),
    ("ratio swipl", "--ratio swipl: write TOOL_A/TOOL_B or TOOL_A/TOOL_B:FIGURE"),
    ("ratio yap/hhtab:query_s", "--ratio yap/hhtab:query_s: the campaign has no tool yap "
                                "(its tools: swipl, hhtab, hhtab-wide)"),
    ("ratio swipl/yap:query_s", "--ratio swipl/yap:query_s: the campaign has no tool yap"),
    ("ratio swipl/hhtab:states", "--ratio swipl/hhtab:states: swipl has no figure states (it "
                                 "has cpu, wall, user, sys, peak, answers, query_s)"),
])
def test_ratio_mistakes_are_named(tmp_path: Path, marker: str, problem: str) -> None:
    root = checkout(tmp_path, marker)
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value).startswith(f"docs/page.md:2: {problem}")


def test_the_figures_table_is_what_the_runs_give(tmp_path: Path) -> None:
    root = checkout(tmp_path, "figures")
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().split("\n")
    assert lines[2:6] == [
        "swipl:", "",
        "| instance | mode | answer | CPU s | wall s | user / sys s | peak MiB | huge | answers "
        "| query_s |",
        "|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|"]
    swipl_p1 = statistics.median(query_s("swipl", "p1", "system", r) for r in range(3))
    assert lines[6] == ("| p1 | system | unsat | 10.000 | 10.010 | 9.00 / 1.00 | 301.0 | 90% "
                        f"| 7 | {swipl_p1:.4g} |")
    # hhtab's p2 without THP: two of three repetitions ended ok (so the cell
    # did), and its own figures are theirs
    hhtab = lines[lines.index("hhtab:") + 4:lines.index("hhtab:") + 8]
    assert hhtab[3].startswith("| p2 | thp-off | unsat | 10.000 |")
    hhtab_p2 = statistics.median(query_s("hhtab", "p2", "thp-off", r) for r in (1, 2))
    assert hhtab[3].endswith(f"| {hhtab_p2:.4g} |")
    assert "hhtab-wide:" in lines and "these tables are made from it" in lines[-4]
    assert lines[-4].startswith("Campaign `tabling`")


def test_the_figures_block_keeps_the_tools_named(tmp_path: Path) -> None:
    root = checkout(tmp_path, "figures hhtab hhtab-wide")
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().split("\n")
    assert "hhtab:" in lines and "hhtab-wide:" in lines and "swipl:" not in lines
    assert lines.index("hhtab:") < lines.index("hhtab-wide:")


def test_a_tool_without_figures_is_named(tmp_path: Path) -> None:
    root = checkout(tmp_path, "figures hhtab yap")
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value).startswith(
        "docs/page.md:2: <!-- results:tabling figures hhtab yap -->: the campaign has no figures "
        "of a tool 'yap' (tools with figures: swipl, hhtab, hhtab-wide)")


def test_a_campaign_without_figures_has_no_figures_block(tmp_path: Path) -> None:
    runs = [dataclasses.replace(record(mode, "p1", rep, 1.0), tool="solver")
            for mode in MODES for rep in range(3)]
    pack(stored(tmp_path / "runs" / "plain", "plain-suite", ["solver"], MODES, runs),
         tmp_path / "published", "plain", "make plain")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("<!-- results:plain figures -->\n"
                                               "<!-- /results:plain -->\n")
    with pytest.raises(HarnessError, match="docs/page.md:1: <!-- results:plain figures -->: no "
                                           "tool of the campaign measured figures of its own"):
        stale(tmp_path)
