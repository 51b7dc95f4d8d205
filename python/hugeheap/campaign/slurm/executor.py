"""The Slurm executor: a campaign's blocks run as tasks of job arrays on a
cluster, and this command, where it was started, merges what they did.

Each array task is given whole blocks (all modes of one tool, instance and
repetition: they run back to back on the task's cores, so pairing survives
distribution), many blocks per task (a few large arrays, not thousands of tiny
jobs). Tasks run `python -m hugeheap.campaign.slurm.task` on their node and
report through files in the campaign folder (files.py), which must be
on a filesystem the nodes share; results.sqlite is written here only.

While the arrays run, the reports are merged as they change (a run is in
results.sqlite a second or so after it finished) and the queue is asked for
the tasks' states every few seconds. A task that ends with runs not done
(node failure, time limit, scancel of that task, SIGKILL) has its finished
runs merged and the rest submitted again, up to ATTEMPTS times per run, once
it is cancelled (no later requeue may start it: its runs would run twice). A
task that Slurm requeues, held or not, is waited for (commands.ENDED). When a
whole array is cancelled from outside, the campaign stops as on Ctrl-C, which
cancels the arrays and keeps every finished run. A task that fails before it
writes anything (hugeheap or Python missing on the node) stops the campaign
with its log's last line."""

from __future__ import annotations

import math
import os
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import HarnessError
from ..executors import Executor, Sink, interrupt
from ..folder import CampaignFolder
from ..plan import RunSpec
from ..store import RunKey
from ..suite import Suite
from ..worker import RunFailure
from . import commands, files
from .commands import TaskState
from .files import MalformedReport, Report

DEFAULT_ARRAY_TASKS = 100  # a campaign of 2,000 blocks: 20 blocks per task
POLL_S = 1.0  # how often the tasks' reports are looked at
QUEUE_EVERY_S = 5.0  # how often the queue is asked (schedulers' admins ask users not to hammer)
ATTEMPTS = 3  # submissions of one run in one session before it counts as not run
REPORT_GRACE_S = 10.0  # how long a finished task's last report may take to show (NFS caches)
CANCEL_WAIT_S = 120.0  # how long cancelled tasks may take to leave the queue
UNSEEN_WAIT_S = 60.0  # a task the queue never showed counts as ended after this long
RUN_MARGIN_S = 30.0  # a task's time limit: each run's wall-time limit and this,
TASK_MARGIN_S = 300.0  # and this once per task
HARNESS_MEMORY = 512 * 2**20  # a task's memory: a run's limit and this, for the harness


def job_name(folder: CampaignFolder) -> str:
    """Every array of the campaign has this name, so that a later command
    finds what a killed one left in the queue."""
    return folder.group_prefix()


