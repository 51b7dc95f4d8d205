"""Published figures are data: a finished campaign packed into published/NAME
reads back as the figures its folder gives; every generated table of the
docs is what its data makes (a figure typed over, or data changed without
`make results`, fails here); the markers' mistakes are named."""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from hugeheap_cli import cli
from test_input_errors import fails_in_one_line
from test_report import make_campaign as stored_campaign
from test_report import record

from hugeheap.campaign.folder import CampaignMeta
from hugeheap.campaign.store import RunRecord, Store
from hugeheap.errors import HarnessError
from hugeheap.report.analysis import Analysis, analyse
from hugeheap.report.blocks import refresh, rewrite, stale
from hugeheap.report.families import Campaigns, family_block
from hugeheap.report.packed import RUNS, Packed, inside_checkout, load, pack

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_tables_are_what_their_data_gives() -> None:
    assert [str(p.relative_to(ROOT)) for p in stale(ROOT)] == [], \
        "generated tables differ from their data in published/: run `make results`"


def test_a_packed_campaign_reads_back_as_its_folder(tmp_path: Path) -> None:
    folder = stored_campaign(tmp_path / "camp")
    packed = pack(folder, tmp_path / "published", "known", " make known ")
    again, analysis = load(tmp_path / "published" / "known")
    assert again == packed and packed.command == "make known"
    original = analyse(folder)
    assert analysis.runs == original.runs
    assert analysis.summaries == original.summaries
    assert (analysis.name, analysis.baseline, analysis.machine) == \
        (original.name, original.baseline, original.machine)


def test_a_campaign_run_in_part_packs_the_tools_it_ran(tmp_path: Path) -> None:
    """`hugeheap bench --tools` runs some of a suite's tools into its
    campaign: packed with --tools, they are a finished campaign of their own."""
    folder = stored_campaign(tmp_path / "camp")
    store = Store(folder / "results.sqlite")
    meta = CampaignMeta.load(store)
    assert meta is not None
    dataclasses.replace(meta, tools=["other", "solver"],
                        tool_instances={"other": ["j0"]}).save(store)
    store.close()
    with pytest.raises(HarnessError, match=r"not finished \(6 runs missing\).*--tools"):
        pack(folder, tmp_path / "published", "part", "make part")
    packed = pack(folder, tmp_path / "published", "part", "make part", ["solver"])
    assert packed.campaign.tools == ["solver"] and packed.campaign.tool_instances == {}
    _, analysis = load(tmp_path / "published" / "part")
    assert analysis.summaries == analyse(stored_campaign(tmp_path / "whole")).summaries
    with pytest.raises(HarnessError, match="--tools: the campaign has no tool nope "
                                           r"\(its tools: other, solver\)"):
        pack(folder, tmp_path / "published", "part", "make part", ["nope"])
    line = fails_in_one_line("results", "pack", str(folder), "part", "--command", "c",
                             "--tools", ",", cwd=tmp_path)
    assert "--tools: name at least one of the campaign's tools" in line


def checkout(tmp_path: Path) -> Path:
    """A checkout with the packed campaign `known` and a page with its block."""
    pack(stored_campaign(tmp_path / "camp"), tmp_path / "published", "known", "make known")
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# Page\n\nBefore.\n\n<!-- results:known -->\n<!-- /results:known -->\n"
                    "\nAfter.\n")
    return tmp_path


