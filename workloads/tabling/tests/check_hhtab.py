#!/usr/bin/env python3
"""hhtab's tests: exact table counts of the paper's path programs for every
shape, recursion, table design, allocator and thread count (against a
brute-force transitive closure computed here); answers identical to
SWI-Prolog's, for the test programs and every kind of the tabling benchmark
set; one clear error line for every kind of bad input; no crash on garbage;
FS threads that would wait for each other in a cycle.

    check_hhtab.py HHTAB {counts|counts-small|threads|swipl|errors|garbage|cycles|fuzz}

counts-small keeps to the smallest instances (for sanitizer builds); threads
runs somewhat larger ones with 4 threads only (for the sanitizer builds: under
ThreadSanitizer the threads must overlap for races to show)."""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKIP = 77  # ctest's SKIP_RETURN_CODE for this test

failures: list[str] = []


def check(condition: bool, message: str) -> None:
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}")


# ---- the path programs, built here independently of hhtab gen ----

Edges = list[tuple[int, int]]


def shape_edges(shape: str, n: int) -> Edges:
    if shape == "btree":
        return [(i, 2 * i + d) for i in range(1, 2 ** (n - 1)) for d in (0, 1)]
    if shape == "cycle":
        return [(i, i + 1) for i in range(1, n)] + [(n, 1)]
    if shape == "pyramid":
        edges = [(1, 2), (1, 3)]
        for i in range(1, n - 1):
            left, right = 2 * i, 2 * i + 1
            edges += [(left, left + 2), (right, left + 2), (right, right + 2)]
        return edges + [(2 * n - 2, 2 * n), (2 * n - 1, 2 * n)]
    if shape == "grid":
        edges = []
        for r in range(n):
            for c in range(n):
                v = r * n + c + 1
                if c + 1 < n:
                    edges += [(v, v + 1), (v + 1, v)]
                if r + 1 < n:
                    edges += [(v, v + n), (v + n, v)]
        return edges
    raise ValueError(shape)


def expected_counts(edges: Edges, recursion: str) -> dict[str, int]:
    """What SLG resolution with variant tabling must find for path(X,Y):
    every consumer takes every answer of its subgoal once."""
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    nodes = {v for e in edges for v in e}
    reach: dict[int, set[int]] = {}
    for v in nodes:  # breadth-first search: paths of one edge or more
        seen: set[int] = set()
        frontier = list(succ.get(v, []))
        while frontier:
            w = frontier.pop()
            if w not in seen:
                seen.add(w)
                frontier += succ.get(w, [])
        reach[v] = seen
    closure = sum(len(r) for r in reach.values())
    sources = sum(1 for r in reach.values() if r)
    top_nodes = 1 + sources + closure  # the answer trie of path(_,_)
    if recursion == "left":
        derived = len(edges) + sum(len(succ.get(y, [])) for r in reach.values() for y in r)
        return {"answers": closure, "calls": 1, "subgoal_trie_nodes": 3, "unique": closure,
                "repeated": derived - closure, "answer_trie_nodes": top_nodes}
    targets = {b for _, b in edges}
    unique = closure + sum(len(reach[z]) for z in targets)
    if recursion == "right":
        derived = len(edges) + sum(len(reach[z]) for _, z in edges)
        derived += sum(len(succ.get(z, [])) + sum(len(reach[w]) for w in succ.get(z, []))
                       for z in targets)
    else:  # double: path(X,Z) :- path(X,Y), path(Y,Z).
        derived = len(edges) + sum(len(reach[y]) for r in reach.values() for y in r)
        derived += sum(len(succ.get(z, [])) + sum(len(reach[y]) for y in reach[z])
                       for z in targets)
    return {"answers": closure, "calls": 1 + len(targets),
            "subgoal_trie_nodes": 1 + 2 * (1 + len(targets)), "unique": unique,
            "repeated": derived - unique,
            "answer_trie_nodes": top_nodes + sum(1 + len(reach[z]) for z in targets)}


def hhtab(tool: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=timeout)


