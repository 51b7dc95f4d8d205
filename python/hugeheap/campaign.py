"""A campaign: every instance under every tool and allocator mode, repeated,
run and stored so that it can be stopped and resumed at any moment.

Planning: for each repetition, instance and tool, the modes form a block that
runs one after another on the same cores, in an order shuffled per block (a
fixed seed, so a resumed campaign plans the same order), so that drift of the
machine hits every mode alike. With several jobs, each job owns a disjoint
set of whole physical cores and a worker process of its own.

The campaign directory holds results.sqlite (one committed row per finished
run), suite.toml (the suite as first run), machine.json (what the machine was
at each start), instances/ (generated instances) and outputs/ (each run's
output, gzip-compressed). A `.harness.lock` keeps two harnesses apart; the
runs' cgroups carry a name derived from the directory, so the next harness
finds and ends what a killed one left running."""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import json
import multiprocessing
import multiprocessing.connection
import os
import random
import signal
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import topology
from .allocators import resolve
from .cgroups import end_leftover_groups
from .errors import HarnessError
from .files import write_whole
from .instances import Instance, prepare
from .store import RunRecord, Store
from .suite import Suite
from .verdicts import Disagreement, failed, judge, solved
from .versions import describe_campaign_machine
from .worker import RunSpec, execute, start_worker


@dataclass
class Progress:
    """What a campaign reports as it goes (the CLI draws it as a bar)."""
    total: int
    already: int  # finished in an earlier session
    done: int = 0
    unsolved: int = 0
    failed: int = 0
    harness_errors: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    directory: Path
    planned: int
    ran: int
    already: int
    interrupted: bool
    leftovers_ended: int
    harness_errors: list[str]
    disagreements: list[Disagreement]


def group_prefix(directory: Path) -> str:
    digest = hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:10]
    return f"hugeheap_c{digest}"


def _digest(path: str | None) -> str | None:
    if path is None:
        return None
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def identity(suite: Suite, instances: list[Instance]) -> dict[str, Any]:
    """What makes two campaigns comparable: runs of one may not mix with the
    other's. A rebuilt allocator library or tool is another campaign."""
    return {
        "tools": {t.name: [t.argv, t.adapter, _digest(t.program)] for t in suite.tools},
        "modes": suite.modes,
        "libraries": {m: _digest(resolve(m).library) for m in suite.modes},
        "limits": {"cpu_s": suite.cpu_s, "wall_s": suite.wall_s, "memory": suite.memory_bytes},
        "instances": sorted(i.name for i in instances),
    }


def plan(suite: Suite, instances: list[Instance], repetitions: int, directory: Path,
         finished: set[tuple[str, str, str, int]]) -> list[list[RunSpec]]:
    """Blocks of runs still to do, repetition by repetition (a stopped campaign
    has whole repetitions rather than some instances repeated more)."""
    blocks = []
    prefix = group_prefix(directory)
    for repetition in range(repetitions):
        for instance in instances:
            for tool in suite.tools:
                modes = list(suite.modes)
                random.Random(f"{suite.seed}/{tool.name}/{instance.name}/{repetition}") \
                    .shuffle(modes)
                argv = tuple(w.replace("{instance}", str(instance.path)) for w in tool.argv)
                argv = (tool.program, *argv[1:])
                block = [RunSpec(tool=tool.name, instance=instance.name,
                                 instance_path=str(instance.path), mode=mode,
                                 repetition=repetition, argv=argv, adapter=tool.adapter,
                                 cpu_s=suite.cpu_s, wall_s=suite.wall_s,
                                 memory_bytes=suite.memory_bytes, cores=None,
                                 group_prefix=prefix, output_dir=str(directory / "outputs"))
                         for mode in modes]
                block = [spec for spec in block if spec.key not in finished]
                if block:
                    blocks.append(block)
    return blocks


