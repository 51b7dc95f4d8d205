"""A campaign: every instance under every tool and allocator mode, repeated,
run and stored so that it can be stopped and resumed at any moment.

The coordinator runs a campaign in its folder (folder.py: the layout, the
lock, the campaign's facts): it holds the folder against a second harness,
plans what is missing (plan.py), hands the blocks to an executor
(executors.py: local workers, or slurm/: a cluster's job arrays) and commits
every run the executor delivers, unless the run's node differs from where
the other modes of its block ran: paired runs are compared only on alike
nodes."""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..files import write_whole
from ..measure import hugetlb_hierarchy, machine
from .answers.verdicts import Disagreement, failed, judge, solved
from .cache import InstanceCache
from .executors import Executor, Sink
from .folder import CampaignFolder, CampaignMeta
from .instances import Instance, prepare
from .plan import plan, planned_runs
from .store import RunRecord, Store
from .suite import Suite, Tool
from .versions import describe_campaign_machine
from .worker import RunFailure, RunOutcome


@dataclass
class Progress:
    """What a campaign reports as it goes (the CLI draws it as a bar)."""
    total: int
    already: int  # finished in an earlier session
    done: int = 0
    unsolved: int = 0
    failed: int = 0
    harness_errors: list[RunFailure] = field(default_factory=list)
    queue: str = ""  # where the runs wait, as the executor last saw it (a cluster's queue)


@dataclass
class Outcome:
    directory: Path
    planned: int
    ran: int
    already: int
    interrupted: bool
    leftovers_ended: int
    harness_errors: list[RunFailure]
    disagreements: list[Disagreement]


def _digest(path: str | None) -> str | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def identity(suite: Suite, instances: list[Instance]) -> dict[str, Any]:
    """What makes two campaigns comparable: runs of one may not mix with the
    other's. A rebuilt allocator library, tool or instance generator is
    another campaign, and so is a changed instance file (its checksum as
    stored: a file compressed again is another campaign too, a safe
    mistake). The libraries are those the runs preload: the modes were
    resolved once, when the suite was loaded. Keys a new feature added are
    there only where the suite uses the feature, so that a campaign started
    before it resumes."""
    found: dict[str, Any] = {
        "tools": {t.name: [t.argv, t.adapter, _digest(t.program), t.instances]
                  + ([list(t.reads_compressed)] if t.reads_compressed else [])
                  + ([_tool_info_identity(t)] if t.tool_info or t.tasks else [])
                  for t in suite.tools},
        "modes": [m.name for m in suite.modes],
        "libraries": {m.name: _digest(m.library) for m in suite.modes},
        "environments": {m.name: {k: v for k, v in sorted(m.env.items()) if k != "LD_PRELOAD"}
                         for m in suite.modes},
        "generators": {g.name: [g.argv, _digest(g.program)] for g in suite.generators},
        "limits": {"cpu_s": suite.cpu_s, "wall_s": suite.wall_s, "memory": suite.memory_bytes},
        "instances": sorted(i.name for i in instances),
    }
    if suite.files:
        found["files"] = {name: _digest(str(path)) for name, path in suite.files}
    if suite.downloads:  # the hash that verified each is its content's name
        found["downloads"] = {file.instance: file.key for file in suite.downloads}
    return found


def _tool_info_identity(tool: Tool) -> dict[str, Any]:
    """A tool a BenchExec tool-info module reads: the module, and where it
    composed each task's command, the command, the expected verdict and the
    checksums of the task's input and property files."""
    if tool.tasks is None:
        return {"module": tool.tool_info.module if tool.tool_info else None}
    return {name: [list(task.argv), task.run.expected,
                   {path: _digest(path) for path in (*task.run.inputs, task.run.property_file)
                    if path and os.path.isfile(path)}]
            for name, task in sorted(tool.tasks.items())}


def _differences(stored: dict[str, Any], mine: dict[str, Any]) -> list[str]:
    """The identity's keys that differ; a key the stored campaign lacks was
    not recorded then (an older harness), and is no difference."""
    return [key for key in sorted(mine.keys() | stored.keys())
            if key in stored and stored[key] != mine.get(key)]


def prepare_folder(suite: Suite, folder: CampaignFolder, store: Store,
                   downloads: InstanceCache | None = None,
                   tools: set[str] | None = None) -> list[Instance]:
    """Starts the campaign in the folder's store, or checks that the store
    holds a campaign of this suite; returns the suite's instances (those of
    the downloads only that `tools` run on, where named).
    downloads: the instance cache the suite's downloads come from."""
    instances = prepare(suite, folder.instances, downloads, tools)
    # The campaign is the whole suite's whichever tools run now: its identity
    # names every instance, fetched or not.
    fetched, made = suite.downloads_for(tools), suite.generators_for(tools)
    named = instances + [Instance(file.instance, Path(file.name)) for file in suite.downloads
                         if not file.support and file not in fetched]
    named += [Instance(name, Path(g.name)) for g in suite.generators if g not in made
              for name in g.instances()]
    mine = json.loads(json.dumps(identity(suite, named)))  # as stored: lists, not tuples
    stored = CampaignMeta.load(store)
    if stored is None:
        CampaignMeta(
            identity=mine, suite_name=suite.name, baseline=suite.modes[0].name,
            cpu_limit_s=suite.cpu_s, tools=[t.name for t in suite.tools],
            modes=[m.name for m in suite.modes],
            tool_instances={t.name: [i.name for i in instances if t.runs_on(i.name)]
                            for t in suite.tools}).save(store)
        write_whole(folder.suite_copy, suite.text)
    elif changed := _differences(stored.identity, mine):
        raise HarnessError(f"{folder.path} holds a campaign of another suite (its "
                           f"{', '.join(changed)} differ from {suite.path.name}'s); give "
                           f"another --out, or delete {folder.path} to start over")
    return instances


