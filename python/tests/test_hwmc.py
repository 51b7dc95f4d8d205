"""Hardware model checking: the designs of suites/paper/gen/aiger.py, whose
shortest counterexample is in a frame known by construction, checked by the
real Berkeley ABC (bmc3 finds the shortest, pdr proves the safe designs),
the `abc` adapter on its output, and a campaign in which one mode's answer
differs from the others' and is flagged."""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from campaign_helpers import bench, rows
from hugeheap_cli import cli

from hugeheap.campaign.answers.adapters import classify
from hugeheap.campaign.answers.verdicts import judge
from hugeheap.measure.allocators import REPO_ROOT

GEN = REPO_ROOT / "suites" / "paper" / "gen" / "aiger.py"


def need_abc() -> str:
    found = shutil.which("berkeley-abc")
    if found is None:
        pytest.skip("berkeley-abc is not installed (Debian package berkeley-abc)")
    return found


def design(tmp_path: Path, *words: str) -> Path:
    target = tmp_path / ("-".join(words) + ".aig")
    with open(target, "wb") as out:
        subprocess.run([sys.executable, GEN, *words], stdout=out, check=True)
    return target


def abc(design: Path, command: str) -> tuple[int, str]:
    done = subprocess.run([need_abc(), "-c", f"read {design}; {command}"], capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


# (family and sizes, the frame of the shortest counterexample)
KNOWN = [(("counter", "3", "4", "6"), 6), (("shift", "3", "5", "7"), 7),
         (("fifo", "4", "3", "9"), 9), (("fifo", "2", "2", "1"), 1), (("arbiter", "4", "5"), 5)]


@pytest.mark.parametrize(("words", "depth"), KNOWN, ids=[" ".join(w) for w, _ in KNOWN])
def test_bmc_finds_the_counterexample_in_its_frame(tmp_path: Path, words: tuple[str, ...],
                                                   depth: int) -> None:
    made = design(tmp_path, *words)
    answer = classify("abc", *abc(made, "bmc3 -F 20"))
    assert (answer.verdict, answer.value) == ("cex", str(depth))
    # One frame short of it, there is none.
    answer = classify("abc", *abc(made, f"bmc3 -F {depth}"))
    assert (answer.verdict, answer.value) == ("bounded", str(depth))
    # PDR finds one too, in that frame or later.
    answer = classify("abc", *abc(made, "pdr"))
    assert answer.verdict == "cex" and int(answer.value or "-1") >= depth


@pytest.mark.parametrize("words", [("counter", "3", "4", "safe"), ("arbiter", "8", "safe")])
def test_safe_designs_are_proved(tmp_path: Path, words: tuple[str, ...]) -> None:
    made = design(tmp_path, *words)
    assert classify("abc", *abc(made, "pdr")).verdict == "proved"
    answer = classify("abc", *abc(made, "bmc3 -F 10"))
    # bmc3 sees every reachable state of the small arbiter: a proof too.
    assert answer.verdict in ("bounded", "proved") and answer.value in ("10", None)


def test_bad_sizes_are_one_line_errors(tmp_path: Path) -> None:
    for words, said in ((["fifo", "6", "4", "3"], "ENTRIES 6 is not a power of two"),
                        (["counter", "2", "3", "9"], "a counter of 3 bits cannot show 9"),
                        (["counter", "5", "3", "2"], "there are only 4 odd steps"),
                        (["shift", "4", "8", "2"], "DEPTH 2 is less than the 4 stages"),
                        (["shift", "4", "8", "safe"], "DEPTH 'safe' is not a whole number"),
                        (["ring", "4"], "usage: aiger.py")):
        done = subprocess.run([sys.executable, GEN, *words], capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and not done.stdout


def test_what_abc_says_when_it_cannot_answer(tmp_path: Path) -> None:
    missing = tmp_path / "missing.aig"
    answer = classify("abc", *abc(missing, "bmc3 -F 10"))
    assert answer.verdict == "error" and "missing.aig" in (answer.detail or "")
    # ABC's generic reader knows no .gz (read_aiger reads it).
    zipped = tmp_path / "c.aig.gz"
    zipped.write_bytes(gzip.compress(design(tmp_path, "counter", "2", "3", "4").read_bytes()))
    assert classify("abc", *abc(zipped, "bmc3 -F 10")).verdict == "error"
    # Its own limits stop it short of the frames asked for: no answer.
    slow = design(tmp_path, "arbiter", "64", "safe")
    answer = classify("abc", *abc(slow, "bmc3 -F 100 -C 10"))
    assert answer.verdict == "unknown" and "conf limit" in (answer.detail or "")
    assert classify("abc", 0, "Abc_NtkDarBmc3(): Counter-example verification has FAILED.\n"
                    ).verdict == "wrong"


def test_model_checkers_must_agree() -> None:
    from test_paper_report import record
    same = [record("bmc3", "system", "cex", "7"), record("bmc3", "hugeheap", "cex", "7"),
            record("pdr", "system", "cex", "9"), record("pdr", "hugeheap", "cex", "9")]
    assert judge(same) == []  # each tool agrees with itself; PDR's may be longer
    frames = [record("bmc3", "system", "cex", "7"), record("bmc3", "hugeheap", "cex", "8")]
    [found] = judge(frames)
    assert found.tool == "bmc3" and {r.verdict for r in frames} == {"wrong"}
    # Between tools: a proof against a counterexample, or none in 10 frames
    # against one in frame 7.
    for other in (record("pdr", "system", "proved"), record("bmc2", "system", "bounded", "10")):
        runs = [record("bmc3", "system", "cex", "7"), other]
        [found] = judge(runs)
        assert found.tool is None and {r.verdict for r in runs} == {"wrong"}
    fewer = [record("bmc3", "system", "cex", "7"), record("bmc2", "system", "bounded", "7")]
    assert judge(fewer) == []


CAMPAIGN = """
[campaign]
modes = ["system", "hugeheap"]

[limits]
cpu_time = "60s"

[tools.bmc3]
command = "berkeley-abc -c 'read {instance}; bmc3 -F 20'"
adapter = "abc"

# Asks for fewer frames under hugeheap: its answer differs from the system's.
[tools.unsteady]
command = "./unsteady.sh {instance}"
adapter = "abc"
instances = ["fifo*"]

[[instances.generate]]
name = "fifo-{seed}.aig"
command = "GEN fifo 4 3 {seed}"
seeds = [5]

[[instances.generate]]
name = "arbiter-safe.aig"
command = "GEN arbiter 4 safe"
"""


def test_a_campaign_flags_a_mode_that_answers_otherwise(tmp_path: Path) -> None:
    need_abc()
    if not (REPO_ROOT / "build" / "lib" / "libhugeheap.so").exists():
        pytest.skip("libhugeheap.so is not built (make)")
    (tmp_path / "suite.toml").write_text(CAMPAIGN.replace("GEN", str(GEN)))
    unsteady = tmp_path / "unsteady.sh"
    unsteady.write_text('#!/bin/sh\ncase "$LD_PRELOAD" in *hugeheap*) frames=3;; '
                        '*) frames=20;; esac\n'
                        'exec berkeley-abc -c "read $1; bmc3 -F $frames"\n')
    unsteady.chmod(0o755)
    out = tmp_path / "camp"
    done = bench(tmp_path / "suite.toml", out)
    assert done.returncode == 1, done.stderr
    [said] = [line for line in done.stderr.splitlines() if line.startswith("WRONG ANSWERS")]
    assert said.startswith("WRONG ANSWERS: fifo-5.aig: 1 run(s) say ")
    assert "cex 5 (unsteady/system#0)" in said and "bounded 3 (unsteady/hugeheap#0)" in said
    assert said.endswith("the modes of one tool must agree: all of them are marked wrong")
    # The store keeps what each run said; the report judges them again.
    answers = {(r[0], r[1], r[2]): r[5] for r in rows(out)}
    assert answers == {
        ("bmc3", "fifo-5.aig", "system"): "cex", ("bmc3", "fifo-5.aig", "hugeheap"): "cex",
        ("unsteady", "fifo-5.aig", "system"): "cex",
        ("unsteady", "fifo-5.aig", "hugeheap"): "bounded",
        ("bmc3", "arbiter-safe.aig", "system"): "proved",
        ("bmc3", "arbiter-safe.aig", "hugeheap"): "proved"}
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "WRONG ANSWERS: fifo-5.aig" in report.stderr
