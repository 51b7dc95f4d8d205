"""Slurm's client commands (sbatch, squeue, scancel, sinfo, scontrol, srun) as
the Slurm executor, its tasks and `hugeheap doctor --slurm` call them: every
call has a time limit, its output is parsed here, and a failure is one
HarnessError line that quotes Slurm's own message."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from ...errors import HarnessError
from ...measure.units import parse_cpu_list

CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol", "srun")
ANSWER_WITHIN_S = 60.0  # a controller that takes longer is not reachable
# States in which a job has left the queue for good (squeue --states=all
# shows them for MinJobAge seconds, then forgets the job). squeue names a
# job by its flags before its base state, so a job that Slurm requeues shows
# COMPLETING (its old start ending), REQUEUED, REQUEUE_HOLD or SPECIAL_EXIT
# (requeued and held until released), then PENDING: none of them is an end.
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
         "PREEMPTED", "BOOT_FAIL", "DEADLINE", "REVOKED"}


def client_problem() -> str | None:
    """Why this machine cannot be a client of a cluster: commands not on PATH,
    or a SLURM_CONF that names no file (Slurm's commands would retry it for a
    minute). None when it can try."""
    missing = [name for name in CLIENTS if shutil.which(name) is None]
    if missing:
        return (f"{', '.join(missing)} not found: install Slurm's client commands (Debian "
                "package slurm-client) on this machine, or run where they are")
    conf = os.environ.get("SLURM_CONF")
    if conf is not None and not os.path.isfile(conf):
        return f"SLURM_CONF={conf}: no such file (it should name the cluster's slurm.conf)"
    return None


def _call(argv: list[str], stdin: str | None = None, timeout: float = ANSWER_WITHIN_S
          ) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, input=stdin, capture_output=True, text=True,
                              timeout=timeout)
    except FileNotFoundError:
        raise HarnessError(f"{argv[0]} not found: the Slurm executor needs Slurm's client "
                           "commands on this machine (Debian package slurm-client)") from None
    except subprocess.TimeoutExpired:
        raise HarnessError(f"`{argv[0]}` did not answer within {timeout:.0f} s: is Slurm's "
                           "controller reachable from here (`sinfo`)?") from None


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """Slurm's message: its last line of error output, without the program's name."""
    lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    last = lines[-1] if lines else f"exit code {done.returncode}"
    said = re.sub(r"^\w+: (error|fatal): ", "", last).strip()
    if "configuration" in said:  # no slurm.conf, or not one that reads
        conf = os.environ.get("SLURM_CONF", "/etc/slurm/slurm.conf")
        said += f" ({conf}: a client of the cluster needs its slurm.conf there, or SLURM_CONF)"
    return said


def _output(argv: list[str], stdin: str | None = None) -> str:
    done = _call(argv, stdin)
    if done.returncode != 0:
        raise HarnessError(f"`{argv[0]}` failed: {_said(done)}")
    return done.stdout


@dataclass(frozen=True)
class Partition:
    name: str
    up: bool
    time_limit_s: float | None  # None: no limit
    nodes: int
    default: bool


def parse_duration(text: str) -> float | None:
    """Slurm's time limits: [D-]HH:MM:SS, MM:SS, MM, or infinite/UNLIMITED."""
    text = text.strip()
    if text.lower() in ("infinite", "unlimited", "n/a", ""):
        return None
    days, _, rest = text.rpartition("-")
    parts = [float(p) for p in rest.split(":")]
    if len(parts) == 1:  # minutes alone
        parts = [0.0, parts[0], 0.0]
    elif len(parts) == 2:  # MM:SS
        parts = [0.0, *parts]
    hours, minutes, seconds = parts
    return (float(days or 0) * 24 + hours) * 3600 + minutes * 60 + seconds


def partitions() -> list[Partition]:
    """The cluster's partitions, as sinfo lists them."""
    found: dict[str, Partition] = {}
    for line in _output(["sinfo", "--noheader", "--format=%P|%a|%l|%D"]).splitlines():
        name, available, limit, nodes = line.split("|")
        default = name.endswith("*")
        name = name.rstrip("*")
        earlier = found.get(name)
        found[name] = Partition(name, available == "up", parse_duration(limit),
                                int(nodes) + (earlier.nodes if earlier else 0), default)
    return list(found.values())


