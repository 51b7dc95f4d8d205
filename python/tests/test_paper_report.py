"""The paper's tables, the failure explanation and the machine's memory note,
on a small real campaign (minisat and clasp on generated instances, the
system allocator against hugeheap), and the judging of answers that carry a
value (optimum costs, answer and state counts) across runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from campaign_helpers import as_stored_by_schema
from hugeheap_cli import cli

from hugeheap.campaign.answers.verdicts import judge
from hugeheap.campaign.store import RunRecord, Store
from hugeheap.measure.allocators import REPO_ROOT
from hugeheap.measure.firsttouch import measure, what_it_means
from hugeheap.report.analysis import analyse

GEN = REPO_ROOT / "suites" / "paper" / "gen"
SUITE = f"""
[campaign]
name = "tiny"
modes = ["system", "hugeheap"]

[limits]
cpu_time = "30s"

# A new user's first try: clasp with the default adapter (its exit codes 10,
# 20 and 30 are answers, not errors).
[tools.clasp-exitcode]
command = "clasp -q {{instance}}"
instances = ["*.aspif"]

[tools.clasp]
command = "clasp -q {{instance}}"
adapter = "asp"
instances = ["*.aspif"]

[tools.minisat]
command = "minisat -verb=0 {{instance}} {{model}}"
adapter = "sat"
instances = ["*.cnf"]

# Where a run starts: a directory of its own, not the harness's.
[tools.where]
command = "/bin/sh -c 'pwd; touch left-behind' {{instance}}"
adapter = "regex:/(hugeheap-run)-[^/]+/cwd$"
instances = ["*.cnf"]

[[instances.generate]]
name = "colour-{{seed}}.aspif"
command = "{GEN}/asp.py mincolouring 40 70 3 {{seed}}"
seeds = [1, 2]

[[instances.generate]]
name = "random-{{seed}}.cnf"
command = "{REPO_ROOT}/build/bin/hh-randksat 200 600 3 {{seed}}"
seeds = [1, 2]
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for program, package in (("clasp", "clasp"), ("gringo", "gringo"), ("minisat", "minisat")):
        if shutil.which(program) is None:
            pytest.skip(f"{program} is not installed (Debian package {package})")
    if not (REPO_ROOT / "build" / "lib" / "libhugeheap.so").exists():
        pytest.skip("libhugeheap.so is not built (make)")
    directory = tmp_path_factory.mktemp("paper")
    (directory / "suite.toml").write_text(SUITE)
    done = cli("bench", str(directory / "suite.toml"), "--out", str(directory / "out"))
    assert done.returncode == 0, done.stderr
    return directory / "out"


def test_paper_tables_in_the_terminal(campaign: Path) -> None:
    done = cli("report", str(campaign), "--tables", "paper", "--pair", "system,hugeheap")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    table2 = lines[next(i for i, line in enumerate(lines) if line.startswith("Table 2")):]
    minisat = next(line for line in table2 if "minisat" in line).split("│")
    # family, tool, # system, # hugeheap, both: every instance solved by both.
    assert [cell.strip() for cell in minisat[1:6]] == ["tiny", "minisat", "2", "2", "2"]
    assert "Table 3: per family and tool" in done.stdout
    assert "TLB misses not measured" in done.stdout or "r_tlb" in done.stdout


def test_failure_explained(campaign: Path) -> None:
    done = cli("report", str(campaign))
    assert done.returncode == 0, done.stderr
    explanation = " ".join(done.stderr.split())
    assert ('clasp-exitcode: 4 of 4 runs ended \'error\' with exit code 30: is the adapter '
            'right? clasp reports an optimum found with exit code 30; try adapter = "asp"'
            ) in explanation
    # The counts per tool and mode: clasp-exitcode's runs all errors.
    assert "2 (exit code 30)" in done.stdout
    assert "clasp:" not in explanation  # the right adapter solved everything


