"""The report on a campaign with known answers: the summary figures, the CSV,
BenchExec XML read back by BenchExec's own table-generator, and the HTML page
opened in headless Chromium as a person would."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from browser import Browser, find_chromium
from hugeheap_cli import cli

from hugeheap.campaign.folder import CampaignMeta
from hugeheap.campaign.store import RunRecord, Store
from hugeheap.report.analysis import ModeSummary, analyse, steal_note
from hugeheap.report.export import write_benchexec, write_csv
from hugeheap.report.html_page import write_html
from hugeheap.report.stats import Speedup
from hugeheap.report.tables import standing

LIMIT = 100.0
# CPU seconds per instance: `fast` takes half of `base` everywhere it solves;
# nobody solves i4; `fast` alone solves i3.
TIMES = {
    "base": {"i0": 10.0, "i1": 20.0, "i2": 40.0, "i3": None, "i4": None},
    "fast": {"i0": 5.0, "i1": 10.0, "i2": 20.0, "i3": 50.0, "i4": None},
}


def record(mode: str, instance: str, repetition: int, cputime: float | None) -> RunRecord:
    solved = cputime is not None
    return RunRecord(
        tool="solver", instance=instance, mode=mode, repetition=repetition,
        status="ok" if solved else "timeout", termination_reason=None if solved else "cputime",
        verdict="unsat" if solved else "unknown", verdict_detail=None, exit_code=20,
        signal=None, cputime=cputime if solved else LIMIT, cputime_user=(cputime or LIMIT) * 0.9,
        cputime_system=(cputime or LIMIT) * 0.1, walltime=(cputime or LIMIT) + 0.01,
        memory_peak=(100 if mode == "base" else 150) * 2**20,
        huge_share=0.0 if mode == "base" else 0.9, tlb_misses=None, tlb_reason="not supported",
        reliable=True, warnings="[]", cores="0,1", start_time="2026-11-22T00:00:00+00:00",
        answer_value=None, output=None)


def make_campaign(directory: Path, repetitions: int = 3) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    store = Store(directory / "results.sqlite")
    CampaignMeta(identity={}, suite_name="known", baseline="base", cpu_limit_s=LIMIT,
                 tools=["solver"], modes=["base", "fast"]).save(store)
    # Repetitions: the median is the listed time (one faster, one slower).
    store.add_many([record(mode, instance, rep,
                           None if t is None else t * (1.0, 0.9, 1.2)[rep % 3])
                    for mode, times in TIMES.items() for instance, t in times.items()
                    for rep in range(repetitions)])
    store.close()
    (directory / "machine.json").write_text(json.dumps([{
        "hostname": "testhost", "kernel": "6.1", "cpu_model": "Test CPU", "cpu_count": 2,
        "memory_bytes": 2**30, "started": "2026-11-22T00:00:00+00:00",
        "tools": {"solver": {"version": "1.0"}}}]))
    return directory


def test_summary_figures_on_known_data(tmp_path: Path) -> None:
    analysis = analyse(make_campaign(tmp_path / "camp"))
    base, fast = analysis.summaries
    assert (base.mode, base.solved, fast.solved) == ("base", 3, 4)
    assert base.par2 == pytest.approx((10 + 20 + 40 + 2 * LIMIT + 2 * LIMIT) / 5)
    assert fast.par2 == pytest.approx((5 + 10 + 20 + 50 + 2 * LIMIT) / 5)
    assert base.common == fast.common == 3  # i3 is not solved by every mode
    assert base.common_time == pytest.approx(70) and fast.common_time == pytest.approx(35)
    assert fast.saved_percent == pytest.approx(50)
    assert fast.speedup is not None and fast.speedup.geomean == pytest.approx(2.0)
    assert fast.speedup.low == pytest.approx(2.0) and fast.speedup.high == pytest.approx(2.0)
    assert fast.memory_ratio == pytest.approx(1.5) and fast.huge_share == pytest.approx(0.9)
    assert fast.common_user == pytest.approx(35 * 0.9)
    assert fast.tlb_ratio is None and fast.tlb_note == "not supported"


def test_csv_has_one_row_per_run(tmp_path: Path) -> None:
    analysis = analyse(make_campaign(tmp_path / "camp"))
    write_csv(analysis, tmp_path / "runs.csv")
    with open(tmp_path / "runs.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 5 * 3
    assert {r["mode"] for r in rows} == {"base", "fast"} and "cputime_user" in rows[0]


def test_benchexec_xml_is_read_by_table_generator(tmp_path: Path) -> None:
    generator = shutil.which("table-generator", path=str(Path(sys.executable).parent))
    if generator is None:
        pytest.skip("BenchExec's table-generator is not installed (pip install benchexec)")
    analysis = analyse(make_campaign(tmp_path / "camp"))
    files = write_benchexec(analysis, tmp_path / "xml")
    assert sorted(f.name for f in files) == ["known.solver.base.results.xml",
                                             "known.solver.fast.results.xml"]
    done = subprocess.run([generator, "--format", "csv", "--outputpath", str(tmp_path / "table"),
                           *map(str, files)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    [table] = (tmp_path / "table").glob("*.table.csv")  # (and a .diff.csv)
    lines = [line.split("\t") for line in table.read_text().splitlines()]
    header = lines[2]
    body = {line[0]: line for line in lines[3:]}
    assert sorted(body) == ["i0", "i1", "i2", "i3", "i4"]
    cputime = [i for i, title in enumerate(header) if title.startswith("cputime (s)")]
    status = [i for i, title in enumerate(header) if title == "status"]
    assert [float(body["i2"][i]) for i in cputime] == [40.0, 20.0]
    assert [body["i4"][i] for i in status] == ["TIMEOUT", "TIMEOUT"]
    assert [body["i3"][i] for i in status] == ["TIMEOUT", "unsat"]


def test_benchexec_xml_gives_unsolved_runs_the_cpu_time_they_were_measured(
        tmp_path: Path) -> None:
    """A timeout stopped past the limit, a tool that gave up early (unknown),
    a run nothing measured: BenchExec's result XML carries what each one
    measured, never the limit the report's PAR-2 charges them."""
    def runs(instance: str, cputimes: list[float | None], **how: Any) -> list[RunRecord]:
        return [dataclasses.replace(record("base", instance, rep, 1.0), cputime=cpu,
                                    walltime=(cpu or 0.5) + 0.25, **how)
                for rep, cpu in enumerate(cputimes)]
    directory = tmp_path / "camp"
    directory.mkdir()
    store = Store(directory / "results.sqlite")
    CampaignMeta(identity={}, suite_name="unsolved", baseline="base", cpu_limit_s=LIMIT,
                 tools=["solver"], modes=["base"]).save(store)
    store.add_many(
        runs("solved", [10.0, 9.0, 12.0])
        + runs("timeout", [100.9, 100.2, 100.4], status="timeout",
               termination_reason="cputime", verdict="unknown")
        + runs("gave-up", [37.5, 36.0, 40.0], verdict="unknown")
        + runs("unmeasured", [None, None, None], status="error", verdict="error",
               cputime_user=None, cputime_system=None))
    store.close()
    analysis = analyse(directory)
    [xml] = write_benchexec(analysis, tmp_path / "xml")
    columns = {run.get("name"): {c.get("title"): c.get("value") for c in run.iter("column")}
               for run in ET.parse(xml).getroot().iter("run")}
    assert columns["solved"]["cputime"] == "10.0s"
    assert columns["timeout"]["status"] == "TIMEOUT"
    assert (columns["timeout"]["cputime"], columns["timeout"]["walltime"]) == ("100.4s",
                                                                                "100.65s")
    assert columns["gave-up"]["status"] == "unknown"
    assert (columns["gave-up"]["cputime"], columns["gave-up"]["walltime"]) == ("37.5s", "37.75s")
    assert "cputime" not in columns["unmeasured"]
    assert columns["unmeasured"]["walltime"] == "0.75s"
    # The report's own figures still charge every unsolved instance twice the limit.
    [summary] = analysis.summaries
    assert (summary.solved, summary.par2) == (1, pytest.approx((10.0 + 3 * 2 * LIMIT) / 4))


