"""The files a Slurm campaign shares between the command that submits it and
its tasks on the nodes, all in the campaign folder's slurm/ (on a filesystem
that the nodes share, NFS say). Every file has one writer and is written whole
(written aside, then renamed), so that a reader sees the old file or the new
one; nothing is locked, and no file is written from two machines.

    slurm/sN/               one submission: one job array
      task.sh               the array's batch script
      job                   the array's job id
      task-I.in.json        the runs task I is to do, in order (written before submitting)
      task-I.json           what task I did so far: its node and each run it finished
                            (rewritten whole by the task after every run)
      task-I.log            the task's own output (Slurm writes it)
      merged                every run of the submission is in results.sqlite

A task's report is checked whole before any of it is merged: one record that
is not a run the task was given, or not a whole run, rejects the file."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ...files import write_whole
from ...measure.allocators import AllocatorMode
from ..answers.toolinfo import ToolInfoRun
from ..folder import CampaignFolder
from ..plan import RunSpec
from ..store import RunKey, RunRecord
from ..worker import RunFailure

INPUT_FORMAT = "hugeheap slurm task input 1"
REPORT_FORMAT = "hugeheap slurm task report 1"


class MalformedReport(Exception):
    """A task's report that cannot be merged; the message says why."""


def submission_dirs(folder: CampaignFolder) -> list[Path]:
    """The campaign's submissions, oldest first."""
    found = [p for p in folder.slurm.glob("s[0-9]*") if p.name[1:].isdigit()]
    return sorted(found, key=lambda p: int(p.name[1:]))


def new_submission_dir(folder: CampaignFolder) -> Path:
    existing = submission_dirs(folder)
    path = folder.slurm / f"s{int(existing[-1].name[1:]) + 1 if existing else 1}"
    path.mkdir(parents=True)
    return path


def write_script(submission: Path, python: str) -> Path:
    """The array's batch script: every task runs slurm/task.py with python."""
    script = submission / "task.sh"
    write_whole(script, f"#!/bin/sh\nexec {shlex.quote(python)} -m "
                        f"hugeheap.campaign.slurm.task {shlex.quote(str(submission))}\n")
    return script


def write_job_id(submission: Path, array: str) -> None:
    write_whole(submission / "job", array + "\n")


def merged(submission: Path) -> bool:
    """Whether every run of the submission is in results.sqlite."""
    return (submission / "merged").exists()


def mark_merged(submission: Path) -> None:
    write_whole(submission / "merged", "")


def input_path(submission: Path, task: int) -> Path:
    return submission / f"task-{task}.in.json"


def report_path(submission: Path, task: int) -> Path:
    return submission / f"task-{task}.json"


def log_path(submission: Path, task: int) -> Path:
    return submission / f"task-{task}.log"


def log_pattern(submission: Path) -> str:
    """log_path for every task of the array, as sbatch --output takes it."""
    return str(submission / "task-%a.log")


def task_count(submission: Path) -> int:
    return len(list(submission.glob("task-*.in.json")))


# -------------------------------------------------------------- task input

def write_input(submission: Path, task: int, specs: list[RunSpec]) -> None:
    write_whole(input_path(submission, task), json.dumps(
        {"format": INPUT_FORMAT, "runs": [asdict(spec) for spec in specs]}))


def read_input(submission: Path, task: int) -> list[RunSpec]:
    """The runs a task was given (the submitting command wrote them: a file
    that does not read is a bug, and raises)."""
    data = json.loads(input_path(submission, task).read_text())
    assert data["format"] == INPUT_FORMAT, data["format"]
    specs = []
    for run in data["runs"]:
        run["alloc"] = AllocatorMode(**run["alloc"])
        run["argv"] = tuple(run["argv"])
        run["cores"] = tuple(run["cores"]) if run["cores"] is not None else None
        if run.get("tool_info") is not None:
            run["tool_info"] = ToolInfoRun.from_json(run["tool_info"])
        specs.append(RunSpec(**run))
    return specs


# ------------------------------------------------------------- task report

