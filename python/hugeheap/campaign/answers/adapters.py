"""What a tool answered: each adapter reads a run's exit code and output, as
BenchExec's tool-info modules do, and says the verdict and, where the answer
carries one, the value that every run on the instance must agree on.

  sat       SAT-competition output (`s SATISFIABLE` / `s UNSATISFIABLE`, `v`
            lines with the model) or, without an `s` line, exit codes 10 / 20
  smtlib    the first `sat` / `unsat` / `unknown` line
  asp       clasp and clingo: SATISFIABLE, UNSATISFIABLE, OPTIMUM FOUND (the
            value: the optimum's cost, from `Optimization :`), UNKNOWN; without
            a status line their exit codes 10 (satisfiable), 20 (unsatisfiable),
            30 (optimum found)
  maxsat    MaxSAT Evaluation output: `s OPTIMUM FOUND`, `o COST` (the value),
            `v` model (literals, or the newer 0/1 string); `s UNSATISFIABLE`
  mus       a MUS extractor's `v` line of clause numbers (python-sat's
            musx.py); the value is the MUS's size
  spin      Spin's pan: `errors: N` (0: `holds`, more: `violated`) and the
            value `N states, stored`; an incomplete search answers nothing
  pnexplore pnexplore's JSON: a complete exploration's `states` (the value),
            `deadlock` where --check deadlock found one
  hhtab     hhtab's --json: the value is the query's `answers`
  abc       Berkeley ABC's model checking (bmc3, pdr, and the others that
            print the same lines) on a design with one property: `cex` (the
            value: the frame of the counterexample, 0 the reset state),
            `bounded` (no counterexample in the frames the value says, all
            that were asked for), `proved`; its own check of its
            counterexample failing is `wrong`, a design it cannot read `error`
  exitcode  0 is `done`, anything else `error`
  regex:PATTERN  the first group (or the group named `answer`) is the verdict,
            `done` where there is no such group; a group named `value` is the
            value, e.g. `regex:^(answers) (?P<value>\\d+)$` for a Prolog
            program that prints how many answers its query has; any other
            named group that matched a number is a metric of that name

Besides the answer, an adapter keeps the figures a tool measures of itself
(`metrics`, by name; stored with the run, medians in the report): what the
harness cannot see from outside, such as the time of the query or the
exploration alone, without loading and parsing, or bytes per state.

  pnexplore explore_s (the exploration's own time), states_per_s,
            bytes_per_state, marking_bytes
  hhtab     query_s (the query's first evaluation), second_query_s (the last
            of --repeat N, tables abolished in between), table_bytes,
            table_bytes_per_answer (per unique answer), pool_bytes,
            peak_rss_bytes

Checking an answer against its instance (a SAT model against the CNF, a
MaxSAT model's cost against the WCNF, a MUS's clause numbers) is checks.py's;
comparing answers across runs is verdicts.py's."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TypeGuard

from ...errors import HarnessError

ADAPTERS = ("sat", "smtlib", "asp", "maxsat", "mus", "spin", "pnexplore", "hhtab", "abc",
            "exitcode")
# The adapter that reads a program's answers, by the program's name.
_ADAPTER_OF = {"clasp": "asp", "clingo": "asp", "minisat": "sat", "cadical": "sat",
               "kissat": "sat", "cryptominisat5": "sat", "picosat": "sat", "glucose": "sat",
               "z3": "smtlib", "cvc5": "smtlib", "cvc4": "smtlib", "yices-smt2": "smtlib",
               "rc2.py": "maxsat", "musx.py": "mus", "pnexplore": "pnexplore",
               "hhtab": "hhtab", "berkeley-abc": "abc"}


def suggested_adapter(program: str) -> str | None:
    """The adapter that reads the answers of a program known by its name."""
    return _ADAPTER_OF.get(program.rsplit("/", 1)[-1])


@dataclass
class Answer:
    verdict: str  # sat, unsat, optimum, unknown, done, error, wrong, or an adapter's own word
    detail: str | None = None
    model: list[int] | None = None
    value: str | None = None  # what every run on the instance must agree on (cost, states, ...)
    # Figures the tool measured of itself, by name (explore_s, bytes_per_state, ...)
    metrics: dict[str, float] | None = None


# The adapter of a tool whose BenchExec tool-info module reads its answers
# (toolinfo.py), followed by the module's name.
TOOL_INFO = "tool-info:"


def check_adapter_name(name: str) -> None:
    if name in ADAPTERS or name.startswith(TOOL_INFO):
        return
    if name.startswith("regex:"):
        try:
            pattern = re.compile(name[len("regex:"):], re.M)
        except re.error as error:
            raise HarnessError(f"adapter {name!r}: not a regular expression ({error})") from None
        if pattern.groups < 1:
            raise HarnessError(f"adapter {name!r}: the expression needs a (group) for the answer")
        return
    raise HarnessError(f"unknown adapter {name!r} (known: {', '.join(ADAPTERS)}, regex:PATTERN)")


def classify(adapter: str, exit_code: int | None, output: str) -> Answer:
    if adapter == "sat":
        return sat_competition_answer(exit_code, output)
    if adapter == "smtlib":
        for line in output.splitlines():
            word = line.strip()
            if word in ("sat", "unsat", "unknown"):
                return Answer(word)
        return Answer("unknown", "no sat/unsat line")
    if adapter == "exitcode":
        return Answer("done" if exit_code == 0 else "error", f"exit code {exit_code}")
    if adapter.startswith("regex:"):
        return _regex_answer(adapter[len("regex:"):], output)
    reader = _READERS.get(adapter)
    if reader is None:
        raise HarnessError(f"unknown adapter {adapter!r}")
    return reader(exit_code, output)


def _regex_answer(pattern: str, output: str) -> Answer:
    match = re.search(pattern, output, re.M)
    if match is None:
        return Answer("unknown", "the expression matched nothing")
    named = match.groupdict()
    value = named.get("value")
    metrics = {name: number for name, text in named.items()
               if name not in ("answer", "value") and (number := _number(text)) is not None}
    if "answer" in named:
        verdict = named["answer"]
    else:
        unnamed = set(range(1, match.re.groups + 1)) - set(match.re.groupindex.values())
        verdict = match.group(min(unnamed)) if unnamed else "done"
    if verdict is None:
        return Answer("unknown", "the answer group matched nothing")
    return Answer(verdict, value=value, metrics=metrics or None)


def _number(text: str | None) -> float | None:
    """text as a number; None where it is none (or not finite)."""
    try:
        number = float(text) if text is not None else None
    except ValueError:
        return None
    return number if number is not None and math.isfinite(number) else None


def sat_competition_answer(exit_code: int | None, output: str) -> Answer:
    verdict = None
    model: list[int] = []
    for line in output.splitlines():
        if line.startswith("s "):
            status = line[2:].strip()
            verdict = {"SATISFIABLE": "sat", "UNSATISFIABLE": "unsat"}.get(status, "unknown")
        elif line.startswith("v "):
            model.extend(int(token) for token in line[2:].split() if token.lstrip("-").isdigit())
    if verdict is None:
        verdict = {10: "sat", 20: "unsat"}.get(exit_code or 0, "unknown")
    if verdict == "sat" and model and model[-1] == 0:
        model.pop()
    return Answer(verdict, model=model if verdict == "sat" and model else None)


# clasp's exit codes are bits: 1 interrupted, 10 a model found, 20 the search
# space exhausted (so 30: optimum found, 20: unsatisfiable), 33 out of memory,
# 65 error, 128 not run.
_ASP_STATUS = {"SATISFIABLE": "sat", "UNSATISFIABLE": "unsat", "OPTIMUM FOUND": "optimum",
               "UNKNOWN": "unknown"}
_ASP_EXIT = {10: "sat", 20: "unsat", 30: "optimum"}


def _asp_answer(exit_code: int | None, output: str) -> Answer:
    verdict = None
    cost = None
    for line in output.splitlines():
        text = line.strip()
        if text in _ASP_STATUS:
            verdict = _ASP_STATUS[text]
        elif text.startswith("Optimization"):
            # The summary's `Optimization : 3 1` (levels), or each model's `Optimization: 3`.
            cost = " ".join(text.split(":", 1)[1].split())
    if verdict is None:
        verdict = _ASP_EXIT.get(exit_code or 0, "unknown")
    if verdict == "optimum":
        if not cost:
            return Answer("unknown", "OPTIMUM FOUND without an Optimization line")
        return Answer("optimum", f"cost {cost}", value=cost)
    if verdict == "unknown" and exit_code is not None and exit_code & 1:
        return Answer("unknown", f"interrupted (exit code {exit_code})"
                      + (f", best cost so far {cost}" if cost else ""))
    return Answer(verdict)


def _maxsat_answer(exit_code: int | None, output: str) -> Answer:
    status = cost = None
    model: list[int] = []
    for line in output.splitlines():
        if line.startswith("s "):
            status = line[2:].strip()
        elif line.startswith("o "):
            cost = line[2:].strip()  # the last one counts: solvers print improving costs
        elif line.startswith("v "):
            words = line[2:].split()
            if len(words) == 1 and set(words[0]) <= {"0", "1"} and len(words[0]) > 1:
                # The 2020 format: one character per variable, 1 true.
                model = [i if c == "1" else -i for i, c in enumerate(words[0], 1)]
            else:
                model.extend(int(w) for w in words if w.lstrip("-").isdigit() and w != "0")
    if status == "OPTIMUM FOUND":
        if cost is None or not cost.isdigit():
            return Answer("unknown", "OPTIMUM FOUND without an 'o COST' line")
        return Answer("optimum", f"cost {cost}", model or None, value=cost)
    if status == "UNSATISFIABLE":
        return Answer("unsat")
    if status == "SATISFIABLE":
        return Answer("unknown", f"a solution of cost {cost} found, optimality not proven")
    return Answer("unknown", "no 's' line" if status is None else f"s {status}")


def _mus_answer(exit_code: int | None, output: str) -> Answer:
    clauses: list[int] = []
    seen = False
    for line in output.splitlines():
        if line.startswith("v ") or line == "v":
            seen = True
            clauses.extend(int(w) for w in line[1:].split() if w.isdigit() and w != "0")
    if exit_code not in (0, None):
        return Answer("error", f"exit code {exit_code}")
    if not seen:
        return Answer("unknown", "no MUS printed (a satisfiable formula has none)")
    return Answer("mus", f"{len(clauses)} clauses", clauses, value=str(len(clauses)))


_STORED = re.compile(r"^\s*(\d+) states, stored", re.M)
_ERRORS = re.compile(r"errors: (\d+)")


def _spin_answer(exit_code: int | None, output: str) -> Answer:
    stored = _STORED.search(output)
    errors = _ERRORS.search(output)
    if "out of memory" in output:
        return Answer("unknown", "pan ran out of memory")
    if stored is None or errors is None:
        return Answer("unknown", "no 'errors:' and 'states, stored' lines")
    if "Search not completed" in output and errors.group(1) == "0":
        return Answer("unknown", "search not completed (raise pan's -m depth limit)")
    verdict = "holds" if errors.group(1) == "0" else "violated"
    return Answer(verdict, f"{errors.group(1)} errors, {stored.group(1)} states stored",
                  value=stored.group(1))


def _last_json_object(output: str) -> dict[str, object] | None:
    """The last line of the output that is a JSON object."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(found, dict):
                return found
    return None


