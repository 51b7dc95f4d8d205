"""A task of a Slurm campaign, on its node. The job array's script runs

    python -m hugeheap.campaign.slurm.task SUBMISSION_DIR

and task I (SLURM_ARRAY_TASK_ID) does the runs of task-I.in.json one after
another, on the cores of its allocation, each measured by the same runner as
in a local campaign (a fresh cgroup per run where the node lets us make one;
otherwise the run says `reliable: false` and why). After every run it
rewrites task-I.json whole, so the submitting command merges each run as it
finishes and a task that dies loses only the run in flight. SIGTERM (scancel,
a time limit) ends the run in flight, which is not recorded.

    python -m hugeheap.campaign.slurm.task probe

prints, as JSON, what `hugeheap doctor --slurm` asks about a node."""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from ... import __version__
from ...errors import HarnessError
from ...measure import firsttouch, hugetlb, hugetlb_hierarchy, machine
from ...measure.cgroups import discover, usable_version
from ...measure.leftover_groups import end_leftover_groups
from ..plan import RunSpec
from ..scratch import remove_orphans
from ..store import RunKey
from ..worker import RunFailure, execute_reporting
from . import commands, files


def main(argv: list[str]) -> int:
    if argv == ["probe"]:
        print(json.dumps(probe()))
        return 0
    if len(argv) != 1 or "SLURM_ARRAY_TASK_ID" not in os.environ:
        print("usage: (in a Slurm job array) python -m hugeheap.campaign.slurm.task "
              "SUBMISSION_DIR", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    try:
        run_task(Path(argv[0]), int(os.environ["SLURM_ARRAY_TASK_ID"]), dict(os.environ))
    except KeyboardInterrupt:
        print("stopped by SIGTERM: the run in flight is not recorded", file=sys.stderr)
        return 143
    return 0


_stopping: list[int] = []  # the signal that stops the task, once one has


def _stop(signum: int, frame: object) -> None:
    """SIGTERM: ends the run in flight (the runner ends it on KeyboardInterrupt)
    and the task. Slurm may signal the tool too, so that the run ends as if by
    itself: the flag says it did not."""
    _stopping.append(signum)
    raise KeyboardInterrupt


def run_task(submission: Path, task: int, env: dict[str, str]) -> None:
    specs = files.read_input(submission, task)
    job_id = env.get("SLURM_JOB_ID", "0")
    node = env.get("SLURMD_NODENAME") or machine.describe()["hostname"]
    cores, placement = allocation_cores(env, os.sched_getaffinity(0), str(node), job_id)
    print(f"task {task} on {node}, cores {placement['cores']} "
          f"({placement['cores_from']}), {len(specs)} runs", file=sys.stderr, flush=True)
    if specs:
        ended = end_dead_tasks_groups(specs[0].group_prefix, str(node))
        if ended:
            print(f"ended {ended} run(s) that dead tasks left on this node", file=sys.stderr)
    remove_orphans()  # the scratch folders of runs whose tasks were killed here
    # What a fresh huge page costs on this node (firsttouch.py): recorded with
    # each run, measured once, before the runs (it is not one of the facts
    # that must be equal: a measured cost varies between runs), and its
    # hugetlb pool when the task started (the pages hugeheap-pool maps from)
    # and whether the node's cgroups count a run's pool pages in its peak
    # exactly or by sampling: nodes may differ, the campaign's machine record
    # describes the coordinator only.
    where = {"slurm": placement, "first_touch": asdict(firsttouch.measure()),
             "hugetlb_pool": machine.hugetlb_pool_record(),
             "hugetlb_peaks": hugetlb_hierarchy.counting()}
    report = files.Report(
        task, f"{env.get('SLURM_ARRAY_JOB_ID', job_id)}_{task}",
        {"host": machine.describe()["hostname"], "facts": machine.node_facts(), **where})
    done = _resume(submission, task, specs, report)
    files.write_report(submission, report)  # the task has started: its node is known
    for spec in specs:
        if spec.key in done:
            continue
        # The node's cgroups are named after the task's job, so that a later
        # task on this node can tell a dead task's leftovers from a live one's.
        placed = replace(spec, cores=tuple(cores), group_prefix=f"{spec.group_prefix}_j{job_id}")
        result = execute_reporting(placed, where)
        if _stopping:
            raise KeyboardInterrupt
        if isinstance(result, RunFailure):
            report.not_run.append(result)
        else:
            report.runs.append(result)
        files.write_report(submission, report)
    # The node's pool when its runs ended: with the pool at the start (in
    # where), what the runs left of it; the coordinator's record has it.
    report.node["hugetlb_pool_after"] = machine.hugetlb_pool_record()
    report.complete = True
    files.write_report(submission, report)


def _resume(submission: Path, task: int, specs: list[RunSpec], report: files.Report
            ) -> set[RunKey]:
    """A task that Slurm requeued (after a node failure, say) starts again:
    it keeps the runs its earlier start reported and returns their keys."""
    try:
        earlier = files.read_report(submission, task, {spec.key for spec in specs})
    except files.MalformedReport as error:
        print(f"the report of an earlier start {error}: starting afresh", file=sys.stderr)
        return set()
    if earlier is None:
        return set()
    report.runs, report.not_run = earlier.runs, earlier.not_run
    done = {run.key for run in earlier.runs} | {failure.key for failure in earlier.not_run}
    print(f"started again (restart {os.environ.get('SLURM_RESTART_COUNT', '?')}): "
          f"{len(done)} runs were done before", file=sys.stderr)
    return done


def allocation_cores(env: dict[str, str], affinity: set[int], node: str, job_id: str,
                     ask_slurm: Any = commands.allocated_cpus
                     ) -> tuple[list[int], dict[str, Any]]:
    """The cores the task's runs get, and how they were found. Where the node
    binds tasks to their cores (TaskPlugin task/affinity or task/cgroup) the
    task's affinity is its allocation. Where it does not (task/none), the
    controller says which CPUs the job holds (Slurm's abstract ids: socket,
    then core, then thread), mapped to the kernel's numbers."""
    cpus_on_node = int(env.get("SLURM_CPUS_ON_NODE") or len(affinity))
    placement: dict[str, Any] = {
        "job_id": job_id, "node": node, "cpus_on_node": cpus_on_node,
        "job_cpus_per_node": env.get("SLURM_JOB_CPUS_PER_NODE"),
        "affinity": sorted(affinity)}
    if len(affinity) <= cpus_on_node:
        cores, how = sorted(affinity), "the task's affinity"
    else:
        held = ask_slurm(job_id, node)
        mapped = _abstract_to_kernel(held) if held else None
        if mapped and set(mapped) <= affinity:
            cores, how = mapped, "the job's CPU_IDs (the node does not bind tasks)"
        else:
            cores = sorted(affinity)[:cpus_on_node]
            how = ("guessed: the node does not bind tasks and the controller did not say "
                   "which CPUs are the job's; runs may share cores with other jobs")
    placement.update(cores=cores, cores_from=how)
    return cores, placement


def _abstract_to_kernel(ids: list[int]) -> list[int] | None:
    every = machine.cpus(set(range(os.cpu_count() or 1)))
    ordered = sorted(every, key=lambda c: (c.package, c.core, c.number))
    if max(ids) >= len(ordered):
        return None
    return sorted(ordered[i].number for i in ids)


def end_dead_tasks_groups(prefix: str, node: str) -> int:
    """Ends the runs (processes and cgroups) that tasks of this campaign left
    on this node when they died (SIGKILL, a node's trouble): groups named
    prefix_jJOB_* whose job no longer runs here. Returns how many."""
    found = discover()
    parents = ([found.v2] if found.v2 else []) + list(found.v1.values())
    jobs = {p.name[len(prefix) + 2:].split("_")[0]
            for parent in parents if parent.is_dir()
            for p in parent.glob(f"{prefix}_j*_*")}
    if not jobs:
        return 0
    try:
        alive = commands.jobs_on_node(node)
    except HarnessError as error:
        print(f"cannot tell which jobs run here, so leftovers stay: {error}", file=sys.stderr)
        return 0
    return sum(end_leftover_groups(f"{prefix}_j{job}", found)
               for job in sorted(jobs - alive))


def probe() -> dict[str, Any]:
    """What a node offers a campaign's tasks."""
    cgroups, problems = usable_version()
    return {"host": machine.describe()["hostname"], "facts": machine.node_facts(),
            "first_touch": asdict(firsttouch.measure()),
            "pool": hugetlb.status(), "python": sys.executable,
            "hugeheap": __version__, "cgroups": cgroups,
            "cgroup_problems": problems, "affinity": sorted(os.sched_getaffinity(0)),
            "cpus_on_node": os.environ.get("SLURM_CPUS_ON_NODE")}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