def test_a_notebook_entry_keeps_its_generated_table(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    entry = root / "docs" / "notebook" / "2026-01-01-known.md"
    entry.parent.mkdir()
    entry.write_text("# Known (2026-01-01)\n\n<!-- results:known -->\n<!-- /results:known -->\n")
    assert entry in stale(root)
    assert entry in refresh(root) and entry not in stale(root)
    assert "| speed-up [95% CI] |" in entry.read_text()


def test_the_check_catches_a_drifted_figure(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    page = root / "docs" / "page.md"
    assert stale(root) == [page]  # the block is empty
    assert refresh(root) == [page] and stale(root) == []
    made = page.read_text()
    assert "| fast | 4/5 | 35.00 |" in made and "2.000 [2.000, 2.000]" in made
    assert made.startswith("# Page\n\nBefore.\n\n<!-- results:known -->\nBaseline base; ")
    assert "| solver (3/5) | base | 3/5 | 70.00 |" in made
    assert made.endswith("\n<!-- /results:known -->\n\nAfter.\n")
    assert "Reproduce: `make known`" in made and "Data: `published/known/`" in made
    page.write_text(made.replace("| fast | 4/5 | 35.00 |", "| fast | 4/5 | 34.00 |"))
    assert stale(root) == [page]
    # The data changed without the tables: caught too.
    runs = root / "published" / "known" / RUNS
    page.write_text(made)
    runs.write_text(runs.read_text().replace("solver,i0,fast,0,ok,,unsat,,,20,,5.0,",
                                             "solver,i0,fast,0,ok,,unsat,,,20,,4.0,"))
    assert stale(root) == [page]
    assert refresh(root) == [page] and page.read_text() != made


@pytest.mark.parametrize("text, problem", [
    ("a\n<!-- results:known -->\nb\n", "page.md:2: <!-- results:known --> has no end"),
    ("<!-- /results:known -->\n", "page.md:1: <!-- /results:known --> ends no block"),
    ("<!-- results:known -->\n<!-- results:other -->\n", "page.md:2: a results block begins "
     "inside the block of known (line 1)"),
    ("x\n<!-- results:gone -->\n<!-- /results:gone -->\n", "page.md:2: no packed campaign "
     "'gone' (published/gone/campaign.json is missing)"),
    ("<!-- results:../x -->\n<!-- /results:../x -->\n", "page.md:1: '../x' cannot name"),
])
def test_marker_mistakes_are_named(tmp_path: Path, text: str, problem: str) -> None:
    root = checkout(tmp_path)
    (root / "docs" / "page.md").write_text(text)
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value).startswith(f"docs/{problem}")


def test_text_outside_the_blocks_is_kept() -> None:
    text = "a\n  <!-- results:x -->  \nold\n<!-- /results:x -->\nb `<!-- results:y -->`\n"
    assert rewrite(text, "t.md", lambda name: f"new {name}") == \
        "a\n  <!-- results:x -->  \nnew x\n<!-- /results:x -->\nb `<!-- results:y -->`\n"


def test_the_commands(tmp_path: Path) -> None:
    """pack, report of the packed campaign, docs --check and docs."""
    root = checkout(tmp_path)
    done = cli("results", "pack", "camp", "again", "--command", "make again", cwd=root)
    assert done.returncode == 0 and "packed known" in done.stdout, done.stderr
    done = cli("report", "published/again", "--markdown", "again.md", cwd=root)
    assert done.returncode == 0 and "speed-up" in done.stdout, done.stderr
    assert "Data: `published/again/`" in (root / "again.md").read_text()
    done = cli("results", "docs", "--check", "--root", str(root))
    assert done.returncode == 1 and "differs from its data: " in done.stdout
    assert cli("results", "docs", cwd=root).returncode == 0
    done = subprocess.run(["make", "-s", "-C", str(ROOT), "-n", "results"], text=True,
                          capture_output=True)
    assert "hugeheap results docs" in done.stdout, done.stderr
    assert cli("results", "docs", "--check", "--root", str(root)).returncode == 0


def test_bad_input_to_the_commands(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    (root / "empty").mkdir()
    line = fails_in_one_line("results", "pack", "empty", "x", "--command", "c", cwd=root)
    assert "empty: no campaign here (no results.sqlite)" in line
    line = fails_in_one_line("results", "pack", "camp", "a b", "--command", "c", cwd=root)
    assert "'a b' cannot name packed results" in line
    line = fails_in_one_line("report", "camp", "--markdown", "x.md", cwd=root)
    assert "--markdown writes the tables of one packed campaign" in line
    (root / "docs" / "page.md").write_text("<!-- results:known -->\n")
    line = fails_in_one_line("results", "docs", cwd=root)
    assert "docs/page.md:1: <!-- results:known --> has no end" in line
    (root / "published" / "known" / "runs.csv").write_text("tool,instance,extra\nx,y,z\n")
    line = fails_in_one_line("report", "published/known", cwd=root)
    assert "runs.csv: not a packed campaign's runs (columns missing: mode, repetition," in line
    assert "unknown columns: extra" in line
    line = fails_in_one_line("results", "docs", "--root", str(root / "empty"))
    assert "not the top of a hugeheap checkout" in line


def test_packed_data_names_no_folder_of_the_machine() -> None:
    checkout = Path("/home/someone/hugeheap")
    text = ('{"library": "/home/someone/hugeheap/build/lib/libhugeheap.so", '
            '"other": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", '
            '"near": "/home/someone/hugeheap-old/x"}')
    assert inside_checkout(text, checkout) == (
        '{"library": "build/lib/libhugeheap.so", '
        '"other": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2", '
        '"near": "/home/someone/hugeheap-old/x"}')


# Two families' campaigns, CPU seconds per instance and mode (None: unsolved),
# then hugeheap's peak MiB (glibc's and the others': 100) and huge-page share.
# SAT: over glibc 2, 2, 1 on i0-i2 (mimalloc leaves i3 unsolved, so i3 stays
# out); glibc-thp is the best peer (1.25 over glibc, mimalloc 1.0).
SAT: dict[str, dict[str, float | None]] = {
    "system": {"i0": 10.0, "i1": 20.0, "i2": 40.0, "i3": 30.0},
    "glibc-thp": {"i0": 8.0, "i1": 16.0, "i2": 32.0, "i3": 30.0},
    "hugeheap": {"i0": 5.0, "i1": 10.0, "i2": 40.0, "i3": 15.0},
    "mimalloc": {"i0": 10.0, "i1": 20.0, "i2": 40.0, "i3": None}}
SAT_PEAK = {"i0": 200, "i1": 100, "i2": 100, "i3": 100}
SAT_HUGE = {"i0": 0.5, "i1": 0.7, "i2": 0.9, "i3": 0.8}
# The other family: glibc and hugeheap alone, no huge-page share recorded.
SMT = {"system": {"j0": 9.0, "j1": 4.0}, "hugeheap": {"j0": 3.0, "j1": 4.0}}


def family_campaign(directory: Path, suite: str, tool: str,
                    times: Mapping[str, Mapping[str, float | None]],
                    peak: dict[str, int] | None = None,
                    huge: dict[str, float] | None = None) -> Path:
    """A finished campaign of one tool, 3 repetitions whose median is the
    listed time (test_report's record, one run faster and one slower)."""
    return stored(directory, suite, [tool], list(times), [dataclasses.replace(
        record(mode, instance, rep, None if t is None else t * (1.0, 0.9, 1.2)[rep]), tool=tool,
        memory_peak=(peak or {}).get(instance, 100) * 2**20 if mode == "hugeheap" else 100 * 2**20,
        huge_share=(huge or {}).get(instance) if mode == "hugeheap" else None)
        for mode, by_instance in times.items() for instance, t in by_instance.items()
        for rep in range(3)])


def stored(directory: Path, suite: str, tools: list[str], modes: list[str],
           runs: list[RunRecord]) -> Path:
    """A finished campaign of runs in directory, the first mode its
    baseline, with a machine record (started on the 2(number of modes)th)."""
    directory.mkdir(parents=True)
    store = Store(directory / "results.sqlite")
    CampaignMeta(identity={}, suite_name=suite, baseline=modes[0], cpu_limit_s=100.0,
                 tools=tools, modes=modes).save(store)
    store.add_many(runs)
    store.close()
    (directory / "machine.json").write_text(json.dumps([{
        "hostname": "testhost", "kernel": "6.1", "cpu_model": "Test CPU", "cpu_count": 2,
        "memory_bytes": 2**30, "started": f"2026-11-2{len(modes)}T01:02:03+00:00",
        "allocators": {"hugeheap": {"like": "hugeheap", "version": "0.1.0 (abc1234)"}}}]))
    return directory


def families_checkout(tmp_path: Path) -> Path:
    """A checkout with the packed campaigns fam-sat and fam-smt and a README
    whose families block is still empty."""
    published = tmp_path / "published"
    pack(family_campaign(tmp_path / "runs" / "fam-sat", "real-sat", "minisat", SAT, SAT_PEAK,
                         SAT_HUGE), published, "fam-sat", "make fam-sat")
    pack(family_campaign(tmp_path / "runs" / "fam-smt", "real-smt-quick", "z3", SMT),
         published, "fam-smt", "make fam-smt")
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# hugeheap\n\n<!-- results:families fam-sat=SAT "
                                        "fam-smt -->\n<!-- /results:families -->\nAfter.\n")
    return tmp_path


def packed_in(root: Path) -> Campaigns:
    """A families block's campaigns: those packed in root's published/."""
    return lambda name: load(root / "published" / name)


def figure(text: str) -> float:
    return float(text.split()[0])


def interval(text: str) -> tuple[float, float]:
    low, high = text.split("[")[1].split("]")[0].split(", ")
    return float(low), float(high)


def test_the_families_table_on_known_data(tmp_path: Path) -> None:
    root = families_checkout(tmp_path)
    readme = root / "README.md"
    assert stale(root) == [readme]  # README.md is among the pages, and its block is empty
    assert refresh(root) == [readme] and stale(root) == []
    text = readme.read_text()
    assert text.startswith("# hugeheap\n\n<!-- results:families fam-sat=SAT fam-smt -->\n"
                           "| family | tool | speed over glibc [95% CI] | over the best peer "
                           "[95% CI] | peak over glibc | huge |\n")
    assert text.endswith("by `make results`: change the data, not the table.\n"
                         "<!-- /results:families -->\nAfter.\n")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and "family" not in line]
    assert [row[:2] for row in rows] == [["SAT", "minisat (3/4)"], ["real-smt", "z3 (2/2)"]]
    sat, smt = rows
    # hugeheap over glibc: geometric mean of 10/5, 20/10, 40/40.
    assert figure(sat[2]) == pytest.approx(4 ** (1 / 3), abs=5e-4)
    low, high = interval(sat[2])
    assert 1.0 <= low < figure(sat[2]) < high <= 2.0
    # The best peer is glibc-thp (1.25 over glibc; mimalloc 1.0): 8/5, 16/10, 32/40.
    assert sat[3].endswith("(glibc-thp)")
    assert figure(sat[3]) == pytest.approx((1.6 * 1.6 * 0.8) ** (1 / 3), abs=5e-4)
    assert 0.8 <= interval(sat[3])[0] < interval(sat[3])[1] <= 1.6
    # Peaks: 200/100, 100/100, 100/100 on i0-i2; huge: median of all four runs' medians.
    assert figure(sat[4]) == pytest.approx(2 ** (1 / 3), abs=5e-4) and sat[5] == "75%"
    assert figure(smt[2]) == pytest.approx(math.sqrt(9 / 3 * 4 / 4), abs=5e-4)
    assert smt[3:] == ["-", "1.000", "-"]  # no peer; no share recorded
    assert "- SAT: `published/fam-sat/`, started 2026-11-24 01:02 UTC, libhugeheap 0.1.0 " \
        "(abc1234); reproduce: `make fam-sat`" in text
    assert "- real-smt: `published/fam-smt/`, started 2026-11-22 01:02 UTC" in text
    assert "Machine: testhost: 2 CPUs (Test CPU), 1 GiB, Linux 6.1" in text
    # A figure typed over, or data changed without the table: both caught.
    readme.write_text(text.replace(sat[4], "1.000"))
    assert stale(root) == [readme]
    readme.write_text(text)
    runs = root / "published" / "fam-smt" / RUNS
    runs.write_text(runs.read_text().replace("z3,j0,hugeheap,0,ok,,unsat,,,20,,3.0,",
                                             "z3,j0,hugeheap,0,ok,,unsat,,,20,,9.0,"))
    assert stale(root) == [readme]