def _record_machine(suite: Suite, folder: CampaignFolder, executor: Executor) -> None:
    """The machine at the start of the session; its hugetlb pool (the pages
    a mode such as hugeheap-pool maps from) at its start, and at its end
    (_record_pool_after), interrupted or not."""
    info = describe_campaign_machine(suite)
    info["started"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    info["hugetlb_pool_before"] = machine.hugetlb_pool_record()
    info["hugetlb_peaks"] = hugetlb_hierarchy.counting()  # the runs' pool pages: exact or sampled
    info.update(executor.describe())
    folder.add_session(info)


def _record_pool_after(folder: CampaignFolder, nodes: dict[str, dict[str, Any]]) -> None:
    """nodes: what each node of a cluster read at the end of its runs (its
    own pool; the coordinator's is not theirs), by host."""
    folder.end_session({"hugetlb_pool_after": machine.hugetlb_pool_record(),
                        **({"nodes_at_end": nodes} if nodes else {})})


def run_campaign(suite: Suite, directory: Path, executor: Executor, repetitions: int,
                 on_progress: Callable[[Progress], None] | None = None,
                 on_start: Callable[[Progress, int], None] | None = None,
                 on_note: Callable[[str], None] | None = None,
                 tools: set[str] | None = None,
                 downloads: InstanceCache | None = None) -> Outcome:
    """Runs what is missing of the campaign on the executor; Ctrl-C
    (KeyboardInterrupt) or SIGTERM ends the runs in flight and keeps every
    finished one. on_note: an event of the executor worth a line of its own;
    tools: run only these tools' runs (the campaign stays the whole suite's:
    a later run of the others, or of all, goes into the same folder);
    downloads: the instance cache the suite's downloads come from."""
    folder = CampaignFolder(directory)
    with contextlib.ExitStack() as held:  # released in reverse: the store, then the lock
        held.callback(folder.lock().release)
        # A harness killed earlier may have left runs going: end them first.
        leftovers = executor.end_leftovers(folder)
        folder.clear_partials()
        folder.sessions()  # a damaged machine record stops the campaign here
        store = held.enter_context(folder.open_store())
        instances = prepare_folder(suite, folder, store, downloads, tools)
        _record_machine(suite, folder, executor)
        nodes: dict[str, dict[str, Any]] = {}
        held.callback(_record_pool_after, folder, nodes)
        finished = store.finished()
        blocks = plan(suite, instances, repetitions, folder, finished, tools)
        total = planned_runs(suite, instances, repetitions, tools)
        remaining = sum(len(b) for b in blocks)
        progress = Progress(total=total, already=total - remaining)
        if on_start:
            on_start(progress, leftovers)

        def deliver(result: RunOutcome) -> None:
            _account(result, store, progress)
            if on_progress:
                on_progress(progress)

        def queue(state: str) -> None:
            progress.queue = state
            if on_progress:
                on_progress(progress)

        def node_ended(host: str, facts: dict[str, Any]) -> None:
            nodes.setdefault(host, {}).update(facts)

        sink = Sink(deliver, queue, on_note or (lambda line: None), node_ended)
        interrupted = executor.run(blocks, folder, sink)
        disagreements = judge(store.runs())
    return Outcome(directory, total, progress.done, progress.already, interrupted, leftovers,
                   progress.harness_errors, disagreements)


def _account(result: RunOutcome, store: Store, progress: Progress) -> None:
    if isinstance(result, RunRecord):
        problem = unpaired(result, store.block_nodes(result.tool, result.instance,
                                                      result.repetition))
        result = problem or result
    if isinstance(result, RunFailure):
        progress.harness_errors.append(result)
        progress.failed += 1
        return
    store.add(result)
    progress.done += 1
    if not solved(result):
        progress.unsolved += 1
    if failed(result):
        progress.failed += 1


def unpaired(record: RunRecord, block_nodes: list[str | None]) -> RunFailure | None:
    """Why the run may not join the stored runs of its block (the other modes
    of its tool, instance and repetition): they ran on a node whose facts
    differ. None when it may. A fact only one of them records (a run stored
    before hugeheap recorded it) is no difference."""
    mine = _facts(record.node)
    for node in block_nodes:
        theirs = _facts(node)
        if mine is None or theirs is None:
            continue
        differ = ", ".join(f"{key} {mine[key]} here, {theirs[key]} there"
                           for key in sorted(mine.keys() & theirs.keys())
                           if mine[key] != theirs[key])
        if not differ:
            continue
        host = json.loads(node or "{}").get("host")
        return RunFailure(record.key, (
            f"not stored: the other modes of its block ran on a node unlike this one ({differ}; "
            f"that node: {host}), and paired runs are compared on alike nodes only; run the "
            "campaign on identical nodes with the same settings (one --partition of them), or "
            "give another --out"))
    return None


def _facts(node: str | None) -> dict[str, Any] | None:
    if node is None:
        return None
    facts = json.loads(node).get("facts")
    return facts if isinstance(facts, dict) else None


def default_directory(suite: Suite) -> Path:
    return Path("results") / suite.name
