"""Published figures are data: a finished campaign packed into published/NAME
reads back as the figures its folder gives; every generated table of the
docs is what its data makes (a figure typed over, or data changed without
`make results`, fails here); the markers' mistakes are named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hugeheap_cli import cli
from test_input_errors import fails_in_one_line
from test_report import make_campaign as stored_campaign

from hugeheap.errors import HarnessError
from hugeheap.report.analysis import analyse
from hugeheap.report.blocks import refresh, rewrite, stale
from hugeheap.report.packed import RUNS, inside_checkout, load, pack

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


def checkout(tmp_path: Path) -> Path:
    """A checkout with the packed campaign `known` and a page with its block."""
    pack(stored_campaign(tmp_path / "camp"), tmp_path / "published", "known", "make known")
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text("# Page\n\nBefore.\n\n<!-- results:known -->\n<!-- /results:known -->\n"
                    "\nAfter.\n")
    return tmp_path


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
