"""What a tool answered, read by its BenchExec tool-info module
(`benchexec.tools.NAME`, or a module of one's own by its full name): the
module finds the tool's executable (in a tool directory or PATH), says its
version, its environment and, in a benchmark definition, its command line
(definition.py); after each run its `determine_result` reads the output, and
BenchExec's own `benchexec.result` puts the result into its categories
(correct, wrong, unknown, error, missing) against the task's expected
verdict, with the SV-COMP score where the property file is one of SV-COMP's.

The result becomes a hugeheap verdict: `true`, `false` or `false(SUB)` as the
module said, `done`, `unknown`, `error` (BenchExec's status, e.g. `ERROR (1)`
or `TIMEOUT`, in the detail) and `wrong` where the expected verdict says so;
BenchExec's status, category and score are kept beside it (the run's
`benchexec` record), for the report and its BenchExec exports.

Every problem with a module (it does not exist, it raises, it cannot find
its tool) is one HarnessError naming the module and the fix."""

from __future__ import annotations

import functools
import json
import os
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ...errors import HarnessError
from .adapters import TOOL_INFO, Answer

T = TypeVar("T")


class ToolNotFound(HarnessError):
    """The module cannot find its tool here (not installed, or not in the
    tool directory given)."""


@dataclass(frozen=True)
class ToolInfoRun:
    """What a run of a tool that a tool-info module reads carries to its
    worker (and, on a cluster, to its node): plain values only."""
    module: str  # the module's full name, e.g. benchexec.tools.abc
    tool_directory: str | None  # where the module looks for the tool first (None: PATH)
    workdir: str | None = None  # the directory the module wants the tool to start in
    environment: tuple[tuple[str, str], ...] = ()  # variables the module sets
    property_file: str | None = None  # absolute
    expected: str | None = None  # the expected verdict: true, false, false(SUB); None: unknown
    task: str | None = None  # the task's file (absolute), None for a task without one
    inputs: tuple[str, ...] = ()  # the task's input files (absolute)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolInfoRun:
        """From the dict asdict() made of one (a cluster task's input file)."""
        return cls(**{**data, "environment": tuple((k, v) for k, v in data["environment"]),
                      "inputs": tuple(data["inputs"])})


@dataclass(frozen=True)
class Task:
    """The run of a tool on one instance where the tool-info module composed
    its command line (a benchmark definition's task)."""
    argv: tuple[str, ...]
    run: ToolInfoRun


@dataclass(frozen=True)
class Prepared:
    """A tool-info module ready for runs: what its runs carry, the adapter
    name that says a module reads them, the executable and its version."""
    tool: Any  # the module's Tool, adapted to BaseTool2
    run: ToolInfoRun
    executable: str
    version: str

    @property
    def adapter(self) -> str:
        return TOOL_INFO + self.run.module


def module_name(name: str) -> str:
    """The module's full name: a name without a dot is one of BenchExec's."""
    return name if "." in name else f"benchexec.tools.{name}"


def guarded(module: str, what: str, call: Callable[[], T]) -> T:
    """call(), with whatever a tool-info module raises (or exits with) as one
    HarnessError naming the module and what it was asked."""
    try:
        return call()
    except HarnessError:
        raise
    except SystemExit as error:  # BenchExec's loader exits with a message
        message = str(error.code)
    except Exception as error:  # a module's bug or refusal: named, never a traceback
        message = f"{type(error).__name__}: {error}"
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    raise HarnessError(f"tool-info module {module}: {what} failed: {first}")


def load(name: str) -> Any:
    """An instance of the module's Tool class, adapted to BenchExec's current
    API (BaseTool2), as BenchExec loads it (without its container)."""
    from benchexec import model
    full = module_name(name)
    return guarded(full, "loading it", lambda: model.load_tool_info(
        full, types.SimpleNamespace(container=False))[1])


def locate(tool: Any, module: str, tool_directory: str | None) -> str:
    """The tool's executable, as the module finds it: in tool_directory, or
    else in PATH and the current directory (as BenchExec does); absolute."""
    from benchexec.tools.template import BaseTool2, ToolNotFoundException
    locator = (BaseTool2.ToolLocator(tool_directory=tool_directory) if tool_directory else
               BaseTool2.ToolLocator(use_path=True, use_current=True))
    try:
        found = tool.executable(locator)
    except ToolNotFoundException as error:
        # BenchExec's message lists the folders it searched, a line each.
        said = " ".join(line.strip() for line in str(error).splitlines()
                        if not line.startswith("You can specify"))
        raise ToolNotFound(f"tool-info module {module}: {said}; install the tool, or give "
                           "--tool-directory DIR (tool_directory in a suite), the folder the "
                           "tool is in") from None
    except Exception:
        found = guarded(module, "finding the executable", lambda: tool.executable(locator))
    return os.path.abspath(str(found))


def version(tool: Any, module: str, executable: str) -> str:
    return str(guarded(module, "asking the version", lambda: tool.version(executable)) or "")