def test_the_families_pool_column(tmp_path: Path) -> None:
    """A campaign that ran the library from a pool (hugeheap-pool) gets its
    speed over glibc in a column of its own; a campaign without it, '-'."""
    root = families_checkout(tmp_path)
    pool = {"system": {"p0": 8.0, "p1": 6.0}, "hugeheap": {"p0": 4.0, "p1": 6.0},
            "hugeheap-pool": {"p0": 2.0, "p1": 3.0}, "mimalloc": {"p0": 8.0, "p1": 3.0}}
    pack(family_campaign(tmp_path / "runs" / "fam-pool", "real-hwmc", "bmc3", pool),
         root / "published", "fam-pool", "make fam-pool")

    lines = family_block(["fam-pool=HWMC", "fam-smt=SMT"], packed_in(root)).splitlines()
    assert lines[0] == ("| family | tool | speed over glibc [95% CI] | over the best peer [95% "
                        "CI] | from a pool, over glibc [95% CI] | peak over glibc |")
    hwmc, smt = ([c.strip() for c in line.strip("|").split("|")] for line in lines[2:4])
    # From the pool: 8/2, 6/3; hugeheap over the best peer (mimalloc): 4/8, 3/6 against 8/8, 6/6.
    assert figure(hwmc[4]) == pytest.approx(math.sqrt(4 * 2), abs=5e-4)
    assert hwmc[3].endswith("(mimalloc)") and figure(hwmc[3]) == pytest.approx(
        math.sqrt((8 / 4) / (8 / 8) * (6 / 6) / (6 / 3)), abs=5e-4)
    assert smt[4] == "-"
    assert "from a pool: the same for the mode `hugeheap-pool`" in "\n".join(lines)


