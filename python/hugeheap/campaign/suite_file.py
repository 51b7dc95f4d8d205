"""Reading a suite file (its format: suite.py's docstring) into a Suite:
`load` checks the whole file before anything runs and what spans its parts
(every {file:NAME} a support file, every instance a name of its own); the
parts are read where they are explained: the modes in modes.py, the tools in
suite_commands.py, the instances in suite_instances.py (an entry naming a
file by URL and hash in remote.py, as a set's entries are), each mistake as
toml_checker.py words it."""

from __future__ import annotations

import fnmatch
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.units import parse_duration, parse_size
from .modes import own_modes, parse_modes_option, suite_modes
from .remote import RemoteFile
from .suite import SUPPORT_FILE, Generator, Suite, Tool
from .suite_commands import parse_tools
from .suite_instances import parse_downloads, parse_files, parse_generators, parse_sets
from .toml_checker import TomlChecker

# The keys each kind of table of a suite file may hold ("" the top level).
KEYS: dict[str, set[str]] = {
    "": {"campaign", "limits", "tools", "instances", "allocators"},
    "campaign": {"modes", "repetitions", "jobs", "seed", "name"},
    "limits": {"cpu_time", "wall_time", "memory"},
    "tool": {"command", "adapter", "optional", "instances", "reads_compressed", "tool_info",
             "tool_directory"},
    "allocator": {"like", "library", "environment"},
    "instances": {"files", "generate", "sets", "download"},
    "generate": {"name", "command", "seeds", "quick"},
    "set": {"file", "names", "quick", "support"},
}


def load(path: str | Path, quick: bool = False, modes: str | None = None,
         environ: Mapping[str, str] = os.environ) -> Suite:
    """Reads and checks a suite file; raises HarnessError for the first mistake.
    quick: only the generated instances marked `quick = true` (and the files),
    as a campaign of its own (its name ends in -quick). modes: "A,B,..." in
    place of the suite's own list (built-in modes or the suite's
    [allocators.NAME]), the first the baseline. environ: the environment the
    variables a program or a glob starts with are read from, and the PATH
    programs are found in."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise HarnessError(f"{path}: cannot read the suite file ({error.strerror})") from None
    except UnicodeDecodeError as error:
        line = error.object[:error.start].count(b"\n") + 1
        raise HarnessError(f"{path}:{line}: not a suite file: not UTF-8 text (byte "
                           f"0x{error.object[error.start]:02x}); TOML files are UTF-8") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise HarnessError(f"{path}: not valid TOML: {error}; see https://toml.io for the "
                           "syntax") from None
    check = TomlChecker(path.resolve(), text, KEYS)
    check.known_keys(data, "", "")

    campaign = check.table(data, "campaign")
    check.known_keys(campaign, "campaign", "campaign")
    own = own_modes(check, check.table(data, "allocators"), path.resolve().parent)
    modes_run = parse_modes_option(modes, own) if modes is not None else \
        suite_modes(check, campaign, own)

    limits = check.table(data, "limits")
    check.known_keys(limits, "limits", "limits")
    cpu_s = _duration(check, limits, "cpu_time", required=True)
    assert cpu_s is not None
    wall_s = _duration(check, limits, "wall_time", required=False) or 2 * cpu_s
    memory: int | None = None
    if "memory" in limits:
        try:
            memory = parse_size(str(limits["memory"]), "limits.memory")
        except HarnessError as error:
            raise check.fail(str(error), 'write e.g. memory = "4GiB"', "limits", "memory") \
                from None

    tools, skipped = parse_tools(check, check.table(data, "tools"), environ)
    instances = check.table(data, "instances")
    check.known_keys(instances, "instances", "instances")
    files = parse_files(check, instances, path.resolve().parent, environ)
    generators = parse_generators(check, instances, path.resolve().parent, environ)
    downloads = parse_sets(check, instances, path.resolve().parent) + \
        parse_downloads(check, instances)
    _check_support(check, tools, generators, downloads)
    if not files and not generators and all(d.support for d in downloads):
        raise check.fail("the suite has no instances",
                         'add files = ["*.cnf"], sets, [[instances.download]] or '
                         '[[instances.generate]] under [instances]', "instances")
    # The tools' instance globs are checked against the whole suite: the quick
    # size may leave a pattern's instances out.
    _check_instance_names(check, tools, files, generators, downloads)
    if quick:
        generators = [g for g in generators if g.quick]
        downloads = [d for d in downloads if d.quick or d.support]
        if not generators and not any(not d.support for d in downloads):
            raise check.fail("--quick: no instance is marked quick",
                             "mark the small ones quick = true (or list them in a set's "
                             "quick), or leave out --quick", "instances")
    name = str(campaign.get("name", path.stem)) + ("-quick" if quick else "")
    return Suite(path=path.resolve(), text=text, name=name,
                 modes=modes_run, tools=tools, skipped_tools=skipped, files=files,
                 generators=generators, downloads=downloads, cpu_s=cpu_s, wall_s=wall_s,
                 memory_bytes=memory,
                 repetitions=check.whole_number(campaign, "repetitions", "campaign", 1),
                 jobs=check.whole_number(campaign, "jobs", "campaign", 1),
                 seed=check.whole_number(campaign, "seed", "campaign", 0, minimum=0))


def _check_instance_names(check: TomlChecker, tools: list[Tool], files: list[tuple[str, Path]],
                          generators: list[Generator], downloads: list[RemoteFile]) -> None:
    """Every instance has a name of its own, and every glob of a tool's
    instances matches one."""
    names = [name for name, _ in files] + [name for generator in generators
                                           for name in generator.instances()]
    for download in downloads:
        if download.support:
            continue
        if download.instance in names:
            raise check.fail(f"the instance '{download.instance}' ({download.origin}) has the "
                             "name of another instance of the suite", "keep one of them",
                             "instances")
        names.append(download.instance)
    for tool in tools:
        for pattern in tool.instances or []:
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                raise check.fail(f"tools.{tool.name}.instances: '{pattern}' matches no instance "
                                 f"(the instances: {', '.join(names[:5])}"
                                 f"{', ...' if len(names) > 5 else ''})",
                                 "fix the pattern", f"tools.{tool.name}", "instances")


def _duration(check: TomlChecker, limits: dict[str, Any], key: str, required: bool) -> float | None:
    if key not in limits:
        if required:
            raise check.fail(f"[limits] has no {key}",
                             f'add {key} = "60s" (PAR-2 counts an unsolved run twice it)',
                             "limits")
        return None
    value = limits[key]
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = f"{value}s"
        return parse_duration(str(value), f"limits.{key}")
    except HarnessError as error:
        raise check.fail(str(error), f'write e.g. {key} = "90s"', "limits", key) from None


def _check_support(check: TomlChecker, tools: list[Tool], generators: list[Generator],
                   downloads: list[RemoteFile]) -> None:
    """Every {file:NAME} of a tool's or a generator's command names a
    support file of the suite (a file of its sets listed under support, or a
    download marked support = true)."""
    support = sorted(d.name for d in downloads if d.support)
    commands = [(f"tools.{tool.name}", tool.argv, 0) for tool in tools] + \
        [("instances.generate", generator.argv, index)
         for index, generator in enumerate(generators)]
    for where, argv, index in commands:
        for word in argv:
            for name in SUPPORT_FILE.findall(word):
                if name not in support:
                    raise check.fail(
                        f"{where}.command names {{file:{name}}}, which is no support "
                        f"file of the suite (its support files: {', '.join(support) or 'none'})",
                        "list it under support in its set's entry of sets, or mark its "
                        "[[instances.download]] support = true", where, "command", index)