def config() -> dict[str, str]:
    """The controller's configuration (`scontrol show config`), key to value."""
    values = {}
    for line in _output(["scontrol", "show", "config"]).splitlines():
        key, separator, value = line.partition("=")
        if separator:
            values[key.strip()] = value.strip()
    return values


def check_submission(options: list[str]) -> None:
    """sbatch --test-only with these options: HarnessError with sbatch's
    reason if it would refuse them (an account, a limit, an option)."""
    done = _call(["sbatch", "--test-only", *options], stdin="#!/bin/sh\ntrue\n")
    if done.returncode != 0:
        raise HarnessError(f"sbatch refuses the campaign's jobs: {_said(done)} (sbatch options: "
                           f"{' '.join(options)})")


def submit(script: str, options: list[str]) -> str:
    """Submits the batch script; returns the job id."""
    done = _call(["sbatch", "--parsable", *options, script])
    if done.returncode != 0:
        raise HarnessError(f"sbatch refuses the campaign's job: {_said(done)}")
    return done.stdout.strip().split(";")[0]


@dataclass(frozen=True)
class TaskState:
    state: str  # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, ...
    reason: str  # why it is pending, or None
    node: str

    @property
    def ended(self) -> bool:
        return self.state in ENDED


def queue(array_ids: list[str]) -> dict[tuple[str, int], TaskState]:
    """The state of every task of these job arrays that the controller still
    knows, by (array id, task index)."""
    if not array_ids:
        return {}
    done = _call(["squeue", "--noheader", "--array", "--states=all",
                  f"--jobs={','.join(array_ids)}", "--format=%F|%K|%T|%r|%N"])
    if done.returncode != 0:
        if "Invalid job id" in done.stderr:  # all of them ended long ago and are forgotten
            return {}
        raise HarnessError(f"`squeue` failed: {_said(done)}")
    states = {}
    for line in done.stdout.splitlines():
        array, index, state, reason, node = line.split("|")
        if index.isdigit():
            states[array, int(index)] = TaskState(state.split()[0], reason, node)
    return states


def jobs_named(name: str) -> list[str]:
    """The ids of the job arrays of this user named name that are still queued
    or running."""
    out = _output(["squeue", "--noheader", "--me", f"--name={name}", "--format=%F"])
    return sorted(set(out.split()))


def jobs_on_node(node: str) -> set[str]:
    """The ids of the jobs running on a node."""
    return set(_output(["squeue", "--noheader", f"--nodelist={node}", "--format=%A"]).split())


def cancel(job_ids: list[str]) -> None:
    """Cancels these jobs or array tasks; one that has ended (or that the
    controller has forgotten) is no error."""
    if not job_ids:
        return
    done = _call(["scancel", *job_ids])
    said = (done.stderr or "").strip()
    if done.returncode != 0 and not re.search(r"already completing or completed|Invalid job id",
                                                said):
        raise HarnessError(f"`scancel` failed: {_said(done)}")


def allocated_cpus(job_id: str, node: str) -> list[int] | None:
    """Slurm's (abstract) ids of the CPUs the job holds on node, where the
    controller says (`scontrol show job -d`)."""
    done = _call(["scontrol", "show", "job", "--details", job_id])
    if done.returncode != 0:
        return None
    for match in re.finditer(r"Nodes=(\S+) CPU_IDs=(\S+)", done.stdout):
        if match.group(1) == node:
            try:
                return parse_cpu_list(match.group(2), "CPU_IDs")
            except HarnessError:
                return None
    return None


def run_on_a_node(command: list[str], options: list[str], wait_s: float) -> str:
    """Runs command on one node of the cluster (srun), waiting at most wait_s
    for an allocation; returns its output."""
    done = _call(["srun", f"--immediate={int(wait_s)}", "--nodes=1", "--ntasks=1", "--time=5",
                  "--quiet", *options, *command], timeout=wait_s + ANSWER_WITHIN_S)
    if done.returncode != 0:
        raise HarnessError(f"srun could not run `{' '.join(command[-2:])}` on a node: "
                           f"{_said(done)}")
    return done.stdout