def test_the_families_rows_follow_the_marker(tmp_path: Path) -> None:
    """In the order of the marker's campaigns, each with its label, else its
    suite's name."""
    root = families_checkout(tmp_path)
    asked = []

    def campaign(name: str) -> tuple[Packed, Analysis]:
        asked.append(name)
        return load(root / "published" / name)
    block = family_block(["fam-smt=SMT", "fam-sat"], campaign)
    assert asked == ["fam-smt", "fam-sat"]
    lines = block.splitlines()
    assert lines[2].startswith("| SMT | z3 (2/2) |") and lines[3].startswith("| real-sat |")


def test_a_family_per_tool(tmp_path: Path) -> None:
    """A campaign whose tools stand for different families (the paper-size
    suite's) names each tool's; its rows and its source line show them."""
    root = by_instance_checkout(tmp_path)

    block = family_block(["small=alpha:ASP,zeta:SAT"], packed_in(root))
    rows = [line for line in block.splitlines() if line.startswith("| ") and "family" not in line]
    assert [row.split(" | ")[:2] for row in rows] == [["| SAT", "zeta (2/2)"],
                                                       ["| ASP", "alpha (1/2)"]]
    assert "- SAT, ASP: `published/small/`" in block


def test_a_tool_left_out(tmp_path: Path) -> None:
    """TOOL:- leaves a tool's row out (another campaign measured it again)."""
    root = by_instance_checkout(tmp_path)

    block = family_block(["small=alpha:-,zeta:SAT"], packed_in(root))
    rows = [line for line in block.splitlines() if line.startswith("| ") and "family" not in line]
    assert [row.split(" | ")[:2] for row in rows] == [["| SAT", "zeta (2/2)"]]
    assert "- SAT: `published/small/`" in block