def test_html_report_in_a_browser(tmp_path: Path) -> None:
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("Chromium is not installed (Debian package chromium)")
    analysis = analyse(make_campaign(tmp_path / "camp"))
    page = tmp_path / "report.html"
    write_html(analysis, page)
    browser = Browser(chromium)
    try:
        session = browser.open(page.as_uri())
        count = "document.querySelectorAll('{}').length".format
        # One cactus plot and one scatter plot per non-baseline mode, drawn.
        assert browser.evaluate(session, count(".js-plotly-plot")) == 2
        assert browser.evaluate(session, count(".js-plotly-plot .main-svg")) >= 2
        assert browser.evaluate(session, count("table.summary tbody tr")) == 2
        assert browser.evaluate(session, count("#instances tbody tr")) == 10
        assert "testhost" in browser.evaluate(session, "document.body.innerText")
        # Filtering keeps the rows with every word; sorting orders by value.
        shown = browser.evaluate(session, """{
            const f = document.getElementById('filter');
            f.value = 'fast i3'; f.dispatchEvent(new Event('input'));
            Array.from(document.querySelectorAll('#instances tbody tr'))
                 .filter(r => r.style.display !== 'none').length }""")
        assert shown == 1
        order = browser.evaluate(session, """{
            const f = document.getElementById('filter');
            f.value = 'base'; f.dispatchEvent(new Event('input'));
            document.querySelectorAll('#instances th')[4].click();
            Array.from(document.querySelectorAll('#instances tbody tr'))
                 .filter(r => r.style.display !== 'none').map(r => r.cells[1].textContent) }""")
        assert order == ["i0", "i1", "i2", "i3", "i4"]
        browser.evaluate(session, "document.querySelectorAll('#instances th')[4].click()")
        browser.screenshot(session, tmp_path / "report.png")
        assert (tmp_path / "report.png").stat().st_size > 10_000
        assert browser.problems(session) == []
    finally:
        browser.close()


