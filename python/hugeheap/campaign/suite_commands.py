"""The commands of a suite file (suite_file.py): its [tools.NAME], each a
command template with the program it runs and how its answers are read (an
adapter, or a BenchExec tool-info module); the template of any command, a
tool's or a generator's; and the environment variable a program or a glob
may start with ($OLD_BUILD/bin/tool, $SAT_BENCH/*.cnf.xz), read from the
environment load is given."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.programs import ProgramNotFound, find_program
from .answers.adapters import ADAPTERS, check_adapter_name
from .answers.toolinfo import Prepared, ToolNotFound, load_prepared
from .compression import FORMATS
from .suite import Tool
from .toml_checker import TomlChecker

# The placeholders of a tool's command ({file:NAME} aside): filled per run.
PLACEHOLDERS = {"instance", "model"}
_VARIABLE = re.compile(r"^\$(?:\{(?P<braced>\w+)\}|(?P<plain>\w+))", re.A)


def expand_variable(word: str, environ: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The environment variable word starts with ($NAME or ${NAME}), or None;
    and word with it expanded (word itself where it starts with none), or
    None where the variable is not set."""
    variable = _VARIABLE.match(word)
    if variable is None:
        return None, word
    name = variable["braced"] or variable["plain"]
    value = environ.get(name)
    return name, (value + word[variable.end():] if value else None)


def split_template(check: TomlChecker, command: str, table: str, allowed: set[str],
                   index: int = 0) -> list[str]:
    """A command template's words; its placeholders must be among allowed
    (or name a support file, {file:NAME}: suite_file.py checks the NAME)."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise check.fail(f"{table}.command cannot be split into words ({error})",
                         "close the quote", table, "command", index) from None
    for name in re.findall(r"\{([^}]*)\}", command):
        if name not in allowed and not name.startswith("file:"):
            raise check.fail(f"{table}.command has an unknown placeholder {{{name}}}",
                             f"the placeholders there are {', '.join(sorted(allowed))}",
                             table, "command", index)
    return argv


def parse_tools(check: TomlChecker, table: dict[str, Any], environ: Mapping[str, str]
                ) -> tuple[list[Tool], list[tuple[str, str]]]:
    """The tools of [tools.NAME], and the optional ones that cannot run here
    (name, why); HarnessError for the first mistake, or where no tool can
    run."""
    if not table:
        raise check.fail("the suite names no tools",
                         'add [tools.NAME] with command = "solver {instance}" and adapter',
                         "")
    tools: list[Tool] = []
    skipped: list[tuple[str, str]] = []
    for name, values in table.items():
        where = f"tools.{name}"
        if not isinstance(values, dict):
            raise check.fail(f"'{where}' must be a table", f"write it as [{where}]", "tools",
                             name)
        check.known_keys(values, "tool", where)
        command = check.string(values, "command", where, example="solver {instance}")
        argv = split_template(check, command, where, PLACEHOLDERS)
        if "{instance}" not in command:
            raise check.fail(f"{where}.command does not say where the instance goes",
                             "put {instance} in it", where, "command")
        module = _tool_info(check, values, where)
        adapter = module.adapter if isinstance(module, Prepared) else values.get("adapter",
                                                                                 "exitcode")
        try:
            check_adapter_name(str(adapter))
        except HarnessError as error:
            raise check.fail(str(error), f'write adapter = "{ADAPTERS[0]}" (or one of '
                             f'{", ".join(ADAPTERS[1:])}, "regex:PATTERN")', where,
                             "adapter") from None
        optional = values.get("optional", False)
        if not isinstance(optional, bool):
            raise check.fail(f"{where}.optional must be true or false", "write optional = true",
                             where, "optional")
        try:
            program = _program(argv[0], check.path.parent, environ)
        except ProgramNotFound as error:
            if optional:
                skipped.append((name, error.why))
                continue
            raise check.fail(f"tool '{name}': {error.why}",
                             f"{error.fix} (or mark the tool optional = true)", where,
                             "command") from None
        if isinstance(module, str):  # its tool-info module finds no tool; it is optional
            skipped.append((name, module))
            continue
        selection = values.get("instances")
        if isinstance(selection, str):
            selection = [selection]
        if selection is not None and (not isinstance(selection, list) or not selection or
                                      not all(isinstance(p, str) and p for p in selection)):
            raise check.fail(f"{where}.instances must be a list of instance-name globs",
                             'write instances = ["*.cnf"] (or leave it out: all instances)',
                             where, "instances")
        reads = values.get("reads_compressed", [])
        formats = sorted(set(FORMATS.values()))
        if not isinstance(reads, list) or not all(r in formats for r in reads):
            raise check.fail(f"{where}.reads_compressed must list formats among "
                             f"{', '.join(formats)}", 'write e.g. reads_compressed = ["gzip"]',
                             where, "reads_compressed")
        prepared = module if isinstance(module, Prepared) else None
        tools.append(Tool(name, argv, str(adapter), program, selection, tuple(sorted(reads)),
                          tool_info=prepared.run if prepared else None,
                          version=prepared.version if prepared else None))
    if not tools:
        raise check.fail("none of the suite's tools is installed: "
                         + "; ".join(f"{n}: {why}" for n, why in skipped),
                         "install at least one of them", "tools")
    return tools, skipped


def _program(word: str, directory: Path, environ: Mapping[str, str]) -> str:
    """The program a tool's command runs (measure/programs.py), relative to
    the suite's folder, where its first word may start with an environment
    variable; ProgramNotFound where it cannot run, the variable not being
    set among the reasons."""
    variable, program = expand_variable(word, environ)
    if program is None:
        raise ProgramNotFound(f"the environment variable {variable} is not set (the program "
                              f"is {word})", f"set {variable}")
    return find_program(program, directory, environ)


def _tool_info(check: TomlChecker, values: dict[str, Any], where: str
               ) -> Prepared | str | None:
    """The tool-info module a tool names (tool_info), ready; why it cannot
    run here (its tool is not found, for an optional tool to be skipped);
    None where the tool names none."""
    name = values.get("tool_info")
    if name is None:
        if "tool_directory" in values:
            raise check.fail(f"{where}.tool_directory is for a tool with tool_info",
                             'add tool_info = "NAME" (a BenchExec tool-info module)', where,
                             "tool_directory")
        return None
    if not isinstance(name, str) or not name.strip():
        raise check.fail(f"{where}.tool_info must name a BenchExec tool-info module",
                         'write e.g. tool_info = "cbmc"', where, "tool_info")
    if "adapter" in values:
        raise check.fail(f"{where} has both adapter and tool_info", "keep one: the "
                         "tool-info module reads the answers instead of an adapter", where,
                         "adapter")
    directory = values.get("tool_directory")
    if directory is not None and (not isinstance(directory, str) or not directory):
        raise check.fail(f"{where}.tool_directory must be a folder", 'write tool_directory = '
                         '"tools/NAME" (relative to the suite file)', where, "tool_directory")
    try:
        return load_prepared(name, str(check.path.parent / directory) if directory else None)
    except ToolNotFound as error:
        if values.get("optional") is True:
            return str(error)
        raise check.fail(str(error), "or mark the tool optional = true", where,
                         "tool_info") from None
    except HarnessError as error:
        raise check.fail(str(error), "or fix tool_info", where, "tool_info") from None
