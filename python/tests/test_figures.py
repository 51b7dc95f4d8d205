"""What tools measure of themselves, from their output to the report: the
adapters' metrics (hhtab's query time and table bytes, pnexplore's
exploration time and bytes per state, a regex's named numbers), stored with
each run, their medians per instance, and ratios between two tools."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from campaign_helpers import as_stored_by_schema
from hugeheap_cli import cli

from hugeheap.campaign.answers.adapters import classify
from hugeheap.campaign.folder import CampaignMeta
from hugeheap.campaign.store import SCHEMA_VERSION, RunRecord, Store
from hugeheap.errors import HarnessError
from hugeheap.report.analysis import analyse
from hugeheap.report.figures import RatioAsked, parse_ratio, ratios

HHTAB = ('{"answers":8194,"calls":1,"unique":8194,"seconds":[0.25,0.125],'
         '"table_bytes":409700,"pool_bytes":917504,"peak_rss_bytes":22929408,"design":"fs"}')
PNEXPLORE = ('{"states":729,"edges":3402,"seconds":0.5,"states_per_second":1458.0,'
             '"bytes_per_state":101.5,"marking_bytes":4.00,"safe":true,"complete":true}')


def test_hhtab_gives_its_query_time_and_table_bytes() -> None:
    answer = classify("hhtab", 0, HHTAB)
    assert (answer.verdict, answer.value) == ("answers", "8194")
    assert answer.metrics == {"query_s": 0.25, "second_query_s": 0.125,
                              "table_bytes": 409700.0, "pool_bytes": 917504.0,
                              "peak_rss_bytes": 22929408.0, "table_bytes_per_answer": 50.0}
    one = classify("hhtab", 0, HHTAB.replace("[0.25,0.125]", "[0.25]"))
    assert one.metrics is not None and "second_query_s" not in one.metrics


def test_pnexplore_gives_its_exploration_time_and_bytes_per_state() -> None:
    answer = classify("pnexplore", 0, PNEXPLORE)
    assert answer.metrics == {"explore_s": 0.5, "states_per_s": 1458.0,
                              "bytes_per_state": 101.5, "marking_bytes": 4.0}
    # A field that is no number (true, a string) is no metric.
    assert classify("pnexplore", 0, PNEXPLORE.replace("0.5", '"x"')).metrics == {
        "states_per_s": 1458.0, "bytes_per_state": 101.5, "marking_bytes": 4.0}


def test_a_regex_group_that_is_named_and_a_number_is_a_metric() -> None:
    adapter = r"regex:^(answers) (?P<value>\d+) in (?P<query_s>\S+) s(?P<note> \w+)?$"
    answer = classify(adapter, 0, "answers 12 in 0.75 s extra\n")
    assert (answer.verdict, answer.value, answer.metrics) == ("answers", "12", {"query_s": 0.75})
    # The verdict is still the first unnamed group, wherever the named ones are.
    first = classify(r"regex:(?P<query_s>\S+) (done)", 0, "3.5 done")
    assert (first.verdict, first.metrics) == ("done", {"query_s": 3.5})
    assert classify(r"regex:^(answers)$", 0, "answers").metrics is None


def _run(tool: str, instance: str, repetition: int, query_s: float, wall: float) -> RunRecord:
    return RunRecord(
        tool=tool, instance=instance, mode="system", repetition=repetition, status="ok",
        termination_reason=None, verdict="answers", verdict_detail=None, answer_value="10",
        exit_code=0, signal=None, cputime=wall, cputime_user=wall, cputime_system=0.0,
        walltime=wall, memory_peak=2**20, huge_share=None, tlb_misses=None, tlb_reason=None,
        reliable=True, warnings="[]", cores="0", start_time="2026-11-22T00:00:00+00:00",
        output=None, metrics=json.dumps({"query_s": query_s}))


def _campaign(directory: Path) -> Path:
    """two threads against one: query times 1, 2, 3 s at one thread, 0.5, 1.25,
    1.5 s at two (ratios 0.5, 0.625, 0.5); wall times twice that; on a second
    instance the two-thread tool has no run."""
    directory.mkdir(parents=True)
    with Store(directory / "results.sqlite") as store:
        CampaignMeta(identity={}, suite_name="threads", baseline="system", cpu_limit_s=60.0,
                     tools=["one", "two"], modes=["system"]).save(store)
        store.add_many([_run("one", "p", r, q, 2 * q) for r, q in enumerate((1.0, 2.0, 3.0))]
                       + [_run("two", "p", r, q, 2 * q)
                          for r, q in enumerate((0.5, 1.25, 1.5))]
                       + [_run("one", "q", 0, 1.0, 1.0)])
    return directory


def test_ratio_of_two_tools_per_instance(tmp_path: Path) -> None:
    analysis = analyse(_campaign(tmp_path / "camp"))
    assert analysis.cells[("two", "system", "p")].metrics == {"query_s": 1.25}
    (found,) = ratios(analysis, RatioAsked("two", "one", "query_s"))
    assert (found.instance, found.mode) == ("p", "system")
    assert found.of_medians == pytest.approx(1.25 / 2.0)
    assert found.per_repetition == pytest.approx([0.5, 0.625, 0.5])
    assert found.median_per_repetition == pytest.approx(0.5)
    (wall,) = ratios(analysis, RatioAsked("two", "one", "wall"))
    assert wall.of_medians == pytest.approx(0.625)
    # A run that did not end ok has no figure to compare.
    with Store(tmp_path / "camp" / "results.sqlite") as store:
        kept = [r for r in store.runs() if (r.tool, r.repetition) != ("two", 2)]
    (tmp_path / "camp" / "results.sqlite").unlink()
    with Store(tmp_path / "camp" / "results.sqlite") as store:
        CampaignMeta(identity={}, suite_name="threads", baseline="system", cpu_limit_s=60.0,
                     tools=["one", "two"], modes=["system"]).save(store)
        store.add_many(kept + [replace(_run("two", "p", 2, 9.0, 9.0), status="timeout")])
    (again,) = ratios(analyse(tmp_path / "camp"), RatioAsked("two", "one", "query_s"))
    assert again.per_repetition == pytest.approx([0.5, 0.625])


def test_a_ratio_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    analysis = analyse(_campaign(tmp_path / "camp"))
    with pytest.raises(HarnessError, match="has no tool three"):
        ratios(analysis, RatioAsked("three", "one", "cpu"))
    with pytest.raises(HarnessError, match="has no figure explore_s"):
        ratios(analysis, RatioAsked("two", "one", "explore_s"))
    assert parse_ratio("a/b") == RatioAsked("a", "b", "cpu")
    for wrong in ("a", "a/", "/b", "a/b:"):
        with pytest.raises(HarnessError, match="write TOOL_A/TOOL_B"):
            parse_ratio(wrong)


def test_report_shows_the_figures_and_the_ratios(tmp_path: Path) -> None:
    directory = _campaign(tmp_path / "camp")
    done = cli("report", str(directory), "--ratio", "two/one:query_s", "--html",
               str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stderr
    assert "one: per instance" in done.stdout and "query_s" in done.stdout
    assert "two / one, query_s" in done.stdout and "0.625" in done.stdout
    assert "0.50, 0.62, 0.50" in done.stdout
    assert "query_s 1.25" in (tmp_path / "r.html").read_text()
    every = cli("report", str(directory), "--ratio", "*/one:wall")
    assert every.returncode == 0, every.stderr
    assert "two / one, wall" in every.stdout and "one / one" not in every.stdout
    none = cli("report", str(directory), "--ratio", "x*/one")
    assert none.returncode == 2 and "has no tool x*" in none.stderr
    wrong = cli("report", str(directory), "--ratio", "two/one:bytes")
    assert wrong.returncode == 2 and "two has no figure bytes" in wrong.stderr


def test_a_campaign_stored_before_metrics_is_read_and_upgraded(tmp_path: Path) -> None:
    directory = _campaign(tmp_path / "camp")
    as_stored_by_schema(directory / "results.sqlite", "4", "metrics")
    old = analyse(directory)
    assert all(r.metrics is None for r in old.runs)
    assert all(not cell.metrics for cell in old.cells.values())
    with pytest.raises(HarnessError, match="two has no figure query_s"):
        ratios(old, RatioAsked("two", "one", "query_s"))
    Store(directory / "results.sqlite").close()  # opened for writing: upgraded
    with Store(directory / "results.sqlite", readonly=True) as upgraded:
        assert upgraded.missing_columns == set() and upgraded.meta("schema") == SCHEMA_VERSION


def test_a_campaign_stored_before_steal_time_gains_it_as_a_number(tmp_path: Path) -> None:
    directory = _campaign(tmp_path / "camp")
    as_stored_by_schema(directory / "results.sqlite", "5", "steal_time")
    assert all(r.steal_time is None for r in analyse(directory).runs)
    with Store(directory / "results.sqlite") as store:  # opened for writing: upgraded
        store.db.execute("UPDATE runs SET steal_time = 0.25")
        kind = store.db.execute("SELECT typeof(steal_time) FROM runs LIMIT 1").fetchone()[0]
    assert kind == "real"
    assert {r.steal_time for r in analyse(directory).runs} == {0.25}
