"""The suite file of a campaign: which tools, which allocator modes, which
instances, under which limits, how often.

    [campaign]
    modes = ["system", "hugeheap"]     # the first is the baseline
    repetitions = 3                    # optional, default 1
    jobs = 1                           # optional, parallel runs on disjoint cores
    seed = 1                           # optional, seeds the shuffled mode order

    [limits]
    cpu_time = "60s"                   # required: PAR-2 counts an unsolved run twice this
    wall_time = "120s"                 # optional, default twice cpu_time
    memory = "4GiB"                    # optional

    [tools.minisat]
    command = "minisat -verb=0 {instance} {model}"   # {model}: a file for the model;
                                       # {file:NAME}: a support file of the sets (below)
    adapter = "sat"                    # how to read its answer: adapters.py lists them
    optional = true                    # if it is not installed: named, then skipped
    instances = ["*.cnf"]              # optional: the instances it runs on (default all)
    reads_compressed = ["gzip"]        # optional: formats it is given compressed

    [tools.cbmc]
    command = "cbmc --32 {instance}"
    tool_info = "cbmc"                 # instead of adapter: BenchExec's tool-info module
                                       # reads its answers (answers/toolinfo.py)
    tool_directory = "tools/cbmc"      # optional: where the module finds the tool first

    [allocators.hugeheap-old]          # optional: modes of one's own, named in modes
    like = "hugeheap"                  # a built-in mode
    library = "old/libhugeheap.so"     # another library (relative to this file)
    environment = { HUGEHEAP_THP = "off" }   # more environment for the tool

    [instances]
    files = ["cnf/*.cnf", "$SAT_BENCH/*.cnf.xz"]   # globs relative to this file, absolute,
                                       # or starting with an environment variable

    sets = ["../sets/sat.toml",        # set files (remote.py): a manifest of files named by
            { file = "track.uri", names = ["00*"], quick = ["00a*"] }]   # URL and hash, or a
                                       # list of GBD URLs; names: which of its instances
                                       # (globs, default all); quick: those in the quick size;
                                       # support: files that are no instance but that the
                                       # tools read beside each, as {file:NAME} (an ASP
                                       # encoding, a logic program's rules)

    [[instances.download]]             # one file named by URL and hash (cache.py fetches it)
    name = "x.cnf.xz"                  # its file name (x.cnf.xz holds the instance x.cnf)
    url = "https://example.org/x.cnf.xz"
    sha256 = "..."                     # or gbd = "HASH" alone: a Global Benchmark Database file
    quick = true                       # optional

    [[instances.generate]]
    name = "random-{seed}.cnf"
    command = "hh-randksat 5000 21000 3 {seed}"  # run in this file's directory; {file:NAME}:
                                       # a support file it reads (a model it compiles)
    seeds = [1, 2, 3]
    quick = true                       # optional: in the quick size (`hugeheap bench --quick`)

Each run starts in an empty directory of its own (what a tool writes into
its working directory goes with the run); `{instance}` and `{model}` are
absolute paths, the program is found relative to this file or in PATH. A
program may start with an environment variable (`$OLD_BUILD/bin/tool`, to
compare with another build of a tool given when the campaign starts): an
optional tool whose variable is not set is skipped, saying so.
A generator writes its instance to standard output; an instance that is a
program (it starts with an ELF header or `#!`) is made executable, so that a
tool's command can run it (`command = "env {instance}"`).

An instance file (or a generator's output) named with a compression suffix
(.gz, .bz2, .xz, .lzma) is that instance compressed: it is named without the
suffix (x.cnf.xz holds the instance x.cnf), and each run of a tool that does
not list the format in reads_compressed gets it decompressed into the run's
own folder before the run starts, outside what is measured.

Everything is checked before anything runs, and each mistake is one
HarnessError naming the file, the line where there is one, and the fix."""

from __future__ import annotations

import difflib
import fnmatch
import glob
import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.allocators import MODES, AllocatorMode, derive, resolve
from ..measure.units import parse_duration, parse_size
from .answers.adapters import ADAPTERS, check_adapter_name
from .answers.toolinfo import Prepared, Task, ToolInfoRun, ToolNotFound, load_prepared
from .compression import FORMATS, format_problem, plain_name
from .gbd import gbd_url
from .remote import (
    RemoteFile,
    check_gbd,
    check_name,
    check_sha256,
    check_size,
    check_url,
    read_set,
)