@pytest.mark.parametrize("word, problem", [
    ("small=zeta:-,alpha:-", "the word of the campaign 'small' leaves every tool out (-); "
     "leave the campaign out instead"),
    ("small=zeta:SAT", "the word of the campaign 'small' gives no family for its tool "
     "'alpha' (its tools: zeta, alpha)"),
    ("small=zeta:SAT,alpha:ASP,beta:MUS", "the word of the campaign 'small' names the tool "
     "'beta', which it has not (its tools: zeta, alpha)"),
    ("small=zeta:SAT,alpha", "'small=zeta:SAT,alpha': 'alpha' is not TOOL:FAMILY; name one "
     "family for the campaign, or one for each tool as in cadical:SAT,clasp:ASP"),
    ("small=zeta:SAT,zeta:ASP", "'small=zeta:SAT,zeta:ASP' gives the tool 'zeta' two families"),
])
def test_family_per_tool_mistakes_are_named(tmp_path: Path, word: str, problem: str) -> None:
    root = by_instance_checkout(tmp_path)
    (root / "README.md").write_text(f"<!-- results:families {word} -->\n"
                                    "<!-- /results:families -->\n")
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value) == f"README.md:1: <!-- results:families -->: {problem}"


def test_the_families_commands(tmp_path: Path) -> None:
    root = families_checkout(tmp_path)
    done = cli("results", "docs", "--check", "--root", str(root))
    assert done.returncode == 1 and f"differs from its data: {root / 'README.md'}" in done.stdout
    assert cli("results", "docs", cwd=root).returncode == 0
    assert cli("results", "docs", "--check", cwd=root).returncode == 0
    readme = root / "README.md"
    readme.write_text(readme.read_text().replace("fam-smt -->", "fam-smt real-asp -->"))
    line = fails_in_one_line("results", "docs", "--check", cwd=root)
    assert line.endswith("README.md:3: no packed campaign 'real-asp' (published/real-asp/"
                         "campaign.json is missing); pack one with `hugeheap results pack "
                         "CAMPAIGN_DIR real-asp`")
    line = fails_in_one_line("results", "pack", "runs/fam-smt", "families", "--command", "c",
                             cwd=root)
    assert "'families' names the docs' table of several campaigns" in line