def test_memory_note_and_paper_tables_in_the_page(campaign: Path, tmp_path: Path) -> None:
    machine = json.loads((campaign / "machine.json").read_text())
    facts = machine[-1]["first_touch"]
    assert facts["sampled_pages"] >= 16 and facts["recycled_huge_ms"] > 0
    page = tmp_path / "report.html"
    done = cli("report", str(campaign), "--tables", "paper", "--html", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    assert "Table 2: per tool" in text and "How the runs ended" in text
    assert "try adapter = &quot;asp&quot;" in text
    assert what_it_means(facts).split("(")[0] in text


def test_pair_mistakes_are_one_line(campaign: Path) -> None:
    done = cli("report", str(campaign), "--tables", "paper", "--pair", "system,mimalloc")
    assert done.returncode == 2
    assert done.stderr.strip() == ("hugeheap: --pair: the campaign tiny has no mode 'mimalloc' "
                                   "(its modes: system, hugeheap)")
    done = cli("report", str(campaign), "--pair", "system,hugeheap")
    assert done.returncode == 2 and "add --tables paper" in done.stderr
    done = cli("report", str(campaign), str(campaign), "--html", "x.html")
    assert done.returncode == 2 and "give one DIR" in done.stderr


def test_a_campaign_without_the_pair_stays_out_of_the_tables(campaign: Path) -> None:
    # A campaign run in other modes beside those that have the pair: the
    # tables are those of the others, and a line says how to see it.
    other = campaign.parent / "other-modes"
    done = cli("bench", str(campaign.parent / "suite.toml"), "--out", str(other), "--tools",
               "minisat", "--modes", "hugeheap-nothp,hugeheap", "--repeat", "1")
    assert done.returncode == 0, done.stderr
    done = cli("report", str(campaign), str(other), "--tables", "paper", "--pair",
               "system,hugeheap")
    assert done.returncode == 0, done.stderr
    table2 = done.stdout[done.stdout.index("Table 2"):]
    assert "minisat" in table2
    assert " ".join(done.stdout.split()).endswith(
        "tiny: not in the paper's tables, it has no mode 'system' (its modes: hugeheap-nothp, "
        "hugeheap; --pair hugeheap-nothp,hugeheap shows it)")


def test_a_run_starts_in_a_directory_of_its_own(campaign: Path) -> None:
    with Store(campaign / "results.sqlite", readonly=True) as store:
        runs = store.runs()
    assert {r.verdict for r in runs if r.tool == "where"} == {"hugeheap-run"}
    assert not (campaign.parent / "left-behind").exists() and not Path("left-behind").exists()


def test_optimum_costs_must_agree(campaign: Path) -> None:
    with Store(campaign / "results.sqlite", readonly=True) as store:
        runs = store.runs()
    optima = {r.answer_value for r in runs if r.tool == "clasp"}
    assert optima == {"3"} and not judge(runs)


def record(tool: str, mode: str, verdict: str, value: str | None = None,
           detail: str | None = None, instance: str = "i") -> RunRecord:
    return RunRecord(
        tool=tool, instance=instance, mode=mode, repetition=0, status="ok",
        termination_reason=None, verdict=verdict, verdict_detail=detail, answer_value=value,
        exit_code=0, signal=None, cputime=1.0, cputime_user=1.0, cputime_system=0.0,
        walltime=1.0, memory_peak=1, huge_share=None, tlb_misses=None, tlb_reason=None,
        reliable=True, warnings="[]", cores="0", start_time="", output=None)


def test_contradicting_optima() -> None:
    unchecked = [record("clasp", "system", "optimum", "3"), record("clasp", "hugeheap",
                                                                   "optimum", "4")]
    [found] = judge(unchecked)
    assert {r.verdict for r in unchecked} == {"wrong"}
    assert found.describe().startswith("i: 1 run(s) say OPTIMUM 3 (clasp/system#0), 1 say "
                                       "OPTIMUM 4")
    # A checked model of cost 3 proves an optimum of 4 wrong, and UNSAT too.
    checked = [record("rc2", "system", "optimum", "3", "model checked: cost 3"),
               record("rc2", "hugeheap", "optimum", "4"), record("rc2", "mimalloc", "unsat")]
    [found] = judge(checked)
    assert [r.verdict for r in checked] == ["optimum", "wrong", "wrong"]
    assert "a checked model proves OPTIMUM 3" in found.blame


def test_a_tools_modes_must_agree() -> None:
    spin = [record("spin", "system", "holds", "1000"), record("spin", "hugeheap", "violated",
                                                              "900")]
    [found] = judge(spin)
    assert found.tool == "spin" and all(r.verdict == "wrong" for r in spin)
    # Different MUS extractors may find MUSes of different sizes; one extractor may not.
    muses = [record("musx", "system", "mus", "9"), record("other", "system", "mus", "12"),
             record("musx", "hugeheap", "mus", "9")]
    assert judge(muses) == []
    # Answer counts are facts of the program, whichever tool counted them.
    counts = [record("swipl", "system", "answers", "25"), record("hhtab", "system", "answers",
                                                                 "24")]
    [found] = judge(counts)
    assert found.tool is None and {r.verdict for r in counts} == {"wrong"}


def test_first_touch_is_measured() -> None:
    facts = measure()
    assert facts.sampled_pages >= 16 and facts.note
    for value in (facts.fresh_huge_ms, facts.recycled_huge_ms, facts.small_pages_ms):
        assert value is not None and value >= 0
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists() and "[never]" not in thp.read_text():
        assert facts.huge_pages_backed


def test_what_first_touch_costs_allow_to_conclude() -> None:
    lazy = {"fresh_huge_ms": 5.6, "recycled_huge_ms": 0.17, "small_pages_ms": 0.8,
            "huge_pages_backed": True}
    assert "understate what bare metal gives" in what_it_means(lazy)
    assert "a fresh huge page 5.60 ms" in what_it_means(lazy)
    eager = {**lazy, "fresh_huge_ms": 0.2}
    assert "as on bare metal" in what_it_means(eager)
    assert "not measured" in what_it_means({"note": "no THP"})


def test_campaigns_of_schema_1_are_read_and_upgraded(campaign: Path, tmp_path: Path) -> None:
    copy = tmp_path / "old"
    shutil.copytree(campaign, copy)
    as_stored_by_schema(copy / "results.sqlite", "1", "answer_value")
    old = analyse(copy)
    assert all(r.answer_value is None for r in old.runs) and old.summaries
    Store(copy / "results.sqlite").close()  # opened for writing: upgraded
    with Store(copy / "results.sqlite", readonly=True) as upgraded:
        assert upgraded.missing_columns == set()