def test_report_command(tmp_path: Path) -> None:
    directory = make_campaign(tmp_path / "camp")
    done = cli("report", str(directory), "--html", str(tmp_path / "r.html"), "--csv",
               str(tmp_path / "r.csv"))
    assert done.returncode == 0, done.stderr
    assert "2.000 [2.000, 2.000]" in done.stdout and "+50.0%" in done.stdout
    assert (tmp_path / "r.html").exists() and (tmp_path / "r.csv").exists()
    missing = cli("report", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "no such campaign directory" in missing.stderr
    (tmp_path / "empty").mkdir()
    empty = cli("report", str(tmp_path / "empty"))
    assert empty.returncode == 2 and "no campaign here" in empty.stderr


def test_the_report_says_how_much_time_the_host_took(tmp_path: Path) -> None:
    directory = make_campaign(tmp_path / "camp")
    quiet = cli("report", str(directory))
    assert quiet.returncode == 0 and "Steal time" not in quiet.stdout
    store = Store(directory / "results.sqlite")
    store.db.execute("UPDATE runs SET steal_time = 0.01")
    store.db.execute("UPDATE runs SET steal_time = 2.5 WHERE mode = 'fast' AND instance = 'i1' "
                     "AND repetition = 0")
    store.close()
    assert steal_note(analyse(directory).runs) == (
        "Steal time: in 1 of 30 runs the host of this virtual machine took over 5% of the wall "
        "time (and 0.1 s or more) for other work (2.8 s in all runs; at most 2.50 s of 10.01 s, "
        "solver i1 fast). Their wall times are longer by up to that much: compare CPU times, or "
        "modes run side by side with enough repetitions.")
    said = cli("report", str(directory), "--html", str(tmp_path / "r.html"))
    assert said.returncode == 0 and "Steal time: in 1 of 30 runs" in said.stdout
    assert "Steal time: in 1 of 30 runs" in (tmp_path / "r.html").read_text()


def _summary(mode: str, speedup: float | None) -> ModeSummary:
    return ModeSummary(tool="minisat", mode=mode, instances=3, solved=3, wrong=0, par2=1.0,
                       common=3, common_time=1.0, common_user=1.0, common_system=0.0,
                       saved_percent=None, wilcoxon_p=None, memory_ratio=1.0, huge_share=None,
                       tlb_ratio=None, tlb_note=None,
                       speedup=None if speedup is None else Speedup(speedup, speedup, speedup, 3))


def test_the_standing_line_names_the_fastest_mode_and_how_far_hugeheap_is() -> None:
    rows = [_summary("system", None), _summary("hugeheap", 1.10), _summary("mimalloc", 1.21)]
    line = standing(rows, "system")
    assert line is not None and "hugeheap is NOT the fastest" in line
    assert "mimalloc is (1.210 against hugeheap's 1.100, 9.1% faster than hugeheap)" in line
    rows[1] = _summary("hugeheap", 1.30)
    assert standing(rows, "system") == ("minisat: hugeheap is the fastest mode here (1.300; "
                                        "next mimalloc, 1.210)")
    slower = [_summary("system", None), _summary("hugeheap", 0.9)]
    assert "system is (1.000 against hugeheap's 0.900" in (standing(slower, "system") or "")
    assert standing([_summary("system", None)], "system") is None
