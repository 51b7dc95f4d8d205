"""The adapters of the paper's families on real output of the real tools:
tiny instances made by the suites' own generators (suites/paper/gen), the
tools run on them, their output classified and checked. A test whose tool is
not installed skips and says which package brings it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hugeheap.campaign.answers.adapters import Answer, classify
from hugeheap.campaign.answers.checks import check, check_maxsat_answer
from hugeheap.measure.allocators import REPO_ROOT

GEN = REPO_ROOT / "suites" / "paper" / "gen"
VENV_BIN = Path(sys.executable).parent


def need(program: str, package: str) -> str:
    """The program's path, or a skip naming the package that installs it."""
    found = shutil.which(program) or shutil.which(program, path=str(VENV_BIN))
    if found is None:
        pytest.skip(f"{program} is not installed ({package})")
    return found


def generate(tmp_path: Path, name: str, *argv: str) -> Path:
    target = tmp_path / name
    with open(target, "wb") as out:
        subprocess.run([sys.executable, *argv], stdout=out, check=True, cwd=GEN)
    return target


def run(*argv: str | Path, cwd: Path | None = None) -> tuple[int, str]:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120,
                          cwd=cwd)
    return done.returncode, done.stdout + done.stderr


def test_clasp_satisfiable_unsatisfiable_and_optimum(tmp_path: Path) -> None:
    need("gringo", "Debian package gringo")
    clasp = need("clasp", "Debian package clasp")
    colouring = generate(tmp_path, "c.aspif", "asp.py", "colouring", "30", "50", "3", "1")
    code, output = run(clasp, "-q", colouring)
    assert (code, classify("asp", code, output).verdict) == (10, "sat")
    optimum = generate(tmp_path, "o.aspif", "asp.py", "mincolouring", "30", "50", "3", "1")
    code, output = run(clasp, "-q", optimum)
    answer = classify("asp", code, output)
    assert code == 30 and answer.verdict == "optimum" and answer.value == "3"
    # Without the status lines the exit codes still say it; an optimum without
    # its cost cannot be compared with others, so it answers nothing.
    assert classify("asp", 10, "").verdict == "sat"
    assert classify("asp", 20, "").verdict == "unsat"
    assert classify("asp", 30, "").verdict == "unknown"
    unsat = tmp_path / "u.aspif"
    with open(unsat, "wb") as out:
        subprocess.run(["gringo"], input=b"a :- not a.\n", stdout=out, check=True)
    code, output = run(clasp, unsat)
    assert (code, classify("asp", code, output).verdict) == (20, "unsat")
    # Interrupted before any answer: clasp's exit code 1 says so.
    assert classify("asp", 1, "").detail == "interrupted (exit code 1)"


def test_rc2_optimum_and_its_cost_checked(tmp_path: Path) -> None:
    rc2 = need("rc2.py", "PyPI package python-sat, in the paper extra of python/pyproject.toml")
    wcnf = generate(tmp_path, "m.wcnf", "maxsat.py", "2", "12", "2", "1")
    code, output = run(rc2, "-vv", wcnf)
    answer = classify("maxsat", code, output)
    assert answer.verdict == "optimum" and answer.model and answer.value is not None
    checked = check("maxsat", answer, wcnf, None)
    assert checked.verdict == "optimum" and checked.detail == f"model checked: cost {answer.value}"
    # A claimed cost the model does not have, and a model that breaks a hard clause.
    lying = Answer("optimum", model=answer.model, value=str(int(answer.value) + 1))
    assert check_maxsat_answer(lying, wcnf).verdict == "wrong"
    header, first_hard = wcnf.read_text().splitlines()[:2]
    assert first_hard.split()[0] == header.split()[4]  # weighs top: hard
    clause = [int(word) for word in first_hard.split()[1:-1]]
    model = [lit for lit in answer.model if abs(lit) not in {abs(c) for c in clause}]
    model += [-lit for lit in clause]
    result = check_maxsat_answer(Answer("optimum", model=model, value=answer.value), wcnf)
    assert result.verdict == "wrong" and "hard clause" in (result.detail or "")


def test_maxsat_check_reads_the_evaluations_json_header(tmp_path: Path) -> None:
    # MaxSAT Evaluation files open with their statistics as JSON in comment
    # lines, `c{` among them, with no space after the c.
    wcnf = tmp_path / "mse.wcnf"
    wcnf.write_text('c Standarized MaxSat Instance\nc{\nc "nvars": 2,\nc}\n'
                    "p wcnf 2 3 10\n10 1 2 0\n3 -1 0\n4 -2 0\n")
    checked = check_maxsat_answer(Answer("optimum", model=[1, -2], value="3"), wcnf)
    assert (checked.verdict, checked.detail) == ("optimum", "model checked: cost 3")


