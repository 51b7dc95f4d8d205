"""`hugeheap compare`: one command under several modes, paired and
interleaved, with the report's statistics over repetitions; kept as a
campaign with --out (resumable, readable by `hugeheap report`), else left
nowhere."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from campaign_helpers import make_campaign, rows
from hugeheap_cli import cli

from hugeheap.campaign.folder import CampaignMeta
from hugeheap.campaign.store import RunRecord, Store
from hugeheap.measure.allocators import REPO_ROOT, hugeheap_library
from hugeheap.report.compare import compare

GENERATOR = REPO_ROOT / "build" / "bin" / "hh-randksat"


def row_of(table: str, mode: str) -> str:
    """The table's line of a mode."""
    return next(line for line in table.splitlines()
                if re.match(rf"^\W*{re.escape(mode)}\s*\W", line))


def scratch_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("hugeheap-compare-*"))


def test_compare_a_command_and_keep_nothing(tmp_path: Path) -> None:
    make_campaign(tmp_path, {"a": "sat"})
    before = scratch_folders()
    # Program and instance relative to where compare starts, not to the runs.
    done = cli("compare", "-n", "2", "--modes", "system,hugeheap", "--adapter", "sat", "--",
               "./tool.sh", "inst/a.cnf", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert "./tool.sh inst/a.cnf: 2 repetitions" in table and "baseline system" in table
    for mode in ("system", "hugeheap"):
        line = row_of(table, mode)
        assert "2/2" in line and "sat" in line, line
    assert "speed-up" in table and "[" in table  # the interval
    assert scratch_folders() == before


def test_compare_kept_resumes_and_reports(tmp_path: Path) -> None:
    make_campaign(tmp_path, {"a": "unsat"})
    out = tmp_path / "cmp"
    command = ["compare", "-n", "2", "--modes", "system,hugeheap", "--adapter", "sat",
               "--out", str(out), "--", str(tmp_path / "tool.sh"),
               str(tmp_path / "inst" / "a.cnf")]
    assert cli(*command).returncode == 0
    stored = rows(out)
    assert [(r[2], r[3], r[5]) for r in stored] == [
        ("hugeheap", 0, "unsat"), ("hugeheap", 1, "unsat"), ("system", 0, "unsat"),
        ("system", 1, "unsat")]
    again = cli(*command)
    assert again.returncode == 0 and "4 of 4 runs finished (0 now)" in again.stderr
    assert rows(out) == stored
    assert cli("report", str(out)).returncode == 0


def test_compare_a_real_solver_under_every_mode_here() -> None:
    if shutil.which("minisat") is None or not GENERATOR.exists() or hugeheap_library() is None:
        pytest.skip("needs minisat and the build (make)")
    with tempfile.TemporaryDirectory() as tmp:
        instance = Path(tmp) / "r.cnf"
        instance.write_text(subprocess.run(
            [str(GENERATOR), "120", "400", "3", "1"], capture_output=True, text=True,
            check=True).stdout)
        done = cli("compare", "-n", "1", "--", "minisat", instance.name, cwd=tmp)
    assert done.returncode == 0, done.stderr
    # The adapter is chosen by the program's name (sat), every mode answers.
    for mode in ("system", "hugeheap"):
        line = row_of(done.stdout, mode)
        assert "1/1" in line and "sat" in line, line
    assert "hugeheap-nothp" not in done.stdout


@pytest.mark.parametrize("args,message", [
    (["--modes", "system", "--", "true"], "--modes system: name 2 modes or more"),
    (["--modes", "system,magic", "--", "true"], "unknown allocator mode 'magic'"),
    (["-n", "0", "--", "true"], "-n 0: must be at least 1"),
    (["--", "no-such-command-xyz"], "'no-such-command-xyz' is not installed"),
    (["--adapter", "satcomp", "--", "true"], "unknown adapter 'satcomp'"),
    (["--cores", "999", "--", "true"], "--cores 999: not among the cores"),
])
def test_compare_input_errors_are_one_line(args: list[str], message: str) -> None:
    done = cli("compare", *args)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr


def record(mode: str, repetition: int, cputime: float, peak: int) -> RunRecord:
    return RunRecord(
        tool="solver", instance="x.cnf", mode=mode, repetition=repetition, status="ok",
        termination_reason=None, verdict="unsat", verdict_detail=None, answer_value=None,
        exit_code=20, signal=None, cputime=cputime, cputime_user=cputime * 0.9,
        cputime_system=cputime * 0.1, walltime=cputime, memory_peak=peak, huge_share=None,
        tlb_misses=None, tlb_reason="not supported", reliable=True, warnings="[]", cores="0",
        start_time="2026-11-23T00:00:00+00:00", output=None)


def test_speed_up_is_paired_by_repetition(tmp_path: Path) -> None:
    """Repetition r of each mode ran back to back: the ratio is taken pair by
    pair (a slow repetition slows both), then their geometric mean."""
    tmp_path.mkdir(exist_ok=True)
    with Store(tmp_path / "results.sqlite") as store:
        CampaignMeta(identity={"tools": {"solver": [["solver", "x.cnf"], "sat", None, None]},
                               "instances": ["x.cnf"]},
                     suite_name="compare-solver", baseline="system", cpu_limit_s=60,
                     tools=["solver"], modes=["system", "fast"]).save(store)
        base = [10.0, 20.0, 40.0]  # the machine drifted between repetitions
        store.add_many([record("system", r, t, 100) for r, t in enumerate(base)] +
                       [record("fast", r, t / 2, 150) for r, t in enumerate(base)])
    found = compare(tmp_path)
    fast = next(m for m in found.modes if m.mode == "fast")
    assert fast.speedup is not None and fast.speedup.geomean == pytest.approx(2.0)
    assert (fast.speedup.low, fast.speedup.high) == pytest.approx((2.0, 2.0))
    assert fast.cputime == 10.0 and fast.memory_ratio == pytest.approx(1.5)
    assert found.command == "solver x.cnf" and found.repetitions == 3
