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
HarnessError naming the file, the line where there is one, and the fix
(toml_checker.py).

This module holds what a suite file is read into: the Suite, its Tools and
its instance Generators (definition.py makes one of a BenchExec benchmark
definition, compare.py of a single command). suite_file.py reads the file
(load)."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import HarnessError
from ..measure.allocators import AllocatorMode
from ..measure.units import parse_names
from .answers.toolinfo import Task, ToolInfoRun
from .compression import plain_name
from .remote import RemoteFile

# {file:NAME} in a tool's or a generator's command: a support file of the suite.
SUPPORT_FILE = re.compile(r"\{file:([^}]*)\}")


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

    def instances(self) -> list[str]:
        """The names of the instances it makes, one per seed (compression
        suffix taken off)."""
        return [plain_name(self.name.replace("{seed}", str(seed))) for seed in self.seeds]


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

    def runs_on(self, tools: set[str] | None, instance: str) -> bool:
        """Whether one of these tools (None: any) runs on the instance."""
        return any(tool.runs_on(instance) for tool in self.tools
                   if tools is None or tool.name in tools)

    def generators_for(self, tools: set[str] | None) -> list[Generator]:
        """The generators whose instances one of these tools (None: any) runs on."""
        return [generator for generator in self.generators
                if any(self.runs_on(tools, name) for name in generator.instances())]

    def downloads_for(self, tools: set[str] | None) -> list[RemoteFile]:
        """The downloads a campaign of these tools needs (None: every tool):
        the instances they run on, and the support files their commands and
        their instances' generators name ({file:NAME}). A set's entry no tool
        runs on is not needed, so a suite that takes two files of a large set
        fetches those two."""
        words = [word for tool in self.tools if tools is None or tool.name in tools
                 for word in tool.argv]
        words += [word for generator in self.generators_for(tools) for word in generator.argv]
        named = {name for word in words for name in SUPPORT_FILE.findall(word)}
        return [file for file in self.downloads
                if (file.name in named if file.support else self.runs_on(tools, file.instance))]

    def choose_tools(self, names: str) -> set[str]:
        """The tools named in 'A,B' (`hugeheap bench --tools`); HarnessError
        for a name that is no tool of the suite, or one not installed here."""
        chosen = set(parse_names(names))
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