PLACEHOLDERS = {"instance", "model"}
# {file:NAME} in a tool's or a generator's command: a support file of the suite.
SUPPORT_FILE = re.compile(r"\{file:([^}]*)\}")
_KEYS: dict[str, set[str]] = {
    "": {"campaign", "limits", "tools", "instances", "allocators"},
    "campaign": {"modes", "repetitions", "jobs", "seed", "name"},
    "limits": {"cpu_time", "wall_time", "memory"},
    "tool": {"command", "adapter", "optional", "instances", "reads_compressed", "tool_info",
             "tool_directory"},
    "allocator": {"like", "library", "environment"},
    "instances": {"files", "generate", "sets", "download"},
    "generate": {"name", "command", "seeds", "quick"},
    "download": {"name", "url", "sha256", "gbd", "size", "quick", "support"},
    "set": {"file", "names", "quick", "support"},
}


@dataclass
class Tool:
    name: str
    argv: list[str]  # the command template, split; {instance} and {model} filled per run
    adapter: str
    program: str  # the executable, resolved
    instances: list[str] | None = None  # globs of the instance names it runs on; None: all
    reads_compressed: tuple[str, ...] = ()  # formats it is given compressed (compression.py)
    # Where a BenchExec tool-info module reads its answers (answers/toolinfo.py):
    # what its runs carry, and its version as the module says it; and where
    # the module composed the command of each instance (a benchmark
    # definition, definition.py), each instance's task: the tool runs on those.
    tool_info: ToolInfoRun | None = None
    version: str | None = None
    tasks: dict[str, Task] | None = None

    def runs_on(self, instance: str) -> bool:
        if self.tasks is not None:
            return instance in self.tasks
        return self.instances is None or any(fnmatch.fnmatchcase(instance, pattern)
                                             for pattern in self.instances)

    def command_for(self, instance: str) -> tuple[tuple[str, ...], ToolInfoRun | None]:
        """The command of the tool's run on an instance ({instance} and {model}
        still to fill in), and what the run carries for a tool-info module."""
        if self.tasks is not None:
            task = self.tasks[instance]
            return task.argv, task.run
        return (self.program, *self.argv[1:]), self.tool_info


@dataclass
class Generator:
    name: str  # with {seed}
    argv: list[str]  # with {seed}, as written
    seeds: list[int]
    program: str  # argv[0], resolved
    quick: bool = False  # in the quick size


@dataclass
class Suite:
    path: Path
    text: str
    name: str
    modes: list[AllocatorMode]  # resolved once, here; the first is the baseline
    tools: list[Tool]
    skipped_tools: list[tuple[str, str]]  # (name, why): optional tools not installed
    files: list[tuple[str, Path]]  # (instance name, path)
    generators: list[Generator]
    downloads: list[RemoteFile]  # named by URL and hash, fetched into the instance cache
    cpu_s: float
    wall_s: float
    memory_bytes: int | None
    repetitions: int = 1
    jobs: int = 1
    seed: int = 0

    @property
    def directory(self) -> Path:
        return self.path.parent

    def choose_tools(self, names: str) -> set[str]:
        """The tools named in 'A,B' (`hugeheap bench --tools`); HarnessError
        for a name that is no tool of the suite, or one not installed here."""
        chosen = {name.strip() for name in names.split(",") if name.strip()}
        skipped = dict(self.skipped_tools)
        known = [tool.name for tool in self.tools]
        for name in sorted(chosen):
            if name in skipped:
                raise HarnessError(f"--tools {names}: tool '{name}' cannot run here: "
                                   f"{skipped[name]}")
            if name not in known:
                raise HarnessError(f"--tools {names}: {self.path.name} has no tool '{name}' "
                                   f"(its tools: {', '.join(known + list(skipped))})")
        if not chosen:
            raise HarnessError(f"--tools {names!r}: names no tool (example: --tools "
                               f"{known[0]})")
        return chosen