@dataclass
class Report:
    """What a task did so far."""
    task: int
    job: str  # ARRAY_TASK, as squeue shows it
    node: dict[str, Any]  # host, facts, and where the task's runs went
    runs: list[RunRecord] = field(default_factory=list)
    not_run: list[RunFailure] = field(default_factory=list)  # the harness could not do them
    complete: bool = False  # the task did every run it was given


def write_report(submission: Path, report: Report) -> None:
    write_whole(report_path(submission, report.task), json.dumps({
        "format": REPORT_FORMAT, "task": report.task, "job": report.job, "node": report.node,
        "complete": report.complete, "runs": [asdict(run) for run in report.runs],
        "not_run": [{"key": list(failure.key), "message": failure.reason}
                    for failure in report.not_run],
    }))


def read_report(submission: Path, task: int, given: set[RunKey]) -> Report | None:
    """The task's report, checked whole; None when the task has written none
    (yet); MalformedReport when any of it is not what a task writes, or
    names a run the task was not given."""
    path = report_path(submission, task)
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise MalformedReport(f"cannot be read ({error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MalformedReport(f"is not whole JSON ({error.msg} at character "
                              f"{error.pos} of {len(text)})") from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        raise MalformedReport("is not a hugeheap task report")
    _expect(data, {"task": int, "job": str, "node": dict, "complete": bool, "runs": list,
                   "not_run": list}, "the report")
    if data["task"] != task:
        raise MalformedReport(f"is the report of task {data['task']}, not of task {task}")
    runs = [_record(run, number, given) for number, run in enumerate(data["runs"], 1)]
    not_run = []
    for entry in data["not_run"]:
        _expect(entry, {"key": list, "message": str}, "a run not run")
        not_run.append(RunFailure(_key(entry["key"], given), entry["message"]))
    keys = [run.key for run in runs] + [failure.key for failure in not_run]
    if len(set(keys)) != len(keys):
        raise MalformedReport("names one run twice")
    return Report(task, data["job"], data["node"], runs, not_run, data["complete"])


_TYPES: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "float": (int, float),
                                       "bool": (bool,)}


def _record(data: object, number: int, given: set[RunKey]) -> RunRecord:
    if not isinstance(data, dict):
        raise MalformedReport(f"run {number} is not a record")
    for spec in fields(RunRecord):
        if spec.name not in data:
            if spec.default is not MISSING:  # a field later versions added
                continue
            raise MalformedReport(f"run {number} has no {spec.name}")
        kinds = str(spec.type).split(" | ")
        value = data[spec.name]
        allowed = tuple(t for kind in kinds for t in _TYPES.get(kind, ()))
        if value is None and "None" in kinds:
            continue
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise MalformedReport(f"run {number}'s {spec.name} is {value!r}, not a {spec.type}")
    extra = set(data) - {spec.name for spec in fields(RunRecord)}
    if extra:
        raise MalformedReport(f"run {number} has fields a run has not: {', '.join(sorted(extra))}")
    record = RunRecord(**data)
    _key(list(record.key), given)
    return record


def _key(key: list[Any], given: set[RunKey]) -> RunKey:
    if len(key) != 4 or not all(isinstance(k, str) for k in key[:3]) or \
            not isinstance(key[3], int):
        raise MalformedReport(f"names a run as {key!r}")
    found: RunKey = (key[0], key[1], key[2], key[3])
    if found not in given:
        raise MalformedReport(f"names a run the task was not given: {'/'.join(map(str, key))}")
    return found


def _expect(data: object, shape: dict[str, type], what: str) -> None:
    if not isinstance(data, dict):
        raise MalformedReport(f"{what} is not a record")
    for key, kind in shape.items():
        if not isinstance(data.get(key), kind):
            raise MalformedReport(f"{what} has no {key} (a {kind.__name__})")


def file_signature(path: Path) -> tuple[int, int, int] | None:
    """What changes when a file is replaced (inode, time, size); None if absent."""
    try:
        status = os.stat(path)
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size