def test_rc2_on_a_plain_cnf_is_unweighted_maxsat(tmp_path: Path) -> None:
    rc2 = need("rc2.py", "PyPI package python-sat, in the paper extra of python/pyproject.toml")
    cnf = generate(tmp_path, "u.cnf", "mus.py", "60", "3", "2", "1")  # unsatisfiable
    code, output = run(rc2, "-vv", cnf)
    answer = classify("maxsat", code, output)
    checked = check("maxsat", answer, cnf, None)
    # Every clause is soft and weighs 1: the pigeonhole formula leaves one false at best.
    assert (checked.verdict, checked.detail) == ("optimum", "model checked: cost 1")
    assert answer.model is not None
    lying = Answer("optimum", model=answer.model, value="0")
    assert check_maxsat_answer(lying, cnf).detail == (
        "claimed cost 0, but the model's false soft clauses weigh 1")


def test_musx_mus_and_its_clause_numbers(tmp_path: Path) -> None:
    musx = need("musx.py", "PyPI package python-sat, in the paper extra of python/pyproject.toml")
    cnf = generate(tmp_path, "u.cnf", "mus.py", "60", "3", "2", "1")
    code, output = run(musx, "-v", cnf)
    answer = check("mus", classify("mus", code, output), cnf, None)
    # The pigeonhole formula 3 into 2: 3 clauses per pigeon, 3 per hole and pair.
    assert (answer.verdict, answer.value) == ("mus", "9")
    outside = Answer("mus", model=[1, 10_000], value="2")
    assert check("mus", outside, cnf, None).verdict == "wrong"
    assert classify("mus", 0, "c nothing\n").verdict == "unknown"  # a satisfiable formula


@pytest.mark.parametrize("violated", [False, True])
def test_spin_verifier_holds_or_is_violated(tmp_path: Path, violated: bool) -> None:
    need("spin", "Debian package spin")
    need("cc", "Debian package gcc")
    words = ["promela.py", "counters", "2", "6", "1"] + (["violated"] if violated else [])
    pan = generate(tmp_path, "model.pan", *words)
    pan.chmod(0o755)
    code, output = run(pan, "-m100000", cwd=tmp_path)  # a violation leaves a trail file
    answer = classify("spin", code, output)
    assert answer.verdict == ("violated" if violated else "holds")
    assert answer.value is not None and int(answer.value) > 10
    cut = output.split("State-vector")[0]  # pan stopped before its summary
    assert classify("spin", 0, cut).verdict == "unknown"


def test_pnexplore_states(tmp_path: Path) -> None:
    pnexplore = REPO_ROOT / "build" / "bin" / "pnexplore"
    if not pnexplore.exists():
        pytest.skip("pnexplore is not built (make)")
    net = tmp_path / "phil.pnml"
    subprocess.run([pnexplore, "gen", "philosophers", "4", "--format", "pnml", "-o", net],
                   check=True)
    code, output = run(pnexplore, "explore", net, "--alloc", "malloc", "--json")
    assert classify("pnexplore", code, output).value == str(3 ** 4)
    code, output = run(pnexplore, "explore", net, "--check", "deadlock", "--json")
    assert classify("pnexplore", code, output).verdict == "deadlock"


def test_tabling_answer_counts_of_swipl_and_hhtab(tmp_path: Path) -> None:
    """The tabling suite's two tools on the programs it generates: SWI-Prolog's
    count read by the documented regex, hhtab's from its --json."""
    swipl = need("swipl", "Debian package swi-prolog-core")
    hhtab = REPO_ROOT / "build" / "bin" / "hhtab"
    if not hhtab.exists():
        pytest.skip("hhtab is not built (make)")
    adapter = r"regex:^(answers) (?P<value>\d+)$"
    for shape, size, answers in (("cycle", "5", 25), ("btree", "4", 34), ("grid", "3", 81),
                                 ("pyramid", "4", 22)):
        program = tmp_path / f"{shape}.pl"
        subprocess.run([hhtab, "gen", "path", shape, size, "--recursion", "left", "-o", program],
                       check=True)
        code, output = run(swipl, "-q", "-g", "aggregate_all(count, path(_,_), N), "
                           "format('answers ~d~n', [N])", "-t", "halt", program)
        answer = classify(adapter, code, output)
        assert (answer.verdict, answer.value) == ("answers", str(answers)), shape
        code, output = run(hhtab, "run", program, "--query", "path(X,Y)", "--json")
        answer = classify("hhtab", code, output)
        assert (answer.verdict, answer.value) == ("answers", str(answers)), shape
    (tmp_path / "bad.pl").write_text("p(a.\n")  # a syntax error
    code, output = run(hhtab, "run", tmp_path / "bad.pl", "--query", "p(X)", "--json")
    assert classify("hhtab", code, output).verdict == "error"
    assert classify("hhtab", 0, "no json").verdict == "unknown"


@pytest.mark.parametrize("solver", ["z3", "cvc5"])
def test_smt_solvers_on_generated_problems(tmp_path: Path, solver: str) -> None:
    program = need(solver, f"Debian package {solver}")
    for seed, expected in (("1", "unsat"), ("2", "sat")):
        problem = generate(tmp_path, f"f{seed}.smt2", "smt.py", "factor", "12", seed)
        code, output = run(program, problem)
        assert classify("smtlib", code, output).verdict == expected
    problem = generate(tmp_path, "p.smt2", "smt.py", "precedence", "50", "1")
    code, output = run(program, problem)
    assert classify("smtlib", code, output).verdict == "sat"