@pytest.mark.parametrize("words, problem", [
    ("", "<!-- results:families --> names no campaign"),
    (" fam-sat fam-sat", "<!-- results:families -->: the campaign 'fam-sat' is named twice"),
    (" fam-sat=", "<!-- results:families -->: 'fam-sat=' gives no family after '='"),
    (" fam-sat ../x", "'../x' cannot name packed results"),
    (" fam-sat nothp", "the campaign 'nothp' (family real-mcc) has no mode 'system' (its "
     "modes: hugeheap-nothp, hugeheap); the families' table compares hugeheap ('hugeheap') "
     "with glibc ('system')"),
    (" glibc", "the campaign 'glibc' (family glibc) has no mode 'hugeheap' (its modes: "
     "system, mimalloc)"),
])
def test_family_mistakes_are_named(tmp_path: Path, words: str, problem: str) -> None:
    root = families_checkout(tmp_path)
    for name, suite, times in [("nothp", "real-mcc", {"hugeheap-nothp": {"k": 2.0},
                                                      "hugeheap": {"k": 1.0}}),
                               ("glibc", "glibc", {"system": {"k": 2.0},
                                                   "mimalloc": {"k": 1.0}})]:
        pack(family_campaign(tmp_path / "runs" / name, suite, "t", times),
             root / "published", name, "c")
    (root / "README.md").write_text(f"<!-- results:families{words} -->\n"
                                    "<!-- /results:families -->\n")
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value).startswith(f"README.md:1: {problem}")


# A campaign of two tools (in the campaign's order zeta, then alpha) on the
# instances b and a, three repetitions each, every run with its own CPU time
# and peak: the per-instance table's medians differ from any one run. Only
# hugeheap puts part of its heaps in huge pages, its share by repetition.
BY_MODES = ["system", "hugeheap", "mimalloc"]


def by_instance_run(tool: str, instance: str, mode: str, rep: int) -> RunRecord:
    """One run; alpha under mimalloc never finishes on b, and zeta's third
    repetition under hugeheap on a times out (with a peak no other run has,
    so that counting it would show)."""
    if (tool, instance, mode) == ("alpha", "b", "mimalloc") or \
            (tool, instance, mode, rep) == ("zeta", "a", "hugeheap", 2):
        return dataclasses.replace(record(mode, instance, rep, None), tool=tool,
                                   memory_peak=999 * 2**20)
    seconds = ({"zeta": 3.0, "alpha": 0.02}[tool] * {"a": 1, "b": 5}[instance] *
               {"system": 1.0, "hugeheap": 0.8, "mimalloc": 1.1}[mode] * (1.0, 0.9, 1.3)[rep])
    mib = {"system": 10, "hugeheap": 14, "mimalloc": 12}[mode] * {"a": 1, "b": 3}[instance]
    return dataclasses.replace(record(mode, instance, rep, seconds), tool=tool,
                               memory_peak=(mib + 7 * rep * {"zeta": 1, "alpha": 2}[tool]) * 2**20,
                               huge_share=(0.2, 0.6, 0.5)[rep] if mode == "hugeheap" else
                               {"system": 0.0, "mimalloc": None}[mode])


