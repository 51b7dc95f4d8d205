"""A BenchExec benchmark definition (XML) as a campaign: `hugeheap bench
BENCHMARK.xml --modes system,hugeheap` runs it with the allocator modes as
one more dimension.

BenchExec's own parser (benchexec.model) reads the definition: its run
definitions, task sets (<include>, <includesfile> .set files, <exclude>,
<withoutfile>), task-definition YAML files with their expected verdicts,
options, property files, limits and requiredfiles. Its tool-info module
(answers/toolinfo.py) finds the tool, says its version and environment and
composes the command line of every run. Here that becomes a Suite:

  a run definition    a tool (named as the run definition; an unnamed one by
                      the tool-info module), running on its own tasks only
  a task              an instance, named by its file relative to the
                      definition's folder (a task without a file by its name)
  timelimit, memlimit the campaign's CPU and memory limits (walltimelimit
                      its wall-time limit); without a timelimit 15 minutes
  threads             the parallel runs (--jobs overrides it)

Each run is measured by hugeheap's runner and paired and interleaved with
the other modes of its task as any campaign's runs are. What BenchExec would
do and hugeheap does not (its container, a soft time limit apart from the
hard one, result files, CPU-model requirements, ...) is one note line each,
before anything runs. A definition BenchExec rejects, a tool-info module
that does not exist or raises, and a task file that is missing are one
HarnessError each."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ..errors import HarnessError
from .answers.toolinfo import Prepared, Task, guarded, module_name, prepare
from .compare import DEFAULT_CPU_LIMIT_S, choose_modes
from .suite import Suite, Tool

# BenchExec's warning for a task pattern that matches no file (its text is
# matched to turn the warning into an error where the pattern names tasks).
_NO_FILES = "No files found matching %r."


class _Warnings(logging.Handler):
    """Collects what BenchExec logs while it reads a definition."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _collected() -> Iterator[_Warnings]:
    """BenchExec's warnings, collected instead of printed."""
    handler = _Warnings()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def _read(path: Path, tool_directory: str | None) -> tuple[Any, list[logging.LogRecord]]:
    """The definition as BenchExec's parser reads it (configured by
    BenchExec's own command line, without its container), and its warnings."""
    from benchexec import util
    from benchexec.benchexec import BenchExec
    from benchexec.model import Benchmark
    argv = [str(path), "--no-container"] + (["--tool-directory", tool_directory]
                                            if tool_directory else [])
    config = BenchExec().create_argument_parser().parse_args(argv)
    with _collected() as warnings:
        try:
            benchmark = Benchmark(str(path), config, util.read_local_time())
        except SystemExit as error:  # BenchExec's parser exits with its message
            message = str(error.code)
        except Exception as error:  # BenchExecException, or a tool-info module raising
            message = f"{type(error).__name__}: {error}" if type(error).__name__ != \
                "BenchExecException" else str(error)
        else:
            return benchmark, warnings.records
    first = message.strip().splitlines()[0] if message.strip() else "rejected"
    raise HarnessError(f"{path}: BenchExec cannot read it: {first}")


def _excluding_patterns(path: Path) -> set[str]:
    """The patterns that take tasks out (<exclude>, and the lines of the
    files <excludesfile> names): one that matches no file is no problem,
    while any other pattern that matches none names a task that is missing."""
    from benchexec import util
    root = ElementTree.parse(path).getroot()
    found = {(tag.text or "").strip() for tag in root.iter("exclude")}
    for tag in root.iter("excludesfile"):
        for listed in util.expand_filename_pattern(tag.text or "", str(path.parent)):
            with open(listed, encoding="utf-8", errors="replace") as lines:
                found.update(line.strip() for line in lines)
    return found


def _notes(benchmark: Any, records: list[logging.LogRecord], path: Path) -> list[str]:
    """One line for each thing the definition asks for that hugeheap does not
    do, and each warning of BenchExec's; HarnessError for a task that is missing."""
    excluding = _excluding_patterns(path)
    notes = ["container: BenchExec runs each tool in a container by default; hugeheap runs "
             "it without one (the tool sees this machine's files and network), as "
             "`benchexec --no-container` does"]
    for record in records:
        pattern = record.args[0] if isinstance(record.args, tuple) and record.args else None
        if record.msg == _NO_FILES and str(pattern).strip() not in excluding:
            raise HarnessError(f"{path}: the pattern '{pattern}' matches no file (a task, or "
                               "a file a task needs, is missing); fix the pattern or add the "
                               "file")
        notes.append(f"BenchExec: {record.getMessage().splitlines()[0]}")
    limits = benchmark.rlimits
    if limits.cputime_hard and limits.cputime and limits.cputime_hard > limits.cputime:
        notes.append(f"hardtimelimit {limits.cputime_hard} s: hugeheap ends a run at the "
                     f"timelimit ({limits.cputime} s), with no soft limit before a hard one")
    if not limits.cputime:
        notes.append(f"timelimit: the definition sets none; hugeheap's runs get "
                     f"{DEFAULT_CPU_LIMIT_S:g} s (the report's PAR-2 needs one)")
    if limits.cpu_cores:
        notes.append(f"cpuCores {limits.cpu_cores}: each run gets the whole physical cores of "
                     "its job (--jobs divides the machine), not a number of its own")
    if benchmark.requirements.cpu_model:
        notes.append(f"<require cpuModel=\"{benchmark.requirements.cpu_model}\">: not checked; "
                     "the runs go on this machine")
    if benchmark.result_files_patterns != ["."]:
        notes.append("<resultfiles>: not kept; hugeheap keeps each run's output")
    if benchmark.columns:
        notes.append("<columns>: not extracted from the output; hugeheap's report has its own")
    return notes