def environment(tool: Any, module: str, executable: str) -> dict[str, str]:
    """The variables the module sets for its tool (newEnv, and additionalEnv
    appended to this environment's value); HarnessError where it asks for a
    fresh environment (keepEnv), which hugeheap's runs do not start from."""
    wanted = guarded(module, "asking its environment", lambda: tool.environment(executable))
    wanted = wanted or {}
    if wanted.get("keepEnv") is not None:
        raise HarnessError(f"tool-info module {module} asks for a fresh environment "
                           "(keepEnv), which hugeheap does not give a tool (it withholds "
                           "only the allocator variables); use a module without keepEnv")
    found = {str(k): str(v) for k, v in (wanted.get("newEnv") or {}).items()}
    for key, value in (wanted.get("additionalEnv") or {}).items():
        found[str(key)] = os.environ.get(str(key), "") + str(value)
    return found


def prepare(tool: Any, module: str, tool_directory: str | None) -> Prepared:
    """The module's executable, version, environment and working directory:
    everything its runs need but their tasks."""
    executable = locate(tool, module, tool_directory)
    run = ToolInfoRun(module, tool_directory, working_directory(tool, module, executable),
                      tuple(sorted(environment(tool, module, executable).items())))
    return Prepared(tool, run, executable, version(tool, module, executable))


def load_prepared(name: str, tool_directory: str | None) -> Prepared:
    """The module of that name (a full name, or one of BenchExec's), ready."""
    return prepare(load(name), module_name(name), tool_directory)


def working_directory(tool: Any, module: str, executable: str) -> str | None:
    """Where the module wants its tool to start (absolute), or None where it
    does not care (the run then starts in a folder of its own)."""
    wanted = str(guarded(module, "asking its working directory",
                         lambda: tool.working_directory(executable)))
    return None if os.path.normpath(wanted) == os.curdir else os.path.abspath(wanted)


@functools.cache
def _located(module: str, tool_directory: str | None) -> Any:
    """The module, loaded and told where its tool is, once per process (a
    module may keep what executable() found for determine_result)."""
    tool = load(module)
    locate(tool, module, tool_directory)
    return tool


def answer(run: ToolInfoRun, argv: list[str], exit_code: int | None, signal: int | None,
           termination_reason: str | None, output: str) -> tuple[Answer, str]:
    """The verdict of a finished run, and its BenchExec record (JSON: status,
    category, score, the expected verdict, the property and the task)."""
    from benchexec import result
    from benchexec.tools.template import BaseTool2
    from benchexec.util import ProcessExitCode
    tool = _located(run.module, run.tool_directory)
    exit = (ProcessExitCode.create(signal=signal) if signal else
            ProcessExitCode.create(value=exit_code & 0xFF) if exit_code is not None else None)
    lines = BaseTool2.RunOutput(output.splitlines(keepends=True))
    status = guarded(run.module, "determine_result", lambda: _status(
        tool, argv, exit, lines, termination_reason))
    properties = [result.Property.create(run.property_file)] if run.property_file else []
    expected = {run.property_file: result.ExpectedResult.from_str(run.expected)} \
        if run.property_file and run.expected else {}
    category = result.get_result_category(expected, status, properties)
    score = properties[0].compute_score(category, status) if properties else None
    most = properties[0].max_score(next(iter(expected.values()), None)) if properties else None
    record = {"status": status, "category": category, "score": score, "max_score": most,
              "expected": run.expected,
              "property": properties[0].name if properties else None,
              "property_file": run.property_file, "task": run.task, "inputs": list(run.inputs)}
    return _verdict(status, category, run.expected), json.dumps(record)


def _status(tool: Any, argv: list[str], exit: Any, lines: Any,
            termination_reason: str | None) -> str:
    """BenchExec's status of the run: the module's determine_result, then
    BenchExec's own rules for signals, exit codes and limits (TIMEOUT, OUT OF
    MEMORY, ERROR (1), SEGMENTATION FAULT, ...). Those rules live in a method
    of BenchExec's Run, which needs only these attributes of it: they are
    lent here rather than the rules written again."""
    from benchexec import model
    from benchexec.tools.template import BaseTool2
    run = types.SimpleNamespace(
        runSet=types.SimpleNamespace(benchmark=types.SimpleNamespace(
            tool=tool, rlimits=BaseTool2.ResourceLimits())),
        _cmdline=argv, values={})
    # The limits were enforced by hugeheap's runner, whose termination reason
    # (cputime, walltime, memory, ...) BenchExec's rules read; its double check
    # of the CPU time against the limits is not needed.
    run._is_timeout = lambda: False
    if exit is None:  # no exit code and no signal: the tool never ended by itself
        return "ERROR"
    return str(model.Run._analyze_result(run, exit, lines, termination_reason))


def _verdict(status: str, category: str, expected: str | None) -> Answer:
    from benchexec import result
    kind = result.get_result_classification(status)
    if category == result.CATEGORY_WRONG:
        return Answer("wrong", f"said {status}, expected {expected}")
    if kind != result.RESULT_CLASS_OTHER:
        return Answer(status, f"BenchExec: {status} ({category})")
    if status in (result.RESULT_DONE, result.RESULT_UNKNOWN):
        return Answer(status, f"BenchExec: {status}")
    return Answer("error", f"BenchExec: {status}")
