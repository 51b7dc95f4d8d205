"""One run of a campaign, as a worker process does it: decompress the
instance for a tool that cannot read it compressed (before the measurement
starts), measure the tool with hugeheap run's library, classify its answer,
check it against the instance where the instance can prove it wrong
(checks.py), and keep the output compressed in the campaign directory.

Workers are processes of their own (the runner forks the tool from a single
thread), and die with the harness: a harness killed with SIGKILL takes its
workers and the tools' main processes along, and the next start ends what is
left in the runs' cgroups."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure import machine
from ..measure.runner import Limits, run
from ..measure.supervision import die_with_parent
from .answers.adapters import Answer, classify
from .answers.checks import check
from .answers.toolinfo import answer as tool_info_answer
from .compression import decompress, plain_name
from .folder import model_name, output_name
from .plan import RunSpec
from .scratch import run_folder
from .store import RunKey, RunRecord

OUTPUT_LIMIT = 64 * 2**20  # the adapter reads at most this much of a tool's output


@dataclass(frozen=True)
class RunFailure:
    """A run the harness could not do (a tool that vanished, a cgroup it
    could not make, a worker that died, a bug of ours): not a measurement, so
    it is not stored, and it runs again when the campaign resumes."""
    key: RunKey
    reason: str

    def __str__(self) -> str:
        tool, instance, mode, repetition = self.key
        return f"{tool}/{mode}/{instance}#{repetition}: {self.reason}"


RunOutcome = RunRecord | RunFailure  # what a run delivers


def start_worker(parent: int) -> None:
    """Initialiser of a worker process: Ctrl-C is the harness's to handle, and
    the worker ends when the harness does, however it ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent()
    if os.getppid() != parent:  # the harness died before prctl took hold
        os._exit(1)


def execute_reporting(spec: RunSpec, placement: dict[str, Any] | None = None) -> RunOutcome:
    """execute, with a bug of ours turned into a failure that says where it
    happened, so that the campaign goes on."""
    try:
        return execute(spec, placement)
    except Exception as error:
        where = traceback.extract_tb(error.__traceback__)[-1]
        return RunFailure(spec.key, f"internal error {type(error).__name__}: {error} (at "
                                    f"{Path(where.filename).name}:{where.lineno}); please "
                                    "report it")


def execute(spec: RunSpec, placement: dict[str, Any] | None = None) -> RunOutcome:
    """The finished run, or why the harness could not do it.
    placement: where the executor put the run, kept with the node's facts."""
    with run_folder() as scratch:
        model_file = Path(scratch) / "model"
        output_file = Path(scratch) / "output"
        # The tool starts in a directory of its own: what it writes there
        # (Spin's trail files, say) goes with the run.
        workdir = Path(scratch) / "cwd"
        workdir.mkdir()
        instance = Path(spec.instance_path)
        if spec.decompress:
            copy = Path(scratch) / "instance" / plain_name(instance.name)
            copy.parent.mkdir()
            try:
                decompress(instance, copy)
            except HarnessError as error:
                return RunFailure(spec.key, str(error))
            instance = copy
        argv = [word.replace("{instance}", str(instance)).replace("{model}", str(model_file))
                for word in spec.argv]
        try:
            result = run(argv, Limits(cpu_s=spec.cpu_s, wall_s=spec.wall_s,
                                      memory_bytes=spec.memory_bytes,
                                      cores=list(spec.cores) if spec.cores else None),
                         alloc=spec.alloc, output=str(output_file),
                         group_prefix=spec.group_prefix, end_with_parent=True,
                         cwd=(spec.tool_info and spec.tool_info.workdir) or str(workdir),
                         extra_env=dict(spec.tool_info.environment) if spec.tool_info else None)
        except HarnessError as error:
            return RunFailure(spec.key, str(error))
        with open(output_file, "rb") as f:
            output = f.read(OUTPUT_LIMIT).decode(errors="replace")
        benchexec = None
        if spec.tool_info:
            try:
                answer, benchexec = tool_info_answer(spec.tool_info, argv, result.exit_code,
                                                     result.signal, result.termination_reason,
                                                     output)
            except HarnessError as error:  # the module raised: no verdict, run it again later
                return RunFailure(spec.key, str(error))
        else:
            answer = _answer(spec, result.exit_code, output, model_file)
        kept = output_name(spec.key)
        _compress(output_file, Path(spec.output_dir) / kept)
        if model_file.exists():
            _compress(model_file, Path(spec.output_dir) / model_name(kept))
    if result.status != "ok" and answer.verdict not in ("unknown", "error", "wrong"):
        # An answer printed before a limit struck is not one the run gave within it.
        shown = answer.verdict + (f" {answer.value}" if answer.value is not None else "")
        answer = Answer("unknown", f"answered {shown}, but {result.status}")
    return RunRecord(
        tool=spec.tool, instance=spec.instance, mode=spec.mode, repetition=spec.repetition,
        status=result.status, termination_reason=result.termination_reason,
        verdict=answer.verdict, verdict_detail=answer.detail, answer_value=answer.value,
        exit_code=result.exit_code,
        signal=result.signal, cputime=result.cputime_s, cputime_user=result.cputime_user_s,
        cputime_system=result.cputime_system_s, walltime=result.walltime_s,
        memory_peak=result.memory_peak_bytes, huge_share=result.huge_share,
        tlb_misses=result.tlb_misses, tlb_reason=result.tlb_misses_reason,
        reliable=result.reliable, warnings=json.dumps(result.warnings),
        cores=",".join(map(str, spec.cores or ())), start_time=result.start_time, output=kept,
        node=json.dumps({"host": result.hostname, "facts": machine.node_facts(),
                         **(placement or {})}),
        environment=json.dumps(result.environment), benchexec=benchexec,
        metrics=json.dumps(answer.metrics) if answer.metrics else None,
        steal_time=result.steal_time_s, memory_peak_lower=result.memory_peak_lower_bytes)


def _answer(spec: RunSpec, exit_code: int | None, output: str, model_file: Path) -> Answer:
    answer = classify(spec.adapter, exit_code, output)
    model_text = model_file.read_text(errors="replace") if model_file.exists() else None
    return check(spec.adapter, answer, Path(spec.instance_path), model_text)


def _compress(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    with open(source, "rb") as src, gzip.open(partial, "wb", compresslevel=6) as dst:
        shutil.copyfileobj(src, dst)
    os.replace(partial, target)
