"""Executors: where the planned runs of a campaign are measured. The
coordinator hands an executor the blocks still to do and a Sink; the executor
runs each block on one set of cores, in order, and delivers every finished run
(a RunRecord) or a RunFailure saying why the harness could not do a run (not
a measurement: such a run is not stored and runs again on resume).

The local executor runs blocks on worker processes of this machine, one per
disjoint set of whole physical cores. The Slurm executor (slurm/) runs them
in a cluster's job arrays: the planner, the store, resume and the report do
not change with it."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..measure.leftover_groups import end_leftover_groups
from . import topology
from .folder import CampaignFolder
from .plan import RunSpec
from .scratch import remove_orphans
from .worker import RunFailure, RunOutcome, execute_reporting, start_worker


@dataclass
class Sink:
    """Where an executor reports to."""
    deliver: Callable[[RunOutcome], None]  # a finished run, or why one was not done
    # The state of a queue the runs wait in (a cluster's), shown beside the
    # progress bar; empty where there is none.
    queue: Callable[[str], None] = lambda state: None
    note: Callable[[str], None] = lambda line: None  # an event worth a line of its own
    # Facts a node read when its share of the runs ended (a cluster's: its
    # hugetlb pool then), by host, for the session's machine record.
    node_ended: Callable[[str, dict[str, Any]], None] = lambda host, facts: None


class Executor(ABC):
    """Runs blocks of a campaign and delivers what each run gave."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What the campaign's machine record keeps about where runs go."""

    @abstractmethod
    def end_leftovers(self, folder: CampaignFolder) -> int:
        """Ends runs that a killed harness of this campaign left going;
        returns how many it found."""

    @abstractmethod
    def run(self, blocks: list[list[RunSpec]], folder: CampaignFolder, sink: Sink) -> bool:
        """Runs the blocks, delivering every run as it finishes; True when
        interrupted (Ctrl-C or SIGTERM: the runs in flight are ended, every
        finished one has been delivered)."""


class LocalExecutor(Executor):
    """Worker processes on this machine, each on its own whole physical cores
    (more jobs than cores is an error here, before anything runs)."""

    def __init__(self, jobs: int, allowed: set[int] | None = None) -> None:
        """allowed: the CPUs the jobs may use (default: all this process may)."""
        self.jobs = jobs
        self.cores = topology.assign_cores(topology.read_machine(allowed), jobs)

    def describe(self) -> dict[str, Any]:
        return {"executor": "local", "jobs": self.jobs, "cores_per_job": self.cores}

    def end_leftovers(self, folder: CampaignFolder) -> int:
        remove_orphans()
        return end_leftover_groups(folder.group_prefix())

    def run(self, blocks: list[list[RunSpec]], folder: CampaignFolder, sink: Sink) -> bool:
        pending = deque(deque(block) for block in blocks)
        workers: list[_Worker] = []
        previous = signal.signal(signal.SIGTERM, interrupt)
        try:
            workers = [_Worker(job_cores) for job_cores in self.cores]
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
                                workers[index] = worker = worker.replacement()
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
                        result: RunOutcome = worker.connection.recv()
                    except EOFError:  # the worker died (out of memory?): replace it
                        result = RunFailure(running.key, "the worker process died")
                        dead = worker.process.pid
                        workers[workers.index(worker)] = worker.replacement()
                        # What its run left: the tool's processes and cgroup
                        # (named after the worker), its scratch folder.
                        end_leftover_groups(f"{running.group_prefix}_{dead}")
                        remove_orphans()
                    sink.deliver(result)
        except KeyboardInterrupt:
            for worker in workers:
                worker.kill()  # its tool dies with it (PDEATHSIG); its cgroup is ended below
            self.end_leftovers(folder)
            return True
        finally:
            for worker in workers:
                if not worker.released:
                    worker.stop()
            remove_orphans()  # the folders of runs whose workers were killed
            signal.signal(signal.SIGTERM, previous)


def interrupt(signum: int, frame: object) -> None:
    """A SIGTERM handler: stops the campaign as Ctrl-C does."""
    raise KeyboardInterrupt


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
        connection.send(execute_reporting(spec))


class _Worker:
    """A worker process bound to one set of cores, with the rest of the block
    it is running."""
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
        self.released = False

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
        self.release()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.release()

    def release(self) -> None:
        """Closes the pipe and the process's handle now, not whenever the
        garbage collector gets to them (the worker has ended)."""
        self.connection.close()
        self.process.close()
        self.released = True

    def replacement(self) -> _Worker:
        """A new worker on the same cores, with the rest of this dead one's block."""
        self.process.join(timeout=1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.release()
        successor = _Worker(self.cores)
        successor.block = self.block
        return successor