def run_json(tool: str, program: Path, *options: str) -> dict[str, Any]:
    out = hhtab(tool, "run", str(program), "--query", "path(X,Y)", "--json", *options)
    if out.returncode != 0:
        raise SystemExit(f"hhtab failed on {program} {options}: {out.stderr.strip()}")
    return json.loads(out.stdout)  # type: ignore[no-any-return]


SMALL = [("btree", 5), ("pyramid", 6), ("cycle", 8), ("grid", 4)]
MEDIUM = [("btree", 8), ("pyramid", 40), ("cycle", 60), ("grid", 7)]
# Large enough for four threads to overlap under ThreadSanitizer, small enough
# to take seconds there.
OVERLAP = [("btree", 7), ("pyramid", 24), ("cycle", 32), ("grid", 6)]


def test_counts(tool: str, tmp: Path, instances: list[tuple[str, int]],
                threads_list: tuple[int, ...] = (1, 2, 4)) -> None:
    for (shape, n), recursion in itertools.product(instances, ("left", "right", "double")):
        program = tmp / f"{shape}-{n}-{recursion}.pl"
        made = hhtab(tool, "gen", "path", shape, str(n), "--recursion", recursion, "-o",
                     str(program))
        check(made.returncode == 0, f"gen {shape} {n} {recursion}: {made.stderr.strip()}")
        want = expected_counts(shape_edges(shape, n), recursion)
        for design, alloc, threads in itertools.product(("ns", "ss", "fs"), ("pool", "malloc"),
                                                        threads_list):
            r = run_json(tool, program, "--design", design, "--alloc", alloc,
                         "--threads", str(threads), "--repeat", "2")
            what = f"{shape} {n} {recursion} {design} {alloc} {threads} threads"
            for key, value in want.items():
                # With shared answer tries, a thread counts as repeated what
                # it derived after another thread inserted it: that depends on
                # timing, so it is exact only with one thread.
                if key == "repeated" and design == "fs" and threads > 1:
                    continue
                check(r[key] == value, f"{what}: {key} {r[key]}, expected {value}")
            if design != "fs":
                same = set(r["repeated_per_thread"]) == {want["repeated"]}
                check(same, f"{what}: threads disagree on repeated: {r['repeated_per_thread']}")
            else:
                total = sum(r["inserted_per_thread"])
                check(total == want["unique"], f"{what}: threads inserted {total} answers, "
                      f"expected {want['unique']}")
                check(r["repeated"] == sum(r["repeated_per_thread"]), f"{what}: repeated "
                      f"{r['repeated']} is not the threads' {r['repeated_per_thread']} together")
            check(len(r["seconds"]) == 2, f"{what}: {r['seconds']} is not one time per run")
        print(f"{shape} {n} {recursion}: {want['unique']} answers, {want['repeated']} repeated "
              "in every configuration")


# ---- against SWI-Prolog ----

def queries_of(program: Path) -> list[str]:
    return re.findall(r"^% query: (.+)$", program.read_text(), re.M)