class _Lock:
    def __init__(self, directory: Path) -> None:
        self.file = open(directory / ".harness.lock", "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.seek(0)
            holder = self.file.read().strip() or "?"
            self.file.close()
            raise HarnessError(f"{directory}: another hugeheap bench (pid {holder}) is running "
                               "this campaign; wait for it or stop it first") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        self.file.close()


def _serve(connection: multiprocessing.connection.Connection, parent: int) -> None:
    """A worker: runs what it is sent until told to stop."""
    start_worker(parent)
    while True:
        try:
            spec = connection.recv()
        except EOFError:
            return
        if spec is None:
            return
        try:
            result: RunRecord | str = execute(spec)
        except Exception as error:  # a bug of ours: say where, keep the campaign going
            where = traceback.extract_tb(error.__traceback__)[-1]
            result = (f"{spec.tool}/{spec.mode}/{spec.instance}: internal error "
                      f"{type(error).__name__}: {error} (at {Path(where.filename).name}:"
                      f"{where.lineno}); please report it")
        connection.send(result)


class _Worker:
    context = multiprocessing.get_context("spawn")

    def __init__(self, cores: list[int]) -> None:
        self.cores = cores
        self.connection, theirs = self.context.Pipe()
        self.process = self.context.Process(target=_serve, args=(theirs, os.getpid()),
                                            daemon=True)
        self.process.start()
        theirs.close()
        self.block: deque[RunSpec] = deque()
        self.running: RunSpec | None = None

    def send(self, spec: RunSpec) -> None:
        self.running = replace(spec, cores=tuple(self.cores))
        self.connection.send(self.running)

    def stop(self) -> None:
        try:
            self.connection.send(None)
        except OSError:
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()


def prepare_directory(suite: Suite, directory: Path) -> tuple[Store, list[Instance]]:
    """Opens (or starts) the campaign in directory; refuses a directory that
    holds a campaign of another suite."""
    instances = prepare(suite, directory / "instances")
    store = Store(directory / "results.sqlite")
    mine = json.dumps(identity(suite, instances), sort_keys=True)
    theirs = store.meta("identity")
    if theirs is None:
        store.set_meta("identity", mine)
        store.set_meta("suite_name", suite.name)
        store.set_meta("baseline", suite.modes[0])
        store.set_meta("cpu_limit_s", str(suite.cpu_s))
        store.set_meta("tools", json.dumps([t.name for t in suite.tools]))
        store.set_meta("modes", json.dumps(suite.modes))
        write_whole(directory / "suite.toml", suite.text)
    elif theirs != mine:
        old, new = json.loads(theirs), json.loads(mine)
        changed = [key for key in new if old.get(key) != new[key]]
        store.close()
        raise HarnessError(f"{directory} holds a campaign of another suite (its "
                           f"{', '.join(changed)} differ from {suite.path.name}'s); give "
                           f"another --out, or delete {directory} to start over")
    return store, instances


def _record_machine(suite: Suite, directory: Path, jobs: int, cores: list[list[int]]) -> None:
    path = directory / "machine.json"
    sessions = json.loads(path.read_text()) if path.exists() else []
    info = describe_campaign_machine(suite)
    info["started"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    info["jobs"] = jobs
    info["cores_per_job"] = cores
    sessions.append(info)
    write_whole(path, json.dumps(sessions, indent=1))


def run_campaign(suite: Suite, directory: Path, jobs: int, repetitions: int,
                 on_progress: Callable[[Progress], None] | None = None,
                 on_start: Callable[[Progress, int], None] | None = None) -> Outcome:
    """Runs what is missing of the campaign; Ctrl-C (KeyboardInterrupt) or
    SIGTERM ends the runs in flight and keeps every finished one."""
    cores = topology.assign_cores(topology.read_machine(), jobs)
    directory.mkdir(parents=True, exist_ok=True)
    lock = _Lock(directory)
    try:
        # A harness killed earlier may have left runs going: end them first.
        leftovers = end_leftover_groups(group_prefix(directory))
        for partial in [*(directory / "outputs").rglob("*.partial"),
                        *(directory / "instances").glob(".*.partial")]:
            partial.unlink()
        store, instances = prepare_directory(suite, directory)
        try:
            _record_machine(suite, directory, jobs, cores)
            finished = store.finished()
            blocks = plan(suite, instances, repetitions, directory, finished)
            total = len(instances) * len(suite.tools) * len(suite.modes) * repetitions
            remaining = sum(len(b) for b in blocks)
            progress = Progress(total=total, already=total - remaining)
            if on_start:
                on_start(progress, leftovers)
            interrupted = _execute(blocks, cores, store, progress, directory, on_progress)
            disagreements = judge(store.runs())
        finally:
            store.close()
    finally:
        lock.release()
    return Outcome(directory, total, progress.done, progress.already, interrupted, leftovers,
                   progress.harness_errors, disagreements)


def _execute(blocks: list[list[RunSpec]], cores: list[list[int]], store: Store,
             progress: Progress, directory: Path,
             on_progress: Callable[[Progress], None] | None) -> bool:
    """Runs the blocks on one worker per core set; True if interrupted."""
    pending = deque(deque(block) for block in blocks)
    workers: list[_Worker] = []
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        workers = [_Worker(job_cores) for job_cores in cores]
        busy: dict[Any, _Worker] = {}  # by connection
        while True:
            for index, worker in enumerate(workers):
                if worker.running is None:
                    if not worker.block and pending:
                        worker.block = pending.popleft()
                    if worker.block:
                        spec = worker.block.popleft()
                        try:
                            worker.send(spec)
                        except OSError:  # the worker is gone: the run goes to a new one
                            workers[index] = worker = _replace(worker)
                            worker.send(spec)
                        busy[worker.connection] = worker
            if not busy:
                return False
            for connection in multiprocessing.connection.wait(list(busy)):
                worker = busy.pop(connection)
                running = worker.running
                assert running is not None
                worker.running = None
                try:
                    result: RunRecord | str = worker.connection.recv()
                except EOFError:  # the worker died (out of memory?): replace it
                    result = (f"{running.tool}/{running.mode}/{running.instance}: the worker "
                              "process died")
                    workers[workers.index(worker)] = _replace(worker)
                _account(result, store, progress)
                if on_progress:
                    on_progress(progress)
    except KeyboardInterrupt:
        for worker in workers:
            worker.kill()  # its tool dies with it (PDEATHSIG); its cgroup is ended below
        end_leftover_groups(group_prefix(directory))
        return True
    finally:
        for worker in workers:
            if worker.process.is_alive():
                worker.stop()
        signal.signal(signal.SIGTERM, previous)


def _replace(worker: _Worker) -> _Worker:
    """A new worker on the same cores, with the rest of the dead one's block."""
    worker.process.join(timeout=1)
    replacement = _Worker(worker.cores)
    replacement.block = worker.block
    return replacement


def _account(result: RunRecord | str, store: Store, progress: Progress) -> None:
    if isinstance(result, str):
        progress.harness_errors.append(result)
        progress.failed += 1
        return
    store.add(result)
    progress.done += 1
    if not solved(result):
        progress.unsolved += 1
    if failed(result):
        progress.failed += 1


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def default_directory(suite: Suite) -> Path:
    return Path("results") / suite.name
