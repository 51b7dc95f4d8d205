"""`hugeheap compare`: one command under several allocator modes, the first
question a user asks ("does hugeheap help my tool on this input?"), with no
suite file to write.

It is a campaign of one tool and one instance: the command as given, run N
times under every mode, the modes of each repetition back to back on the same
cores in a shuffled order, measured, checked and stored as `hugeheap bench`
measures, checks and stores. The campaign is kept in --out DIR (`hugeheap
report` reads it, the same command resumes it) or in a temporary folder the
command line removes afterwards."""

from __future__ import annotations

import os
import shlex
from dataclasses import replace
from pathlib import Path

from ..measure.allocators import MODES, AllocatorMode, resolve
from ..measure.runner import resolve_command
from .answers.adapters import check_adapter_name, suggested_adapter
from .folder import CampaignFolder
from .modes import parse_modes_option
from .suite import Suite, Tool

DEFAULT_CPU_LIMIT_S = 900.0
LEFT_OUT = ("hugeheap-nothp",)  # not compared unless named: a variant of hugeheap


def choose_modes(names: str | None) -> tuple[list[AllocatorMode], list[tuple[str, str]]]:
    """The modes to compare, the first the baseline: those named in 'A,B,..'
    (modes.py: two or more; HarnessError for one that cannot run here), or
    by default every built-in mode this machine has but hugeheap-nothp,
    system first; and the default modes left out, with why."""
    if names is None:
        resolved = [resolve(name) for name in MODES if name not in LEFT_OUT]
        return ([mode for mode in resolved if not mode.missing],
                [(mode.name, mode.missing) for mode in resolved if mode.missing])
    return parse_modes_option(names, at_least=2), []


def comparison_suite(command: list[str], modes: list[AllocatorMode], adapter: str | None,
                     cpu_s: float | None, wall_s: float | None, memory_bytes: int | None,
                     environment: dict[str, str], folder: Path) -> Suite:
    """The campaign of the comparison, as a Suite the coordinator runs. The
    instance is the command's last argument that is a file (an input file,
    whose answer the adapter may check), else the command itself. A run
    starts in a directory of its own, so the program and the files and
    folders the command names relative to this one are made absolute."""
    program = os.path.abspath(resolve_command(command))
    command = [program, *(os.path.abspath(word) if os.path.exists(word) else word
                          for word in command[1:])]
    name = Path(program).name
    chosen = adapter or suggested_adapter(program) or "exitcode"
    check_adapter_name(chosen)
    files = [word for word in command[1:] if os.path.isfile(word)]
    instance = (Path(files[-1]).name, Path(files[-1]).resolve()) if files else \
        ("command", Path(os.devnull))
    cpu = cpu_s or DEFAULT_CPU_LIMIT_S
    wall = wall_s or 2 * cpu
    # The environment given goes into every mode's, under the mode's own.
    modes = [replace(mode, env={**environment, **mode.env}) for mode in modes]
    text = "\n".join([
        "# The comparison `hugeheap compare` ran, written as a suite would say it",
        "# (the command runs as given: it has no {instance}).",
        "[campaign]", f"name = {_toml(f'compare-{name}')}",
        f"modes = [{', '.join(_toml(m.name) for m in modes)}]",
        "[limits]", f'cpu_time = "{cpu:g}s"', f'wall_time = "{wall:g}s"',
        *([f"memory = {memory_bytes}"] if memory_bytes else []),
        f"[tools.{_toml(name)}]", f"command = {_toml(shlex.join(command))}",
        f"adapter = {_toml(chosen)}",
        *(f"# environment: {key}={value}" for key, value in sorted(environment.items())),
        ""])
    return Suite(path=CampaignFolder(folder).suite_copy, text=text, name=f"compare-{name}",
                 modes=modes, tools=[Tool(name, list(command), chosen, program)], skipped_tools=[],
                 files=[instance], generators=[], downloads=[], cpu_s=cpu, wall_s=wall,
                 memory_bytes=memory_bytes)


def _toml(text: str) -> str:
    """A TOML basic string."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
