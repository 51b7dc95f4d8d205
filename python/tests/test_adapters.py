import shutil
import subprocess
from pathlib import Path

import pytest

from hugeheap.campaign.answers.adapters import Answer, check_adapter_name, classify
from hugeheap.campaign.answers.checks import check_sat_answer, read_cnf
from hugeheap.errors import HarnessError

CNF = "c tiny\np cnf 3 3\n1 -2 0\n2 3 0\n-1 -3 0\n"


def test_sat_competition_output() -> None:
    answer = classify("sat", 10, "c comment\ns SATISFIABLE\nv 1 2 -3\nv 0\n")
    assert answer.verdict == "sat" and answer.model == [1, 2, -3]
    assert classify("sat", 20, "s UNSATISFIABLE\n").verdict == "unsat"
    assert classify("sat", 0, "s UNKNOWN\n").verdict == "unknown"


def test_sat_exit_codes_without_status_line() -> None:
    assert classify("sat", 10, "").verdict == "sat"
    assert classify("sat", 20, "").verdict == "unsat"
    assert classify("sat", 1, "").verdict == "unknown"


def test_smtlib_and_exitcode_and_regex() -> None:
    assert classify("smtlib", 0, "sat\n((x 3))\n").verdict == "sat"
    assert classify("smtlib", 0, "unsat\n").verdict == "unsat"
    assert classify("exitcode", 0, "").verdict == "done"
    assert classify("exitcode", 3, "").verdict == "error"
    assert classify("regex:^RESULT: (\\w+)", 0, "x\nRESULT: proved\n").verdict == "proved"


def test_adapter_names_are_checked() -> None:
    check_adapter_name("sat")
    check_adapter_name("regex:answer=(\\w+)")
    with pytest.raises(HarnessError, match="unknown adapter"):
        check_adapter_name("satisfiability")
    with pytest.raises(HarnessError, match="group"):
        check_adapter_name("regex:answer")
    with pytest.raises(HarnessError, match="not a regular expression"):
        check_adapter_name("regex:(")


def test_models_are_checked_against_the_formula(tmp_path: Path) -> None:
    cnf = tmp_path / "f.cnf"
    cnf.write_text(CNF)
    good = check_sat_answer(Answer("sat", model=[1, 2, -3]), cnf)
    assert good.verdict == "sat" and good.detail == "model checked"
    bad = check_sat_answer(Answer("sat", model=[1, -2, 3]), cnf)
    assert bad.verdict == "wrong" and "clause 3" in (bad.detail or "")
    contradictory = check_sat_answer(Answer("sat", model=[1, -1, 2]), cnf)
    assert contradictory.verdict == "wrong"
    assert check_sat_answer(Answer("unsat"), cnf).verdict == "unsat"
    assert check_sat_answer(Answer("sat"), cnf).detail == "no model printed: not checked"


def test_bad_cnf_is_a_clear_error(tmp_path: Path) -> None:
    cnf = tmp_path / "bad.cnf"
    cnf.write_text("p cnf 2 1\n1 x 0\n")
    with pytest.raises(HarnessError, match="bad.cnf:2: 'x' is not a literal"):
        read_cnf(cnf)
    cnf.write_text("1 2 0\n")
    with pytest.raises(HarnessError, match="no 'p cnf' header"):
        read_cnf(cnf)


def test_a_real_solver_model_checks(tmp_path: Path) -> None:
    cadical = shutil.which("cadical")
    if cadical is None:
        pytest.skip("cadical is not installed (Debian package cadical)")
    cnf = tmp_path / "f.cnf"
    cnf.write_text(CNF)
    run = subprocess.run([cadical, str(cnf)], capture_output=True, text=True)
    answer = check_sat_answer(classify("sat", run.returncode, run.stdout), cnf)
    assert answer.verdict == "sat" and answer.detail == "model checked"