class _Locator:
    """Lines of tables and keys in the TOML text, for error messages
    (tomllib keeps no positions)."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")

    def __init__(self, text: str) -> None:
        self.entries: list[tuple[str, int, str | None, int]] = []  # table, index, key, line
        table, counts = "", {}  # type: str, dict[str, int]
        index = 0
        for number, line in enumerate(text.splitlines(), 1):
            header = self._HEADER.match(line)
            if header:
                table = header.group(2).replace('"', "").replace("'", "")
                index = counts.get(table, 0)
                counts[table] = index + 1
                self.entries.append((table, index, None, number))
                continue
            key = self._KEY.match(line)
            if key:
                full = key.group(1).replace('"', "").replace("'", "")
                *prefix, last = full.split(".")
                where = ".".join([table, *prefix]) if table else ".".join(prefix)
                self.entries.append((where, index, last, number))

    def line(self, table: str, key: str | None = None, index: int = 0) -> int | None:
        for where, position, name, number in self.entries:
            if where == table and name == key and position == index:
                return number
        if key is not None:  # the key is missing: point at its table
            return self.line(table, None, index)
        return None


class _Checker:
    def __init__(self, path: Path, text: str) -> None:
        self.path, self.locate = path, _Locator(text)

    def fail(self, problem: str, fix: str, table: str = "", key: str | None = None,
             index: int = 0) -> HarnessError:
        line = self.locate.line(table, key, index) if (table or key) else None
        where = f"{self.path}:{line}" if line else str(self.path)
        return HarnessError(f"{where}: {problem}; {fix}")

    def known_keys(self, values: dict[str, Any], kind: str, table: str, index: int = 0) -> None:
        for key in values:
            if key not in _KEYS[kind]:
                close = difflib.get_close_matches(key, sorted(_KEYS[kind]), n=1)
                fix = (f"did you mean '{close[0]}'?" if close
                       else f"the keys allowed there are: {', '.join(sorted(_KEYS[kind]))}")
                place = f"[{table}]" if table else "the top level"
                raise self.fail(f"unknown key '{key}' in {place}", fix, table, key, index)

    def table(self, values: dict[str, Any], key: str, parent: str = "") -> dict[str, Any]:
        value = values.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"'{key}' must be a table", f"write it as [{key}]", parent, key)
        return value

    def whole_number(self, values: dict[str, Any], key: str, table: str, default: int,
                     minimum: int = 1) -> int:
        value = values.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(f"{table}.{key} = {value!r} is not a whole number of at least "
                            f"{minimum}", f"write e.g. {key} = {max(minimum, default)}",
                            table, key)
        return value

    def string(self, values: dict[str, Any], key: str, table: str, index: int = 0,
               example: str = "...") -> str:
        if key not in values:
            raise self.fail(f"[{table}] has no '{key}'", f'add {key} = "{example}"', table,
                            None, index)
        value = values[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{table}.{key} must be a non-empty string",
                            f'write {key} = "{example}"', table, key, index)
        return value


def load(path: str | Path, quick: bool = False, modes: str | None = None) -> Suite:
    """Reads and checks a suite file; raises HarnessError for the first mistake.
    quick: only the generated instances marked `quick = true` (and the files),
    as a campaign of its own (its name ends in -quick). modes: "A,B,..." in
    place of the suite's own list (built-in modes or the suite's
    [allocators.NAME]), the first the baseline."""
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
    check = _Checker(path.resolve(), text)
    check.known_keys(data, "", "")

    campaign = check.table(data, "campaign")
    check.known_keys(campaign, "campaign", "campaign")
    own_modes = _own_modes(check, check.table(data, "allocators"), path.resolve().parent)
    if modes is not None:
        campaign = dict(campaign, modes=[name.strip() for name in modes.split(",")])
    modes_run = _modes(check, campaign, own_modes, modes is not None)

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

    tools, skipped = _tools(check, check.table(data, "tools"))
    instances = check.table(data, "instances")
    check.known_keys(instances, "instances", "instances")
    files = _files(check, instances, path.resolve().parent)
    generators = _generators(check, instances, path.resolve().parent)
    downloads = _sets(check, instances, path.resolve().parent) + _downloads(check, instances)
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


def _check_instance_names(check: _Checker, tools: list[Tool], files: list[tuple[str, Path]],
                          generators: list[Generator], downloads: list[RemoteFile]) -> None:
    """Every instance has a name of its own, and every glob of a tool's
    instances matches one."""
    names = [name for name, _ in files] + [plain_name(generator.name.replace("{seed}", str(seed)))
                                           for generator in generators
                                           for seed in generator.seeds]
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


def _modes(check: _Checker, campaign: dict[str, Any],
           own: dict[str, AllocatorMode], from_option: bool) -> list[AllocatorMode]:
    """The modes to run: campaign.modes, or the list --modes gave in its place
    (from_option: its mistakes are named as the option's, not the file's)."""
    modes = campaign.get("modes")

    def fail(problem: str, fix: str) -> HarnessError:
        if from_option:
            return HarnessError(f"--modes {','.join(modes or [])}: {problem}; {fix}")
        return check.fail(problem, fix, "campaign", "modes")

    if modes is None:
        raise check.fail("[campaign] names no allocator modes",
                         'add modes = ["system", "hugeheap"] (the first is the baseline)',
                         "campaign")
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
        raise check.fail("campaign.modes must be a list of mode names",
                         'write modes = ["system", "hugeheap"]', "campaign", "modes")
    known = MODES + sorted(own)
    resolved = []
    for mode in modes:
        if mode not in known:
            close = difflib.get_close_matches(mode, known, n=1)
            raise fail(f"unknown allocator mode '{mode}'",
                       f"did you mean '{close[0]}'?" if close else
                       f"known: {', '.join(known)}, or define it under [allocators.NAME]")
        if modes.count(mode) > 1:
            raise fail(f"mode '{mode}' is named twice", "name each mode once")
        found = own[mode] if mode in own else resolve(mode)
        if found.missing:
            raise fail(f"mode '{mode}' cannot run here: {found.missing}",
                       "or remove it from modes")
        resolved.append(found)
    return resolved


def _own_modes(check: _Checker, table: dict[str, Any], directory: Path
               ) -> dict[str, AllocatorMode]:
    """[allocators.NAME]: a built-in mode with another library or more
    environment, e.g. a second build of hugeheap to compare with."""
    own: dict[str, AllocatorMode] = {}
    for name, values in table.items():
        where = f"allocators.{name}"
        if not isinstance(values, dict):
            raise check.fail(f"'{where}' must be a table", f"write it as [{where}]",
                             "allocators", name)
        if name in MODES:
            raise check.fail(f"'{name}' is a built-in mode", "give your mode another name",
                             where)
        check.known_keys(values, "allocator", where)
        like = check.string(values, "like", where, example="hugeheap")
        if like not in MODES:
            raise check.fail(f"{where}.like = '{like}' is not a built-in mode",
                             f"write one of {', '.join(MODES)}", where, "like")
        library = values.get("library")
        if library is not None and (not isinstance(library, str) or not library):
            raise check.fail(f"{where}.library must be a path", 'write library = "lib.so"',
                             where, "library")
        environment = values.get("environment", {})
        if not isinstance(environment, dict) or not all(
                isinstance(v, str) for v in environment.values()):
            raise check.fail(f"{where}.environment must be a table of strings",
                             'write environment = { HUGEHEAP_THP = "off" }', where,
                             "environment")
        try:
            own[name] = derive(name, like, directory / library if library else None,
                               environment)
        except HarnessError as error:
            # A mode the campaign does not run may lack its library (a build
            # of an earlier revision, made only to compare with): it is an
            # error where it is named among the modes.
            own[name] = AllocatorMode(name=name, like=like, missing=f"{where}: {error}")
    return own


def _duration(check: _Checker, limits: dict[str, Any], key: str, required: bool) -> float | None:
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


def _split_template(check: _Checker, command: str, table: str, allowed: set[str],
                    index: int = 0) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise check.fail(f"{table}.command cannot be split into words ({error})",
                         "close the quote", table, "command", index) from None
    for name in re.findall(r"\{([^}]*)\}", command):
        # {file:NAME}: a support file, in a tool's or a generator's command;
        # _check_support checks the NAME.
        if name not in allowed and not name.startswith("file:"):
            raise check.fail(f"{table}.command has an unknown placeholder {{{name}}}",
                             f"the placeholders there are {', '.join(sorted(allowed))}",
                             table, "command", index)
    return argv


def _tools(check: _Checker, table: dict[str, Any]) -> tuple[list[Tool], list[tuple[str, str]]]:
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
        argv = _split_template(check, command, where, PLACEHOLDERS)
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
        named, unset = _named_program(argv[0])
        program = None if unset else _find_program(named, check.path.parent)
        if program is None or isinstance(module, str):
            why = (f"the environment variable {unset} is not set (the program is {argv[0]})"
                   if unset else _not_found(named, check.path.parent) if program is None
                   else str(module))
            if optional:
                skipped.append((name, why))
                continue
            fix = (f"set {unset} (or mark the tool optional = true)" if unset
                   else "make it executable (chmod +x)" if "not executable" in why
                   else f"install it (Debian: apt-get install {argv[0]}), give its full path, "
                   "or mark the tool optional = true" if "/" not in argv[0]
                   else "fix the path (relative to the suite file), or mark the tool "
                   "optional = true")
            raise check.fail(f"tool '{name}': {why}", fix, where, "command")
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


def _tool_info(check: _Checker, values: dict[str, Any], where: str) -> Prepared | str | None:
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


def _named_program(word: str) -> tuple[str, str | None]:
    """A command's program with the environment variable it starts with
    expanded, and None; or the word and the variable's name where it is not
    set."""
    variable = _VARIABLE.match(word)
    if variable is None:
        return word, None
    name = variable["braced"] or variable["plain"]
    value = os.environ.get(name)
    if not value:
        return word, name
    return value + word[variable.end():], None


def _candidate(program: str, directory: Path) -> Path:
    """Where a program given with a path is (relative to the suite file)."""
    return Path(program) if Path(program).is_absolute() else directory / program


def _find_program(program: str, directory: Path) -> str | None:
    if "/" in program:
        candidate = _candidate(program, directory)
        return str(candidate.resolve()) if os.access(candidate, os.X_OK) and \
            candidate.is_file() else None
    return shutil.which(program)


def _not_found(program: str, directory: Path) -> str:
    """Why _find_program found nothing: no such file, or one that is not
    executable."""
    if "/" in program:
        candidate = _candidate(program, directory)
        if candidate.is_file():
            return f"'{program}' is not executable ({candidate})"
        return f"'{program}' does not exist ({candidate})"
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and (Path(folder) / program).is_file():
            return f"'{program}' in PATH is not executable ({Path(folder) / program})"
    return f"'{program}' is not installed (not found in PATH)"


_VARIABLE = re.compile(r"^\$(?:\{(?P<braced>\w+)\}|(?P<plain>\w+))", re.A)


def _expand(check: _Checker, pattern: str, directory: Path) -> tuple[str, str]:
    """(the glob to match, where it looked, for a message): a pattern
    relative to the suite file, absolute, or starting with an environment
    variable ($SAT_BENCH/*.cnf.xz), so that a benchmark folder is used
    where it is."""
    variable = _VARIABLE.match(pattern)
    if variable is None:
        if Path(pattern).is_absolute():
            return pattern, ""
        return str(directory / pattern), f" (relative to {directory})"
    name = variable["braced"] or variable["plain"]
    value = os.environ.get(name)
    if not value:
        raise check.fail(f"the glob '{pattern}' needs the environment variable {name}, which "
                         "is not set", f"export {name}=/path/to/the/instances", "instances",
                         "files")
    expanded = value + pattern[variable.end():]
    if not Path(expanded).is_absolute():
        expanded = str(directory / expanded)
    return expanded, f" ({name} is {value})"


def _fixed_part(pattern: str) -> Path:
    """The folder a glob starts in: its path up to the first wildcard."""
    fixed = []
    for part in Path(pattern).parts[:-1]:
        if re.search(r"[*?[]", part):
            break
        fixed.append(part)
    return Path(*fixed) if fixed else Path(pattern).parent


def _files(check: _Checker, instances: dict[str, Any], directory: Path) -> list[tuple[str, Path]]:
    """(instance name, file) of every file the globs match. The name is the
    file's path relative to the suite's folder, or, outside it, relative to
    the folder its glob starts in; without a compression suffix (x.cnf.xz
    holds the instance x.cnf)."""
    patterns = instances.get("files", [])
    if isinstance(patterns, str):
        patterns = [patterns]
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise check.fail("instances.files must be a list of globs", 'write files = ["*.cnf"]',
                         "instances", "files")
    found: dict[str, Path] = {}
    for pattern in patterns:
        expanded, where = _expand(check, pattern, directory)
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


def _generators(check: _Checker, instances: dict[str, Any], directory: Path) -> list[Generator]:
    entries = instances.get("generate", [])
    if isinstance(entries, dict):
        entries = [entries]
    generators: list[Generator] = []
    names: set[str] = set()
    for index, values in enumerate(entries):
        where = "instances.generate"
        if not isinstance(values, dict):
            raise check.fail("instances.generate must be tables", "write [[instances.generate]]",
                             "instances", "generate")
        check.known_keys(values, "generate", where, index)
        name = check.string(values, "name", where, index, example="random-{seed}.cnf")
        argv = _split_template(check, check.string(values, "command", where, index,
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
        program = _find_program(argv[0], directory)
        if program is None:
            why = _not_found(argv[0], directory)
            raise check.fail(f"the generator {why}",
                             "make it executable (chmod +x)" if "not executable" in why else
                             "build or install it, or give its path relative to the suite "
                             "file", where, "command", index)
        quick = values.get("quick", False)
        if not isinstance(quick, bool):
            raise check.fail(f"{where}.quick must be true or false", "write quick = true",
                             where, "quick", index)
        generators.append(Generator(name, argv, list(seeds), program, quick))
    return generators


def _globs(check: _Checker, value: object, where: str, key: str, index: int) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise check.fail(f"{where}.{key} must be a list of instance-name globs",
                         f'write {key} = ["x*.cnf"]', "instances", "sets", index)
    return value


def _sets(check: _Checker, instances: dict[str, Any], directory: Path) -> list[RemoteFile]:
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


def _check_support(check: _Checker, tools: list[Tool], generators: list[Generator],
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


def _downloads(check: _Checker, instances: dict[str, Any]) -> list[RemoteFile]:
    entries = instances.get("download", [])
    if isinstance(entries, dict):
        entries = [entries]
    if not isinstance(entries, list):
        raise check.fail("instances.download must be tables", "write [[instances.download]]",
                         "instances", "download")
    files: list[RemoteFile] = []
    for index, values in enumerate(entries):
        where = "instances.download"
        if not isinstance(values, dict):
            raise check.fail("instances.download must be tables",
                             "write [[instances.download]]", "instances", "download")
        check.known_keys(values, "download", where, index)
        line = check.locate.line(where, None, index)
        origin = f"{check.path}:{line}" if line else str(check.path)
        gbd = check_gbd(values["gbd"], origin) if "gbd" in values else None
        if gbd is None and "sha256" not in values:
            raise HarnessError(f"{origin}: [[instances.download]] has neither sha256 nor "
                               "gbd, so nothing would verify what it downloads; add "
                               "sha256 = \"...\" (the file's sha256sum)")
        sha256 = check_sha256(values["sha256"], origin) if "sha256" in values else None
        if "url" not in values and sha256 is not None:
            raise HarnessError(f"{origin}: [[instances.download]] has no url; add url = "
                               "\"https://...\"")
        url = values.get("url") or gbd_url(str(gbd))
        if not isinstance(url, str):
            raise HarnessError(f"{origin}: url must be a string")
        check_url(url, origin)
        name = values.get("name") or (f"{gbd}.cnf.xz" if gbd else
                                      Path(url.split("?")[0]).name)
        if not isinstance(name, str):
            raise HarnessError(f"{origin}: name must be a file name")
        check_name(name, origin)
        size = check_size(values.get("size"), origin)
        flags = {key: values.get(key, False) for key in ("quick", "support")}
        for key, flag in flags.items():
            if not isinstance(flag, bool):
                raise HarnessError(f"{origin}: {key} must be true or false")
        files.append(RemoteFile(name=name, url=url, sha256=sha256,
                                gbd=gbd if sha256 is None else None, size=size,
                                origin=origin, quick=flags["quick"], support=flags["support"]))
    return files