BY_RUNS = [by_instance_run(tool, instance, mode, rep) for tool in ("zeta", "alpha")
           for instance in ("b", "a") for mode in BY_MODES for rep in range(3)]


def by_instance_checkout(tmp_path: Path, runs: list[RunRecord] = BY_RUNS) -> Path:
    """A checkout with the packed campaign `small` (runs) and a page with
    its per-instance block, still empty."""
    pack(stored(tmp_path / "runs" / "small", "small-suite", ["zeta", "alpha"], BY_MODES,
                runs), tmp_path / "published", "small", "make small")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("Before.\n<!-- results:small by-instance -->\n"
                                               "<!-- /results:small -->\nAfter.\n")
    return tmp_path


def medians(tool: str, instance: str, mode: str) -> tuple[float, float] | None:
    """The median CPU seconds and peak MiB of BY_RUNS's runs that ended ok."""
    ok = [r for r in BY_RUNS if (r.tool, r.instance, r.mode) == (tool, instance, mode) and
          r.status == "ok"]
    if not ok:
        return None
    return (statistics.median(r.cputime or 0.0 for r in ok),
            statistics.median((r.memory_peak or 0) / 2**20 for r in ok))


def expected_row(tool: str, instance: str) -> list[str]:
    base = medians(tool, instance, "system")
    assert base is not None
    others = [medians(tool, instance, mode) for mode in BY_MODES[1:]]
    ok = [r for r in BY_RUNS if (r.tool, r.instance, r.mode, r.status) ==
          (tool, instance, "hugeheap", "ok")]
    huge = statistics.median(r.huge_share or 0.0 for r in ok)
    return [f"{tool}, {instance}", f"{base[0]:.3f}, {base[1]:.1f}",
            ", ".join("-" if m is None else f"{base[0] / m[0]:.2f}" for m in others),
            ", ".join("-" if m is None else f"{m[1] / base[1]:.2f}" for m in others),
            f"{huge:.0%}"]


def test_instances_from_the_smallest_heap_up(tmp_path: Path) -> None:
    # Named the other way round, the instance of the smaller heaps (a's
    # runs, now called b) comes first all the same, for both tools.
    renamed = {"a": "b", "b": "a"}
    root = by_instance_checkout(tmp_path, [dataclasses.replace(r, instance=renamed[r.instance])
                                           for r in BY_RUNS])
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().splitlines()
    assert [line.split("|")[1].strip() for line in lines[4:8]] == \
        ["zeta, b", "zeta, a", "alpha, b", "alpha, a"]
    assert lines[4].split("|")[2].strip() == "3.000, 17.0"


def test_no_huge_column_where_no_heap_was_in_huge_pages(tmp_path: Path) -> None:
    root = by_instance_checkout(tmp_path, [dataclasses.replace(r, huge_share=0.0)
                                           for r in BY_RUNS])
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().splitlines()
    assert lines[2] == ("| tool, instance | system: CPU s, peak MiB | speed: hugeheap, mimalloc "
                        "| peak / system: hugeheap, mimalloc |")
    assert all(line.count("|") == 5 for line in lines[3:8])
    assert "huge" not in lines[9]