def _pnexplore_answer(exit_code: int | None, output: str) -> Answer:
    found = _last_json_object(output)
    if found is None:
        return Answer("unknown", "no JSON object in the output")
    if found.get("deadlock") is True:
        return Answer("deadlock", "a deadlock was found")
    states = found.get("states")
    if found.get("complete") is not True or not isinstance(states, int):
        return Answer("unknown", f"exploration not complete: {found.get('stopped') or '?'}")
    return Answer("states", f"{states} states", value=str(states),
                  metrics=_numbers(found, {"seconds": "explore_s",
                                           "states_per_second": "states_per_s",
                                           "bytes_per_state": "bytes_per_state",
                                           "marking_bytes": "marking_bytes"}))


def _hhtab_answer(exit_code: int | None, output: str) -> Answer:
    found = _last_json_object(output)
    answers = found.get("answers") if found else None
    if exit_code not in (0, None):
        return Answer("error", f"exit code {exit_code}")
    if not isinstance(answers, int):
        return Answer("unknown", "no JSON object with 'answers'")
    seconds = found.get("seconds") if found else None
    metrics = _numbers(found or {}, {"table_bytes": "table_bytes", "pool_bytes": "pool_bytes",
                                     "peak_rss_bytes": "peak_rss_bytes"}) or {}
    if isinstance(seconds, list) and seconds and all(_is_number(s) for s in seconds):
        metrics["query_s"] = float(seconds[0])
        if len(seconds) > 1:
            metrics["second_query_s"] = float(seconds[-1])
    unique = found.get("unique") if found else None
    if "table_bytes" in metrics and _is_number(unique) and unique:
        metrics["table_bytes_per_answer"] = metrics["table_bytes"] / unique
    return Answer("answers", f"{answers} answers", value=str(answers), metrics=metrics or None)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _numbers(found: dict[str, object], names: dict[str, str]) -> dict[str, float] | None:
    """The numbers among a tool's JSON fields, renamed (field -> metric)."""
    kept = {metric: float(value) for field, metric in names.items()
            if _is_number(value := found.get(field))}
    return kept or None