def _instance_name(identifier: str, files: list[str], base: Path) -> str:
    """A task with a file is named by it relative to the definition's folder;
    one without by its name."""
    if not files:
        return identifier.strip()
    return os.path.relpath(identifier, base)


def _tasks(run_set: Any, prepared: Prepared, base: Path) -> dict[str, Task]:
    """The command and run of each task of a run definition, as the
    tool-info module composes them."""
    tasks: dict[str, Task] = {}
    for run in run_set.runs:
        argv = guarded(prepared.run.module, f"composing the command of {run.identifier}",
                       run.cmdline)
        expected = run.expected_results.get(run.propertyfile)
        files = list(run.sourcefiles)
        task = Task(tuple(argv), replace(
            prepared.run, property_file=os.path.abspath(run.propertyfile)
            if run.propertyfile else None,
            expected=str(expected) or None if expected is not None else None,
            task=os.path.abspath(run.identifier) if files else None,
            inputs=tuple(os.path.abspath(f) for f in files)))
        name = _instance_name(run.identifier, files, base)
        if tasks.get(name, task) != task:
            raise HarnessError(f"the task {name} is in two task sets of run definition "
                               f"'{run_set.real_name or ''}' with other options or "
                               "properties; hugeheap runs a task once per run definition: "
                               "give it one task set")
        tasks[name] = task
    return tasks


def load_definition(file: str | Path, modes: str | None, tool_directory: str | None
                    ) -> tuple[Suite, list[str]]:
    """The campaign of a benchmark definition under the modes named in
    'A,B,...' (default: system and every other built-in mode here), and the
    notes to show before anything runs; HarnessError for the first problem."""
    path = Path(file).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise HarnessError(f"{file}: cannot read the benchmark definition "
                           f"({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise HarnessError(f"{file}: not a benchmark definition: not UTF-8 text "
                           f"({error.reason})") from None
    chosen, left_out = choose_modes(modes)
    directory = os.path.abspath(tool_directory) if tool_directory else None
    if directory and not os.path.isdir(directory):
        raise HarnessError(f"--tool-directory {tool_directory}: no such folder")
    benchmark, records = _read(path, directory)
    try:
        prepared = prepare(benchmark.tool, module_name(benchmark.tool_module), directory)
        benchmark.executable = prepared.executable  # BenchExec composes commands with it
        notes = _notes(benchmark, records, path)
        with _collected() as later:
            tools = []
            for run_set in benchmark.run_sets:
                if not run_set.runs:
                    notes.append(f"run definition '{run_set.real_name or ''}' has no tasks: "
                                 "left out")
                    continue
                tasks = _tasks(run_set, prepared, path.parent)
                name = run_set.real_name or benchmark.tool_module.rsplit(".", 1)[-1]
                tools.append(Tool(name, [prepared.executable], prepared.adapter,
                                  prepared.executable, tool_info=prepared.run,
                                  version=prepared.version, tasks=tasks))
        notes += [f"BenchExec: {r.getMessage().splitlines()[0]}" for r in later.records]
    finally:
        guarded(benchmark.tool_module, "closing", benchmark.tool.close)
    if not tools:
        raise HarnessError(f"{path}: no run definition has a task; add <rundefinition> and "
                           "<tasks> with <include> or <withoutfile>")
    if len({t.name for t in tools}) < len(tools):
        raise HarnessError(f"{path}: two run definitions would both be the tool "
                           f"'{tools[0].name}'; name each <rundefinition>")
    files = {name: Path(task.run.task or os.devnull) for tool in tools
             for name, task in (tool.tasks or {}).items()}
    limits = benchmark.rlimits
    cpu = float(limits.cputime or DEFAULT_CPU_LIMIT_S)
    notes += [f"mode {name} cannot run here and is left out: {why}" for name, why in left_out]
    return Suite(path=path, text=text, name=benchmark.name, modes=chosen, tools=tools,
                 skipped_tools=[], files=sorted(files.items()), generators=[], downloads=[],
                 cpu_s=cpu, wall_s=float(limits.walltime or 2 * cpu), memory_bytes=limits.memory,
                 jobs=benchmark.num_of_threads), notes