class SlurmExecutor(Executor):
    """Job arrays on a Slurm cluster. Everything that can be checked before a
    run starts is checked here: the client commands, the partition, and (with
    sbatch --test-only) the account, the options and the resources asked."""

    def __init__(self, suite: Suite, partition: str | None, account: str | None,
                 max_array_tasks: int, options: list[str]) -> None:
        problem = commands.client_problem()
        if problem:
            raise HarnessError(f"--executor slurm: {problem}")
        if max_array_tasks < 1:
            raise HarnessError(f"--max-array-tasks {max_array_tasks}: must be at least 1")
        found = commands.partitions()
        names = ", ".join(p.name for p in found) or "none"
        if partition is None:
            chosen = next((p for p in found if p.default), None)
            if chosen is None:
                raise HarnessError(f"this cluster has no default partition: give --partition "
                                   f"(partitions: {names})")
        else:
            chosen = next((p for p in found if p.name == partition), None)
            if chosen is None:
                raise HarnessError(f"--partition {partition}: no such partition on this "
                                   f"cluster (partitions: {names})")
        self.partition = chosen
        self.account = account
        config = commands.config()
        self.cluster = config.get("ClusterName", "?")
        largest = int(config.get("MaxArraySize", "1001")) - 1
        self.max_array_tasks = min(max_array_tasks, largest)
        self.options = options
        self.resources = [f"--partition={chosen.name}", "--nodes=1", "--ntasks=1",
                          "--cpus-per-task=1"]
        if account:
            self.resources.append(f"--account={account}")
        if suite.memory_bytes:
            mib = math.ceil((suite.memory_bytes + HARNESS_MEMORY) / 2**20)
            self.resources.append(f"--mem={mib}M")
        commands.check_submission(
            [*self.resources, f"--time={self.time_limit([suite.wall_s])}", *options])

    def time_limit(self, wall_limits: list[float]) -> int:
        """A task's time limit in minutes: every run to its wall-time limit,
        within the partition's limit (a task cut short by it leaves its
        remaining runs to a new task)."""
        seconds = sum(w + RUN_MARGIN_S for w in wall_limits) + TASK_MARGIN_S
        if self.partition.time_limit_s is not None:
            seconds = min(seconds, self.partition.time_limit_s)
        return max(1, math.ceil(seconds / 60))

    def describe(self) -> dict[str, Any]:
        return {"executor": "slurm", "cluster": self.cluster, "partition": self.partition.name,
                "account": self.account, "max_array_tasks": self.max_array_tasks,
                "sbatch_options": [*self.resources, *self.options]}

    def end_leftovers(self, folder: CampaignFolder) -> int:
        """Cancels the arrays that a killed command of this campaign left in the
        queue and waits until they are gone (their finished runs are merged by
        run); returns how many runs they had in flight (one per running task)."""
        arrays = commands.jobs_named(job_name(folder))
        if not arrays:
            return 0
        running = [s for s in commands.queue(arrays).values() if s.state == "RUNNING"]
        commands.cancel(arrays)
        deadline = time.monotonic() + CANCEL_WAIT_S
        while time.monotonic() < deadline and \
                any(not s.ended for s in commands.queue(arrays).values()):
            time.sleep(POLL_S)
        return len(running)

    def run(self, blocks: list[list[RunSpec]], folder: CampaignFolder, sink: Sink) -> bool:
        previous = signal.signal(signal.SIGTERM, interrupt)
        try:
            return _Session(self, folder, sink).run(blocks)
        finally:
            signal.signal(signal.SIGTERM, previous)


@dataclass
class _Task:
    submission: Path
    index: int
    array: str  # the job array's id
    given: dict[RunKey, RunSpec]
    submitted: float  # time.monotonic()
    seen_in_queue: bool = False
    signature: tuple[int, int, int] | None = None  # of its report when last read
    report: Report | None = None
    malformed: str | None = None  # why its latest report could not be merged

    @property
    def name(self) -> str:
        return f"{self.array}_{self.index}"

    @property
    def log(self) -> Path:
        return files.log_path(self.submission, self.index)