# ABC's last word on the property (bmc3, pdr and the other engines print
# these lines; a script of several commands says its final answer last).
_ABC_VERDICTS = re.compile(
    r'^Output (?P<output>\d+) of miter "[^"]*" was asserted in frame (?P<frame>\d+)'
    r"|^No output asserted in (?P<frames>\d+) frames\. Resource limit reached "
    r"\((?P<limit>timeout|conf limit) (?P<amount>\d+)"
    r"|^(?P<proved>Property proved|Explored all reachable states)"
    r"|^(?P<undecided>Property UNDECIDED|The total of \d+ outputs asserted)", re.M)
_ABC_UNREAD = re.compile(r"^(Cannot open input file.*|.*file has failed\.|Generic file reader "
                         r"requires a known file extension.*)$", re.M)


def _abc_answer(exit_code: int | None, output: str) -> Answer:
    if "Counter-example verification has FAILED" in output:
        return Answer("wrong", "ABC's own check of its counterexample failed")
    unread = _ABC_UNREAD.search(output)
    if unread:
        return Answer("error", unread.group(0).strip())
    verdicts = list(_ABC_VERDICTS.finditer(output))
    if not verdicts:
        return Answer("unknown", "no verdict line (a counterexample, no counterexample in N "
                                 "frames, or a proof)")
    last = verdicts[-1]
    if last["frame"] is not None:
        return Answer("cex", f"counterexample in frame {last['frame']} (output "
                             f"{last['output']})", value=last["frame"])
    if last["frames"] is not None:
        if last["limit"] == "conf limit" and last["amount"] == "0":  # the frames asked for
            return Answer("bounded", f"no counterexample in {last['frames']} frames",
                          value=last["frames"])
        return Answer("unknown", f"stopped by its own {last['limit']} after "
                                 f"{last['frames']} frames")
    if last["proved"] is not None:
        return Answer("proved")
    return Answer("unknown", last.group(0))


_READERS = {"asp": _asp_answer, "maxsat": _maxsat_answer, "mus": _mus_answer,
            "spin": _spin_answer, "pnexplore": _pnexplore_answer, "hhtab": _hhtab_answer,
            "abc": _abc_answer}
