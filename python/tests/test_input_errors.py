"""Bad input to the `hugeheap` command is one line on stderr naming the
problem and exit code 2, never a traceback; and no folder is made for an
output outside the campaign folder."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from campaign_helpers import make_campaign
from hugeheap_cli import CLI
from test_report import make_campaign as stored_campaign


def fails_in_one_line(*args: str, cwd: Path | None = None) -> str:
    """Runs hugeheap with args; asserts exit code 2 and one line on stderr,
    which it returns."""
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


def test_a_suite_file_that_is_not_utf8(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    suite.write_bytes(suite.read_bytes().replace(b"[limits]", b"# caf\xe9\n[limits]"))
    line = fails_in_one_line("bench", str(suite), "--out", str(tmp_path / "camp"))
    assert "suite.toml:" in line and "not UTF-8" in line and "0xe9" in line
    assert not (tmp_path / "camp").exists()


def test_bench_out_naming_a_file(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    taken = tmp_path / "taken"
    taken.write_text("a file of mine\n")
    line = fails_in_one_line("bench", str(suite), "--out", str(taken))
    assert str(taken) in line and "is a file" in line
    assert taken.read_text() == "a file of mine\n"


def test_a_suite_tool_that_is_not_executable(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    (tmp_path / "tool.sh").chmod(0o644)
    line = fails_in_one_line("bench", str(suite), "--out", str(tmp_path / "camp"))
    assert "'./tool.sh' is not executable" in line and "chmod +x" in line
    assert "apt-get" not in line and "not installed" not in line


def test_report_benchexec_naming_a_file(tmp_path: Path) -> None:
    campaign = stored_campaign(tmp_path / "camp")
    taken = tmp_path / "taken.xml"
    taken.write_text("mine\n")
    line = fails_in_one_line("report", str(campaign), "--benchexec", str(taken))
    assert str(taken) in line and "is a file" in line
    assert taken.read_text() == "mine\n"


@pytest.mark.parametrize("option", ["--html", "--csv"])
def test_report_files_are_not_given_folders(tmp_path: Path, option: str) -> None:
    campaign = stored_campaign(tmp_path / "camp")
    line = fails_in_one_line("report", str(campaign), option, "a/b/c.out", cwd=tmp_path)
    assert "a/b/c.out" in line and "there is no folder a/b" in line
    assert not (tmp_path / "a").exists()
    (tmp_path / "a").mkdir()
    line = fails_in_one_line("report", str(campaign), option, "a", cwd=tmp_path)
    assert "it is a folder" in line


def test_report_benchexec_makes_only_its_own_folder(tmp_path: Path) -> None:
    campaign = stored_campaign(tmp_path / "camp")
    line = fails_in_one_line("report", str(campaign), "--benchexec", "x/y", cwd=tmp_path)
    assert "there is no folder x" in line and not (tmp_path / "x").exists()
    done = subprocess.run([*CLI, "report", str(campaign), "--benchexec", "x"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "x").glob("*.results.xml"))


@pytest.mark.parametrize("damage", [b"[{\"hostname\": \"cut off", b"\xff\xfe", b"{}"])
def test_a_damaged_machine_record(tmp_path: Path, damage: bytes) -> None:
    campaign = stored_campaign(tmp_path / "camp")
    (campaign / "machine.json").write_bytes(damage)
    line = fails_in_one_line("report", str(campaign))
    assert "machine.json" in line and ("not a campaign's machine record" in line or
                                       "cannot read it" in line)


def test_a_damaged_machine_record_stops_bench_before_any_run(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    out = tmp_path / "camp"
    out.mkdir()
    (out / "machine.json").write_text(json.dumps({"not": "a list"}))
    line = fails_in_one_line("bench", str(suite), "--out", str(out))
    assert "machine.json: not a campaign's machine record (not a list of sessions)" in line
    assert not (out / "outputs").exists()


def test_run_env_that_is_no_assignment() -> None:
    line = fails_in_one_line("run", "--env", "NOEQUALS", "--", "true")
    assert line == ("hugeheap: --env NOEQUALS: not NAME=VALUE (example: --env "
                    "MALLOC_ARENA_MAX=2)")