@dataclass
class _Session:
    """One `hugeheap bench` of a campaign on Slurm: what is still to do, the
    tasks not yet ended, and what has been delivered. queue, cancel and
    submit: the controller's answers and orders (commands.queue, .cancel and
    .submit; a test hands in a controller of its own)."""
    executor: SlurmExecutor
    folder: CampaignFolder
    sink: Sink
    queue: Callable[[list[str]], dict[tuple[str, int], TaskState]] = commands.queue
    cancel: Callable[[list[str]], None] = commands.cancel
    submit: Callable[[str, list[str]], str] = commands.submit
    pending: dict[RunKey, RunSpec] = field(default_factory=dict)  # not delivered yet
    attempts: Counter[RunKey] = field(default_factory=Counter)
    tasks: list[_Task] = field(default_factory=list)  # not ended yet
    states: dict[tuple[str, int], TaskState] = field(default_factory=dict)
    asked: float = 0.0  # when the queue was last asked
    answered: bool = True  # whether it answered then
    stopped: bool = False

    def run(self, blocks: list[list[RunSpec]]) -> bool:
        self.pending = {spec.key: spec for block in blocks for spec in block}
        try:
            self._adopt()
            if self.pending:
                self._submit(list(self.pending.values()))
            while self.tasks:
                time.sleep(POLL_S)
                self._poll()
            self.sink.queue("")
        except KeyboardInterrupt:
            self._cancel_all()
            return True
        except BaseException:
            self._cancel_all()
            raise
        return self.stopped

    # ----------------------------------------------------------- submitting

    def _submit(self, specs: list[RunSpec]) -> None:
        """One job array for these runs: whole blocks, dealt out in plan order
        to as many tasks as there are blocks, at most max_array_tasks."""
        blocks: dict[tuple[str, str, int], list[RunSpec]] = {}
        for spec in specs:
            blocks.setdefault((spec.tool, spec.instance, spec.repetition), []).append(spec)
        count = min(len(blocks), self.executor.max_array_tasks)
        shares: list[list[RunSpec]] = [[] for _ in range(count)]
        for number, block in enumerate(blocks.values()):
            shares[number % count].extend(block)
        submission = files.new_submission_dir(self.folder).resolve()
        for index, share in enumerate(shares):
            files.write_input(submission, index, share)
        script = files.write_script(submission, sys.executable)
        limit = self.executor.time_limit(max(([s.wall_s for s in share] for share in shares),
                                             key=sum))
        array = self.submit(str(script), [
            *self.executor.resources, f"--array=0-{count - 1}",
            f"--job-name={job_name(self.folder)}", f"--output={files.log_pattern(submission)}",
            "--open-mode=append",  # a requeued task's log keeps what its first start said
            f"--chdir={os.getcwd()}", f"--time={limit}", *self.executor.options])
        files.write_job_id(submission, array)
        now = time.monotonic()
        for index, share in enumerate(shares):
            self.tasks.append(_Task(submission, index, array, {s.key: s for s in share}, now))
            self.attempts.update(s.key for s in share)
        self.asked = 0.0  # ask the queue at the next poll

    # --------------------------------------------------------------- merging

    def _merge(self, task: _Task) -> None:
        """Delivers what the task's report has that was not delivered yet, if
        the report changed; a report that does not read whole is remembered,
        not merged."""
        path = files.report_path(task.submission, task.index)
        signature = files.file_signature(path)
        if signature is None or signature == task.signature:
            return
        task.signature = signature
        try:
            report = files.read_report(task.submission, task.index, set(task.given))
        except MalformedReport as error:
            task.malformed = str(error)
            return
        task.malformed = None
        if report is None:
            return
        task.report = report
        if report.complete and "hugetlb_pool_after" in report.node:
            self.sink.node_ended(str(report.node.get("host")),
                                 {"hugetlb_pool_after": report.node["hugetlb_pool_after"]})
        for record in report.runs:
            if self.pending.pop(record.key, None) is not None:
                self.sink.deliver(record)
        for failure in report.not_run:
            if self.pending.pop(failure.key, None) is not None:
                self.sink.deliver(failure)

    def _adopt(self) -> None:
        """Merges what the tasks of earlier commands of this campaign finished
        (a killed command's arrays were cancelled by end_leftovers)."""
        for submission in files.submission_dirs(self.folder):
            if files.merged(submission):
                continue
            for index in range(files.task_count(submission)):
                given = files.read_input(submission, index)
                task = _Task(submission, index, "earlier", {s.key: s for s in given}, 0.0)
                self._merge(task)
                self._reject_if_malformed(task)
            files.mark_merged(submission)

    def _reject_if_malformed(self, task: _Task) -> None:
        if task.malformed is None:
            return
        path = files.report_path(task.submission, task.index)
        self.sink.note(f"{path} {task.malformed}: it is not merged, and its runs not merged "
                       f"before run again (the file is kept as {path.name}.rejected)")
        path.replace(path.with_name(path.name + ".rejected"))

    # ------------------------------------------------------------- watching

    def _poll(self) -> None:
        for task in self.tasks:
            self._merge(task)
        done = [t for t in self.tasks if t.report is not None and t.report.complete]
        if len(done) < len(self.tasks) and time.monotonic() - self.asked >= QUEUE_EVERY_S:
            self._ask_queue()
        ended = [t for t in self.tasks if t in done or self._ended(t)]
        if ended:
            self._finish(ended)

    def _ask_queue(self) -> None:
        self.asked = time.monotonic()
        try:
            self.states = self.queue(sorted({t.array for t in self.tasks}))
        except HarnessError as error:  # a controller's hiccup: ask again later
            self.answered = False
            self.sink.queue(f"queue: {error}")
            return
        self.answered = True
        counts = Counter[str]()
        reasons = Counter[str]()
        for task in self.tasks:
            state = self.states.get((task.array, task.index))
            if state is not None:
                task.seen_in_queue = True
                if not state.ended:
                    counts[state.state.lower()] += 1
                    if state.state == "PENDING" and state.reason not in ("None", ""):
                        reasons[state.reason] += 1
        words = [f"{n} {state}" for state, n in sorted(counts.items())]
        why = f" ({', '.join(reasons)})" if reasons else ""
        self.sink.queue(f"Slurm: {', '.join(words) or 'no task queued'}{why}")

    def _ended(self, task: _Task) -> bool:
        state = self.states.get((task.array, task.index))
        if state is not None:
            return state.ended
        # Unknown to the controller that answered: ended long ago, or never shown.
        return self.answered and (task.seen_in_queue or
                                  time.monotonic() - task.submitted > UNSEEN_WAIT_S)

    def _state_of(self, task: _Task) -> str:
        state = self.states.get((task.array, task.index))
        return state.state if state is not None else "(gone from the queue)"

    def _retire(self, task: _Task) -> None:
        """An ended task: its last results merged, its file marked merged."""
        self.tasks.remove(task)
        self._last_merge(task)
        self._mark_merged(task.submission)

    def _finish(self, ended: list[_Task]) -> None:
        """Final merge of ended tasks; their runs not done are submitted again,
        or the campaign stops (an array cancelled from outside, a task that
        could not start)."""
        again: list[RunSpec] = []
        for task in ended:
            self._retire(task)
            missing = [key for key in task.given if key in self.pending]
            if not missing or self.stopped:
                continue
            state = self._state_of(task)
            if task.report is None and task.malformed is None and state == "FAILED":
                raise HarnessError(f"Slurm task {task.name} failed before it ran anything; "
                                   f"its log {task.log} says: {_last_line(task.log)}")
            if state == "CANCELLED" and self._whole_array_cancelled(task.array):
                self.sink.note(f"Slurm job array {task.array} was cancelled from outside: "
                               "stopping (every finished run is kept)")
                self.stopped = True
                self._cancel_all()
                return
            self.sink.note(f"Slurm task {task.name} ended {state} with {len(missing)} of its "
                           f"runs not done (its log: {task.log})")
            # Its runs go to a new task: this one must never start again
            # (an administrator's requeue of a failed job, say), or they
            # would run twice. Cancelling an ended job changes nothing else.
            try:
                self.cancel([task.name])
            except HarnessError as error:
                self.sink.note(f"cancelling Slurm task {task.name}: {error}")
            for key in missing:
                if self.attempts[key] >= ATTEMPTS:
                    self.pending.pop(key)
                    self.sink.deliver(RunFailure(key, f"not run: the Slurm tasks given it ended "
                                                      f"before it {ATTEMPTS} times (the last "
                                                      f"{state}; its log: {task.log})"))
                else:
                    again.append(self.pending[key])
        if again:
            self._submit(again)
            self.sink.note(f"{len(again)} run(s) submitted again: {self.tasks[-1].submission}")

    def _last_merge(self, task: _Task) -> None:
        """Reads an ended task's report a last time; a task that ended well
        but whose report does not say so yet is waited for a little (a shared
        filesystem may show the last version late)."""
        self._merge(task)
        deadline = time.monotonic() + REPORT_GRACE_S
        while self._state_of(task) == "COMPLETED" and time.monotonic() < deadline and \
                (task.report is None or not task.report.complete):
            time.sleep(0.5)
            self._merge(task)
        self._reject_if_malformed(task)

    def _whole_array_cancelled(self, array: str) -> bool:
        """Every task of the array that had runs left was cancelled."""
        for (job, _), state in self.states.items():
            if job == array and state.state != "CANCELLED" and state.state != "COMPLETED":
                return False
        return True

    def _mark_merged(self, submission: Path) -> None:
        if not any(t.submission == submission for t in self.tasks):
            files.mark_merged(submission)

    def _cancel_all(self) -> None:
        """Cancels every array with tasks not ended, waits until they leave
        the queue (a second Ctrl-C stops waiting) and merges their reports."""
        arrays = sorted({t.array for t in self.tasks})
        if not arrays:
            return
        self.sink.queue(f"Slurm: cancelling {', '.join(arrays)}")
        try:
            self.cancel(arrays)
            deadline = time.monotonic() + CANCEL_WAIT_S
            while self.tasks and time.monotonic() < deadline:
                time.sleep(POLL_S)
                self.states = self.queue(arrays)
                for task in [t for t in self.tasks if self._ended(t)]:
                    self._retire(task)
        except HarnessError as error:
            self.sink.note(f"cancelling the Slurm arrays {', '.join(arrays)}: {error}")
        except KeyboardInterrupt:
            pass
        for task in self.tasks:  # not gone in time: merge what they wrote; a later command
            self._merge(task)    # cancels them again and merges the rest
        self.tasks.clear()


def _last_line(path: Path) -> str:
    """The line of a task's log that says most: the last naming an error, else
    the last."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()
                 if line.strip()]
    except OSError as error:
        return f"(cannot read it: {error.strerror})"
    errors = [line for line in lines if re.search(r"error|not found|no such", line, re.I)]
    return (errors or lines or ["(nothing)"])[-1]