def swipl_answers(swipl: str, program: Path, goal: str) -> list[str]:
    """SWI-Prolog's solutions, written as hhtab writes them (canonical, no
    operators); the script's variables cannot clash with the goal's."""
    script = (f"HhtabGoal = ({goal}), forall(HhtabGoal, (copy_term(HhtabGoal, HhtabCopy), "
              "numbervars(HhtabCopy, 0, _), write_term(HhtabCopy, [quoted(true), "
              "ignore_ops(true), numbervars(true)]), nl))")
    out = subprocess.run([swipl, "-q", "-g", script, "-t", "halt", str(program)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"swipl failed on {program} {goal}: {out.stderr.strip()}")
    return sorted(out.stdout.splitlines())


def hhtab_answers(tool: str, program: Path, goal: str, *options: str) -> list[str]:
    out = hhtab(tool, "run", str(program), "--query", goal, *options)
    if out.returncode != 0:
        raise SystemExit(f"hhtab failed on {program} {goal}: {out.stderr.strip()}")
    return sorted(line for line in out.stdout.splitlines() if not line.startswith("%"))


def test_swipl(tool: str, tmp: Path) -> int:
    swipl = shutil.which("swipl")
    if swipl is None:
        print("SKIP: swipl is not installed (Debian package swi-prolog-core; `make` installs it "
              "as root)")
        return SKIP
    programs = sorted((HERE / "programs").glob("*.pl"))
    for shape, recursion in itertools.product(("cycle", "grid", "pyramid"),
                                              ("left", "right", "double")):
        path = tmp / f"{shape}-{recursion}.pl"
        hhtab(tool, "gen", "path", shape, "5", "--recursion", recursion, "-o", str(path))
        path.write_text(path.read_text() + "% query: path(X,Y)\n% query: path(2,Y)\n")
        programs.append(path)
    for family, n in FAMILIES_SMALL:  # each kind of the tabling benchmark set
        path = tmp / f"{family}-{n}.pl"
        made = hhtab(tool, "gen", family, str(n), "-o", str(path))
        check(made.returncode == 0, f"gen {family} {n}: {made.stderr.strip()}")
        programs.append(path)
    for program in programs:
        for goal in queries_of(program):
            want = swipl_answers(swipl, program, goal)
            for design, threads in (("ns", 1), ("ss", 2), ("fs", 1), ("fs", 4)):
                got = hhtab_answers(tool, program, goal, "--design", design, "--threads",
                                    str(threads))
                check(got == want, f"{program.name} {goal} {design} {threads} threads: hhtab "
                      f"{got[:8]}{'...' if len(got) > 8 else ''}, swipl {want[:8]}"
                      f"{'...' if len(want) > 8 else ''}")
            print(f"{program.name}: {goal}: {len(want)} answers, as swipl")
    return 0


# ---- bad input ----

# Families of `hhtab gen` at sizes the tests run against SWI-Prolog.
FAMILIES_SMALL = [("fib", 60), ("nrev", 40), ("shuttle", 25), ("pingpong", 25),
                  ("recognize", 30), ("loop", 9), ("chain", 12), ("joins", 3), ("mondial", 4)]

# (file content; query; the one expected line), each refused before it runs
BAD_INPUTS: list[tuple[str, str, str]] = [
    ("p(a) :- q(a) ; r(a).\n", "p(X)", r"bad.pl:1:14: disjunction \(;\) is not supported"),
    ("p(a) :- q(a) | r(a).\n", "p(X)", r"bad.pl:1:14: disjunction \(\|\) is not supported"),
    ("p(a) :- !.\n", "p(X)", r"bad.pl:1:9: cut \(!\) is not supported"),
    ("p(X) :- q(a), X.\nq(a).\n", "p(X)", r"bad.pl:1:15: a variable \(X\) cannot be a goal"),
    ("p(a) :- 7.\n", "p(X)", r"bad.pl:1:9: a number \(7\) cannot be a goal"),
    (":- table q/1.\np(a) :- \\+ q(a).\nq(b).\n", "p(X)", r"bad.pl:2:9: negation \(\\\+\) "
     r"of a goal that calls a tabled predicate \(q/1\) is not supported"),
    (":- table t/1.\np(a) :- \\+ r(a).\nr(X) :- s(X).\ns(X) :- t(X).\nt(b).\n", "p(X)",
     r"bad.pl:2:9: negation \(\\\+\) of a goal that calls a tabled predicate \(t/1\)"),
    ('p("a").\n', "p(X)", r'bad.pl:1:3: strings \("\.\.\."\) are not supported'),
    ("p(1.5).\n", "p(X)", r"bad.pl:1:3: floating-point number '1\.5\.\.\.' is not supported"),
    ("p(X) :- X is 2e10.\n", "p(X)", r"bad.pl:1:14: floating-point number '2e\.\.\.' is not"),
    ("p(0'\\n).\n", "p(X)", r"bad.pl:1:3: this character code \(0'\.\.\.\) is not supported"),
    ("p(123456789012345678901).\n", "p(X)", r"bad.pl:1:3: integer 123456789012345678901 is out "
     r"of range"),
    ("p(2305843009213693952).\n", "p(X)", r"bad.pl:1:3: integer 2305843009213693952 is out "
     r"of range"),
    ("p(a)\nq(b).\n", "p(X)", r"bad.pl:2:1: expected an operator or the end of the clause "
     r"\('\.'\), found 'q'"),
    ("p({a}).\n", "p(X)", r"bad.pl:1:3: curly terms \(\{\.\.\.\}\) are not supported"),
    ("p([a|b|c]).\n", "p(X)", r"bad.pl:1:7: expected '\]' in a list, found '\|'"),
    ("p :- a :- b.\na.\nb.\n", "p", r"bad.pl:1:8: operator priority clash at ':-'"),
    ("s --> [a].\n", "s", r"bad.pl:1:3: DCG rules \(-->\) are not supported"),
    ("true.\n", "true", r"bad.pl:1:1: 'true'/0 is built in and cannot be redefined"),
    ("X = Y :- p.\np.\n", "p", r"bad.pl:1:3: '='/2 is built in and cannot be redefined"),
    ("p(X) :- call(X).\n", "p(X)", r"bad.pl:1:9: call/1 is called but has no clauses "
     r"\(unknown procedure; hhtab's built-ins are"),
    ("p(" + ",".join("a" * 65) + ").\n", "p(X)", r"bad.pl:1:1: more than 64 arguments"),
    ("p(a) :- q(a) *-> r(a).\n", "p(X)", r"bad.pl:1:14: if-then-else \(\*->\) is not supported"),
    ("p(a, b.\n", "p(X,Y)", r"bad.pl:1:7: expected ',' or '\)' in the arguments of p, found "
     r"'\.'"),
    ("p(a).\n/* open\n", "p(X)", r"bad.pl:2:1: comment '/\*' is never closed"),
    ("p('abc).\n", "p(X)", r"bad.pl:1:3: quoted atom is not closed on its line"),
    ("X.\n", "p(X)", r"bad.pl:1:1: a variable \(X\) cannot be a clause head"),
    ("42 :- p.\n", "p", r"bad.pl:1:1: a number \(42\) cannot be a clause head"),
    (":- dynamic p/1.\n", "p(X)", r"bad.pl:1:4: directive 'dynamic' is not supported"),
    (":- initialization(main).\n", "p", r"bad.pl:1:4: directive 'initialization' is not"),
    (":- table p.\n", "p(X)", r"bad.pl:1:10: expected Name/Arity in a table directive, found "
     r"'p'"),
    (":- table p/x.\n", "p(X)", r"bad.pl:1:12: expected an arity from 0 to 64, found 'x'"),
    (":- table p/1 as shared.\np(a).\n", "p(X)", r"bad.pl:1:14: table modes \('as \.\.\.'\) "
     r"are not supported"),
    (":- table p(_,min).\np(a,1).\n", "p(X,Y)", r"bad.pl:1:10: answer subsumption"),
    ("p(X) :- q(X).\n", "p(X)", r"bad.pl:1:9: q/1 is called but has no clauses"),
    ("p(a) :- q(a) -> r(a).\n", "p(X)", r"bad.pl:1:14: if-then-else \(->\) is not supported"),
    ("p(a).\x01\n", "p(X)", r"bad.pl:1:6: unexpected byte 0x01"),
    ("p(a).\n", "q(X)", r"--query:1:1: q/1 is not defined in the program"),
    ("p(a).\n", "p(X", r"--query:1:4: expected ',' or '\)' in the arguments of p, found the end"),
    ("p(a).\n", "p(X), p(Y)", r"--query:1:5: expected the end of the query \(one goal\)"),
    ("p(a).\n", "X", r"--query:1:1: a variable \(X\) cannot be the query"),
    ("p(a).\n", "X = 1", r"--query:1:3: the query must call a predicate of the program, not "
     r"the built-in '='/2"),
]

# Programs that stop while they run, with exit code 3 and one line naming
# the goal (file:line:column) and the problem.
RUNTIME_ERRORS: list[tuple[str, str, str]] = [
    ("p(X) :- X is Y + 1.\n", "p(X)", r"bad.pl:1:11: arguments are not sufficiently "
     r"instantiated"),
    ("p(X) :- X is 1 // 0.\n", "p(X)", r"bad.pl:1:11: division by zero"),
    ("p(X) :- X is 7 / 2.\n", "p(X)", r"bad.pl:1:11: 7/2 is not an integer \(hhtab has integers "
     r"only"),
    ("p(X) :- X is 2 ** 70.\n", "p(X)", r"bad.pl:1:11: integer overflow"),
    ("p(X) :- X is 2305843009213693951 + 1.\n", "p(X)", r"bad.pl:1:11: integer overflow"),
    ("p(X) :- X is foo(1).\n", "p(X)", r"bad.pl:1:11: foo/1 is not an arithmetic function"),
    ("p :- 1 < a.\n", "p", r"bad.pl:1:8: a is not a number or an arithmetic function"),
    (":- table p/1.\np(X) :- q(Y), X is Y * 2.\nq(a).\n", "p(X)", r"bad.pl:2:17: a is not a "
     r"number"),
]


ASAN_DEEP_EXIT = re.compile(r"ASan is ignoring requested __asan_handle_no_return|^False positive "
                            r"error reports may follow|^For details see .*sanitizers/issues/189")


def test_errors(tool: str, tmp: Path) -> None:
    bad = tmp / "bad.pl"
    for code, cases in ((2, BAD_INPUTS), (3, RUNTIME_ERRORS)):
        for content, goal, pattern in cases:
            bad.write_text(content)
            out = hhtab(tool, "run", str(bad), "--query", goal)
            lines = out.stderr.strip().splitlines()
            ok = out.returncode == code and len(lines) == 1 and re.search(pattern, lines[0])
            check(bool(ok), f"{content!r} / {goal!r}: expected exit {code} and one line "
                  f"matching {pattern!r}, got {out.returncode} {lines}")
    options = [
        (["run", str(bad), "--query", "p(X)", "--threads", "0"], r"--threads: '0' is not a thread"),
        (["run", str(bad), "--query", "p(X)", "--design", "xs"], r"--design: 'xs' is not ns, ss"),
        (["run", str(bad), "--query", "p(X)", "--alloc", "slab"], r"--alloc: 'slab' is not pool"),
        (["run", str(bad), "--query", "p(X)", "--repeat", "-1"], r"--repeat: '-1' is not"),
        (["run", str(bad)], r"--query GOAL is required"),
        (["run", str(tmp / "missing.pl"), "--query", "p(X)"], r"missing\.pl: cannot read it \(No"),
        (["gen", "path", "star", "4", "--recursion", "left"], r"'star' is not a shape"),
        (["gen", "path", "btree", "40", "--recursion", "left"], r"'40' is not a btree size from"),
        (["gen", "path", "cycle", "4", "--recursion", "up"], r"'up' is not left, right or double"),
        (["gen", "path", "cycle", "4"], r"--recursion left\|right\|double is required"),
        (["gen", "fibs", "4"], r"'fibs' is not a program family \(path, fib, nrev"),
        (["gen", "joins", "101"], r"'101' is not a joins size from 1 to 100"),
    ]
    bad.write_text("p(a).\n")
    for args, pattern in options:
        out = hhtab(tool, *args)
        lines = out.stderr.strip().splitlines()
        check(out.returncode == 2 and any(re.search(pattern, line) for line in lines),
              f"{args}: expected {pattern!r}, got {out.returncode} {lines}")
    if os.environ.get("HHTAB_SANITIZER", "").startswith("thread"):
        # ThreadSanitizer's own per-thread trace of calls overflows (SEGV in
        # __tsan::TraceSwitch) long before hhtab's stack does, from 50,000
        # nested calls on: the native and AddressSanitizer builds test it.
        print(f"{len(BAD_INPUTS) + len(RUNTIME_ERRORS) + len(options)} bad inputs, each one "
              "clear error (the too-deep recursion is not tried under ThreadSanitizer)")
        return
    # A recursion deeper than the stack: stopped with a message, not a crash.
    chain = 400_000
    bad.write_text("c(X) :- e(X,Y), c(Y).\nc(X) :- last(X).\n" + f"last({chain}).\n"
                   + "".join(f"e({i},{i + 1}).\n" for i in range(1, chain)))
    out = hhtab(tool, "run", str(bad), "--query", "c(1)")
    # AddressSanitizer says once that it does not unpoison so large a stack
    # when the program exits from deep down: its note, not hhtab's output.
    lines = [line for line in out.stderr.strip().splitlines() if not ASAN_DEEP_EXIT.search(line)]
    check(out.returncode == 3 and len(lines) == 1 and "nested too deeply" in lines[0],
          f"a {chain}-deep recursion: expected one 'nested too deeply' line, got "
          f"{out.returncode} {lines[:3]}")
    print(f"{len(BAD_INPUTS) + len(RUNTIME_ERRORS) + len(options) + 1} bad inputs, each one "
          "clear error")


def survives(tool: str, path: Path, what: str) -> None:
    """hhtab either runs the text, refuses it with one FILE:LINE:COLUMN line,
    or stops it with one line (a runtime error, or a recursion too deep)."""
    out = hhtab(tool, "run", str(path), "--query", "p(X)", timeout=60)
    lines = [line for line in out.stderr.strip().splitlines() if not ASAN_DEEP_EXIT.search(line)]
    if out.returncode == 0:
        return
    refused = out.returncode == 2 and len(lines) == 1 and re.match(
        r"hhtab: (\S+:\d+:\d+|--query:\d+:\d+): \S", lines[0]) is not None
    stopped = out.returncode == 3 and len(lines) == 1 and re.match(
        r"hhtab: (\S+:\d+:\d+: \S|evaluation nested too deeply)", lines[0]) is not None
    check(refused or stopped, f"{what}: exit {out.returncode}, stderr {lines[:3]}")


def test_garbage(tool: str, tmp: Path) -> None:
    rng = random.Random(11)
    path = tmp / "garbage.pl"
    valid = (HERE / "programs" / "constants.pl").read_bytes() + b"p(a). p(X) :- same(X,X).\n"
    cases = 0
    for i in range(60):  # random bytes, random printable text
        if i % 2:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
        else:
            data = "".join(rng.choice("p(a,X)._ :-%/*'\n\t0123") for _ in range(300)).encode()
        path.write_bytes(data)
        survives(tool, path, f"random input {i}")
        cases += 1
    for cut in range(0, len(valid), 7):  # every truncation
        path.write_bytes(valid[:cut])
        survives(tool, path, f"constants.pl cut at byte {cut}")
        cases += 1
    deep = [b"p(" * 100000 + b"a" + b")" * 100000 + b".\n",
            b"p(a) :- " + b"(" * 100000 + b"q(a)" + b")" * 100000 + b".\nq(b).\n",
            b"p(a) :- " + b", ".join([b"p(a)"] * 2000) + b".\n",
            b"p(" + b",".join([b"a"] * 100) + b").\n",
            b"p('" + b"x" * 1000000 + b"').\n",
            b"/*" * 100000,
            b"p(X) :- " + b", ".join(f"q(X{i})".encode() for i in range(2000)) + b".\nq(a).\n",
            b"p(a).\n" * 50000 + b"p(b)"]
    for i, data in enumerate(deep):  # deep nesting, long clauses, huge tokens
        path.write_bytes(data)
        survives(tool, path, f"deep input {i}")
        cases += 1
    print(f"{cases} garbage inputs: no crash, one line each refused")


# Two tables through each other, each thread calling one first, with work
# before the other call: both threads own an incomplete subgoal when each
# calls the other's, so the second to wait finds a cycle of waits and
# evaluates the other's subgoal itself (the FS fallback).
CYCLE_PROGRAM = """\
:- table t0/1, t1/1.
t0(X) :- slow, t1(X).
t0(a).
t1(X) :- slow, t0(X).
t1(b).
slow :- \\+ (d(A), d(B), d(C), d(D), d(E), d(F), A + B + C + D + E + F < 0).
d(0). d(1). d(2). d(3). d(4). d(5). d(6). d(7). d(8). d(9).
"""


def test_cycles(tool: str, tmp: Path) -> None:
    """FS with two threads running t0 and t1: a wait that would close a cycle
    of threads is evaluated instead (counted in wait_cycles), and the answers
    are right.  The threads' timing decides which one finds the cycle; a run
    where one thread was done before the other began has no cycle, so up to
    five runs are made for one."""
    program = tmp / "cycle.pl"
    program.write_text(CYCLE_PROGRAM)
    for alloc in ("pool", "malloc"):
        cycles = 0
        for _attempt in range(5):
            out = hhtab(tool, "run", str(program), "--query", "t0(X)", "--query", "t1(X)",
                        "--threads", "2", "--design", "fs", "--alloc", alloc, "--json")
            if out.returncode != 0:
                check(False, f"cycle program, {alloc}: {out.stderr.strip()[-400:]}")
                return
            r = json.loads(out.stdout)
            check(r["answers"] == 2 and r["unique"] == 4 and r["calls"] == 2,
                  f"cycle program, {alloc}: {r}")
            cycles = r["wait_cycles"]
            if cycles > 0:
                break
        check(cycles > 0, f"cycle program, {alloc}: no thread found a cycle of waits in 5 runs")
        printed = hhtab(tool, "run", str(program), "--query", "t0(X)", "--query", "t1(X)",
                        "--threads", "2", "--design", "fs", "--alloc", alloc)
        got = sorted(line for line in printed.stdout.splitlines() if not line.startswith("%"))
        check(got == ["t0(a)", "t0(b)"], f"cycle program, {alloc}: thread 0 printed {got}")
        print(f"cycle program, {alloc}: {cycles} wait cycle(s) broken, answers right")


def test_fuzz(tool: str, tmp: Path) -> int:
    """The readers under libFuzzer for 20 seconds, from the test programs."""
    fuzzer = Path(tool).with_name("hhtab_fuzz")
    if not fuzzer.exists():
        print("SKIP: no hhtab_fuzz (CMake found no clang with libFuzzer: Debian packages clang "
              "and libclang-rt-dev)")
        return SKIP
    corpus = tmp / "corpus"
    corpus.mkdir()
    for seed in (HERE / "programs").glob("*.pl"):
        shutil.copy(seed, corpus / seed.name)
    out = subprocess.run([str(fuzzer), "-max_total_time=20", "-seed=1", "-max_len=4096",
                          "-print_final_stats=1", f"-artifact_prefix={tmp}/", str(corpus)],
                         capture_output=True, text=True, timeout=120)
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out.stderr)
    if out.returncode != 0:
        check(False, f"the fuzzer found a failure: {out.stderr.strip()[-1500:]}")
    else:
        print(f"fuzzed the readers: {runs.group(1) if runs else '?'} inputs, no failure")
    return 0


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, which = sys.argv[1], sys.argv[2]
    tests: dict[str, Callable[[str, Path], int | None]] = {
        "counts": lambda t, d: test_counts(t, d, SMALL + MEDIUM),
        "counts-small": lambda t, d: test_counts(t, d, SMALL),
        "threads": lambda t, d: test_counts(t, d, OVERLAP, (4,)),
        "swipl": test_swipl, "errors": test_errors, "garbage": test_garbage,
        "cycles": test_cycles, "fuzz": test_fuzz}
    os.environ.setdefault("HUGEHEAP_THP", "off")  # tiny runs: no huge-page faults to wait for
    with tempfile.TemporaryDirectory() as tmp:
        status = tests[which](tool, Path(tmp))
    if status == SKIP:
        return SKIP
    print(f"{'ok' if not failures else 'FAILED'}: {which}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
