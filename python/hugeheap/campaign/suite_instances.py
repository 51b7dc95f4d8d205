"""The [instances] of a suite file (suite_file.py), checked: files named by
globs (where they are, compressed or not), generators, set files and
single downloads. This module says which instances a suite names;
instances.py makes, fetches and links them for a campaign."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.programs import ProgramNotFound, find_program
from .compression import format_problem, plain_name
from .remote import RemoteFile, parse_entry, read_set
from .suite import Generator
from .suite_commands import expand_variable, split_template
from .toml_checker import TomlChecker


def parse_files(check: TomlChecker, instances: dict[str, Any], directory: Path,
                environ: Mapping[str, str]) -> list[tuple[str, Path]]:
    """(instance name, file) of every file the globs match. The name is the
    file's path relative to the suite's folder, or, outside it, relative to
    the folder its glob starts in; without a compression suffix (x.cnf.xz
    holds the instance x.cnf)."""
    patterns = check.array(instances, "files", "instances", str,
                           "instances.files must be a list of globs", 'write files = ["*.cnf"]')
    found: dict[str, Path] = {}
    for pattern in patterns:
        expanded, where = _expand(check, pattern, directory, environ)
        hits = [Path(h) for h in sorted(glob.glob(expanded, recursive=True))]
        hits = [h for h in hits if h.is_file()]
        if not hits:
            raise check.fail(f"the glob '{pattern}' matches no file{where}",
                             "fix the pattern, or generate the instances", "instances", "files")
        for hit in hits:
            inside = hit.is_relative_to(directory)
            name = plain_name(str(hit.relative_to(directory)) if inside
                              else os.path.relpath(hit, _fixed_part(expanded)))
            if name in found and found[name].resolve() != hit.resolve():
                raise check.fail(f"{found[name]} and {hit} are both the instance '{name}'",
                                 "keep one of them (a compressed file is named without its "
                                 "compression suffix)", "instances", "files")
            problem = format_problem(hit)
            if problem:
                raise check.fail(problem, "give the file its format's suffix (none if it is "
                                 "not compressed), or leave it out", "instances", "files")
            found[name] = hit
    return sorted(found.items())


def _expand(check: TomlChecker, pattern: str, directory: Path, environ: Mapping[str, str]
            ) -> tuple[str, str]:
    """(the glob to match, where it looked, for a message): a pattern
    relative to the suite file, absolute, or starting with an environment
    variable ($SAT_BENCH/*.cnf.xz), so that a benchmark folder is used
    where it is."""
    variable, expanded = expand_variable(pattern, environ)
    if variable is None:
        if Path(pattern).is_absolute():
            return pattern, ""
        return str(directory / pattern), f" (relative to {directory})"
    if expanded is None:
        raise check.fail(f"the glob '{pattern}' needs the environment variable {variable}, "
                         "which is not set", f"export {variable}=/path/to/the/instances",
                         "instances", "files")
    if not Path(expanded).is_absolute():
        expanded = str(directory / expanded)
    return expanded, f" ({variable} is {environ[variable]})"


def _fixed_part(pattern: str) -> Path:
    """The folder a glob starts in: its path up to the first wildcard."""
    fixed = []
    for part in Path(pattern).parts[:-1]:
        if re.search(r"[*?[]", part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(pattern).parent


def parse_generators(check: TomlChecker, instances: dict[str, Any], directory: Path,
                     environ: Mapping[str, str]) -> list[Generator]:
    entries = check.array(instances, "generate", "instances", dict,
                          "instances.generate must be tables", "write [[instances.generate]]")
    generators: list[Generator] = []
    names: set[str] = set()
    for index, values in enumerate(entries):
        where = "instances.generate"
        check.known_keys(values, "generate", where, index)
        name = check.string(values, "name", where, index, example="random-{seed}.cnf")
        argv = split_template(check, check.string(values, "command", where, index,
                                                  example="generator {seed}"),
                              where, {"seed"}, index)
        seeds = values.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in seeds):
            raise check.fail(f"{where}.seeds must be a list of whole numbers",
                             "write seeds = [1, 2, 3]", where, "seeds", index)
        if len(seeds) > 1 and "{seed}" not in name:
            raise check.fail(f"{where}.name '{name}' gives every seed the same name",
                             "put {seed} in the name", where, "name", index)
        if "/" in name or name.startswith("."):
            raise check.fail(f"{where}.name '{name}' must be a plain file name",
                             "leave out directories", where, "name", index)
        for seed in seeds:
            instance = plain_name(name.replace("{seed}", str(seed)))
            if instance in names:
                raise check.fail(f"two generated instances are both called '{instance}'",
                                 "give each generator its own name", where, "name", index)
            names.add(instance)
        try:
            program = find_program(argv[0], directory, environ)
        except ProgramNotFound as error:
            raise check.fail(f"the generator {error.why}", error.fix, where, "command",
                             index) from None
        quick = values.get("quick", False)
        if not isinstance(quick, bool):
            raise check.fail(f"{where}.quick must be true or false", "write quick = true",
                             where, "quick", index)
        generators.append(Generator(name, argv, list(seeds), program, quick))
    return generators


def _globs(check: TomlChecker, value: object, where: str, key: str, index: int) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise check.fail(f"{where}.{key} must be a list of instance-name globs",
                         f'write {key} = ["x*.cnf"]', "instances", "sets", index)
    return value


def parse_sets(check: TomlChecker, instances: dict[str, Any], directory: Path
               ) -> list[RemoteFile]:
    """The files of the set files the suite names (remote.py reads them),
    those its names select, marked quick where its quick says."""
    entries = instances.get("sets", [])
    if not isinstance(entries, list):
        raise check.fail("instances.sets must be a list of set files",
                         'write sets = ["sets/sat.toml"]', "instances", "sets")
    chosen: list[RemoteFile] = []
    for index, entry in enumerate(entries):
        where = f"instances.sets[{index}]"
        if isinstance(entry, str):
            entry = {"file": entry}
        if not isinstance(entry, dict):
            raise check.fail(f"{where} must be a path or a table",
                             'write "sets/sat.toml" or { file = "sets/sat.toml", names = '
                             '["x*"] }', "instances", "sets")
        check.known_keys(entry, "set", "instances")
        file = entry.get("file")
        if not isinstance(file, str) or not file:
            raise check.fail(f"{where} has no file", 'write { file = "sets/sat.toml" }',
                             "instances", "sets")
        set_path = Path(file) if Path(file).is_absolute() else directory / file
        try:
            members = read_set(set_path)
        except HarnessError as error:
            raise check.fail(str(error), "fix the set file or the path (relative to the suite "
                             "file)", "instances", "sets") from None
        names = _globs(check, entry.get("names", ["*"]), where, "names", index)
        quick = _globs(check, entry.get("quick", []), where, "quick", index)
        support = _globs(check, entry.get("support", []), where, "support", index)
        for pattern in names + quick + support:
            if not any(fnmatch.fnmatchcase(m.instance, pattern) for m in members):
                raise check.fail(f"{where}: '{pattern}' matches no instance of {file}",
                                 "fix the pattern", "instances", "sets")
        for member in members:
            if any(fnmatch.fnmatchcase(member.instance, p) for p in support):
                chosen.append(replace(member, support=True))
            elif any(fnmatch.fnmatchcase(member.instance, p) for p in names):
                chosen.append(replace(member, quick=any(
                    fnmatch.fnmatchcase(member.instance, p) for p in quick)))
    return chosen


def parse_downloads(check: TomlChecker, instances: dict[str, Any]) -> list[RemoteFile]:
    """[[instances.download]]: each entry read as a set's are (remote.py),
    named by the line it starts on."""
    entries = check.array(instances, "download", "instances", dict,
                          "instances.download must be tables", "write [[instances.download]]")
    return [parse_entry(values, check.where("instances.download", None, index))
            for index, values in enumerate(entries)]
