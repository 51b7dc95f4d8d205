"""What a campaign runs, in which order: every instance under every tool (that
runs on it) and allocator mode, repeated.

For each repetition, instance and tool, the modes form a block: its runs go
one after another on the same cores, in an order shuffled per block (a fixed
seed, so a resumed campaign plans the same order), so that drift of the
machine hits every mode alike. Executors hand out whole blocks and never split
one across machines or cores."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..measure.allocators import AllocatorMode
from .answers.toolinfo import ToolInfoRun
from .folder import CampaignFolder
from .instances import Instance, support_filled
from .store import RunKey
from .suite import Suite


@dataclass(frozen=True)
class RunSpec:
    tool: str
    instance: str
    instance_path: str
    alloc: AllocatorMode  # resolved when the suite was loaded: what the run preloads
    repetition: int
    argv: tuple[str, ...]  # {instance} and {model} filled in by the worker
    adapter: str
    cpu_s: float
    wall_s: float
    memory_bytes: int | None
    cores: tuple[int, ...] | None  # set by the executor that runs it
    group_prefix: str
    output_dir: str  # the campaign directory's outputs/
    # The instance is compressed in a format the tool does not read: the
    # worker decompresses it for the run, before the run starts.
    decompress: bool = False
    # A tool-info module reads the answer (answers/toolinfo.py): what it needs.
    tool_info: ToolInfoRun | None = None

    @property
    def mode(self) -> str:
        return self.alloc.name

    @property
    def key(self) -> RunKey:
        return self.tool, self.instance, self.mode, self.repetition

    def describe(self) -> str:
        return f"{self.tool}/{self.mode}/{self.instance}#{self.repetition}"


def planned_runs(suite: Suite, instances: list[Instance], repetitions: int,
                 tools: set[str] | None = None) -> int:
    """How many runs the campaign has (of the tools named, or of all)."""
    pairs = sum(1 for instance in instances for tool in suite.tools
                if tool.runs_on(instance.name) and (tools is None or tool.name in tools))
    return pairs * len(suite.modes) * repetitions


def plan(suite: Suite, instances: list[Instance], repetitions: int, folder: CampaignFolder,
         finished: set[RunKey], tools: set[str] | None = None) -> list[list[RunSpec]]:
    """Blocks of runs still to do, repetition by repetition (a stopped campaign
    has whole repetitions rather than some instances repeated more); of the
    tools named, or of all (a block's order does not depend on which)."""
    blocks = []
    prefix = folder.group_prefix()
    for repetition in range(repetitions):
        for instance in instances:
            for tool in suite.tools:
                if not tool.runs_on(instance.name) or (tools is not None and
                                                      tool.name not in tools):
                    continue
                modes = list(suite.modes)
                random.Random(f"{suite.seed}/{tool.name}/{instance.name}/{repetition}") \
                    .shuffle(modes)
                argv, tool_info = tool.command_for(instance.name)
                argv = (argv[0], *(support_filled(word, folder.instances) for word in argv[1:]))
                # (A command that names no {instance}, as `hugeheap compare` runs
                # one, is run as given.)
                decompress = instance.compression not in (None, *tool.reads_compressed) \
                    and any("{instance}" in word for word in tool.argv)
                block = [RunSpec(tool=tool.name, instance=instance.name,
                                 instance_path=str(instance.path), alloc=mode,
                                 repetition=repetition, argv=argv, adapter=tool.adapter,
                                 cpu_s=suite.cpu_s, wall_s=suite.wall_s,
                                 memory_bytes=suite.memory_bytes, cores=None,
                                 group_prefix=prefix, output_dir=str(folder.outputs),
                                 decompress=decompress, tool_info=tool_info)
                         for mode in modes]
                block = [spec for spec in block if spec.key not in finished]
                if block:
                    blocks.append(block)
    return blocks