def test_the_table_per_instance(tmp_path: Path) -> None:
    root = by_instance_checkout(tmp_path)
    page = root / "docs" / "page.md"
    assert refresh(root) == [page] and stale(root) == []
    text = page.read_text()
    lines = text.splitlines()
    assert lines[:4] == ["Before.", "<!-- results:small by-instance -->",
                         "| tool, instance | system: CPU s, peak MiB | speed: hugeheap, mimalloc "
                         "| peak / system: hugeheap, mimalloc | huge: hugeheap |",
                         "|:---|---:|---:|---:|---:|"]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[4:8]]
    assert rows == [expected_row(tool, instance) for tool in ("zeta", "alpha")
                    for instance in ("a", "b")]
    # zeta on a under hugeheap: the two runs that finished, 2.4 and 2.16 s, 14 and 21 MiB
    # (the timeout's 999 MiB left out), against system's 3 s and 17 MiB.
    # Its huge share: the median of the two, 20% and 60%; system's 0% and
    # mimalloc's unmeasured share put no column of theirs.
    assert rows[0] == ["zeta, a", "3.000, 17.0", f"{3 / 2.28:.2f}, {3 / 3.3:.2f}",
                       f"{17.5 / 17:.2f}, {19 / 17:.2f}", "40%"]
    # alpha under mimalloc never finished on b: a dash, and the legend says why.
    assert rows[3][2].endswith(", -") and rows[3][3].endswith(", -")
    assert lines[8] == "" and lines[9].startswith("Per tool and instance, medians over the "
                                                  "repetitions that finished correctly")
    assert "-: the mode, or system, has no run on the instance that finished correctly." \
        in lines[9]
    assert "CPU time (user + system)" in lines[9] and "the peak of the run's cgroup" in lines[9]
    assert "huge: the share of the heap in huge pages" in lines[9]
    assert lines[11].startswith("Campaign `small` (suite `small-suite`, 36 runs, 3 "
                                "repetitions of each), started 2026-11-23 01:02 UTC. "
                                "Machine: testhost: 2 CPUs (Test CPU)")
    assert lines[11].endswith("Reproduce: `make small`. Data: `published/small/`; this table "
                              "is made from it by `make results`: change the data, not the "
                              "table.")
    assert lines[12:] == ["<!-- /results:small -->", "After."]
    # A figure typed over is caught.
    page.write_text(text.replace(rows[1][1], "1.000, 1.0"))
    assert stale(root) == [page]


def test_a_mode_holding_pool_pages_shows_its_peak_as_bounds(tmp_path: Path) -> None:
    """Runs that record the least their peak can be (pool pages: hugeheap
    here) show least-most over the baseline, and the legend says what that
    is; a campaign packed before the column existed still reads."""
    runs = [dataclasses.replace(r, memory_peak_lower=(r.memory_peak or 0) - 2 * 2**20)
            if r.mode == "hugeheap" else r for r in BY_RUNS]
    root = by_instance_checkout(tmp_path, runs)
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().splitlines()
    row = [c.strip() for c in lines[4].strip("|").split("|")]
    # zeta on a: hugeheap's peaks 14 and 21 MiB (median 17.5), their least 2 MiB
    # below each (15.5), over system's 17 MiB; mimalloc's a figure alone.
    assert row[0] == "zeta, a" and row[3] == f"{15.5 / 17:.2f}-{17.5 / 17:.2f}, {19 / 17:.2f}"
    assert "least-most: its peak is at least the most memory and pool pages seen" in lines[9]
    packed = root / "published" / "small" / "runs.csv"
    header, *rest = packed.read_text().splitlines()
    at = header.split(",").index("memory_peak_lower")
    packed.write_text("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != at)
                                for line in [header, *rest]) + "\n")
    refresh(root)
    lines = (root / "docs" / "page.md").read_text().splitlines()
    assert [c.strip() for c in lines[4].strip("|").split("|")][3] == \
        f"{17.5 / 17:.2f}, {19 / 17:.2f}"
    assert "least-most" not in lines[9]


@pytest.mark.parametrize("words", ["more", "by-instance more", "by_instance", "families"])
def test_a_campaign_block_takes_a_known_word(tmp_path: Path, words: str) -> None:
    root = checkout(tmp_path)
    (root / "docs" / "page.md").write_text(f"<!-- results:known {words} -->\n"
                                           "<!-- /results:known -->\n")
    with pytest.raises(HarnessError) as caught:
        stale(root)
    assert str(caught.value) == (
        f"docs/page.md:1: <!-- results:known {words} -->: unknown words; a block is "
        "<!-- results:NAME --> (a campaign's tables), <!-- results:NAME by-instance --> (its "
        "table per instance), <!-- results:NAME figures --> (its tools' own figures), "
        "<!-- results:NAME ratio A/B:FIGURE ... --> (ratios between its "
        "tools) or <!-- results:families NAME NAME ... --> (several campaigns)")
