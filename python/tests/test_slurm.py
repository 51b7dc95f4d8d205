"""Campaigns on a real Slurm cluster (the `slurm` fixture: one node, this
machine): real minisat runs agree with the same campaign run locally; a
cancelled array resumes without losing or repeating a run; a task killed with
SIGKILL leaves its finished runs merged and the rest run again; task reports
that are not whole are never merged; a bad partition is one clear error;
doctor --slurm sees the cluster."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from campaign_helpers import (
    alive,
    bench,
    leftover_groups,
    make_campaign,
    rows,
    start_until_slow_run,
    wait_for,
)
from hugeheap_cli import cli

from hugeheap.campaign.executors import Sink
from hugeheap.campaign.folder import CampaignFolder
from hugeheap.campaign.instances import prepare
from hugeheap.campaign.plan import plan
from hugeheap.campaign.slurm import files as slurm_files
from hugeheap.campaign.slurm.commands import TaskState
from hugeheap.campaign.slurm.executor import _Session, _Task
from hugeheap.campaign.slurm.task import allocation_cores
from hugeheap.campaign.suite_file import load
from hugeheap.campaign.worker import execute
from hugeheap.measure import hugetlb_hierarchy, machine
from hugeheap.measure.allocators import REPO_ROOT, hugeheap_library
from hugeheap.measure.view import pool_pages
from slurm_cluster import LocalSlurm

SLURM = ("--executor", "slurm")
GENERATOR = REPO_ROOT / "build" / "bin" / "hh-randksat"

# minisat on random 3-SAT near the threshold, about half a second each here.
MINISAT_SUITE = f"""
[campaign]
modes = ["system", "hugeheap"]
seed = 5

[limits]
cpu_time = "60s"
memory = "1GiB"

[tools.minisat]
command = "minisat -verb=0 {{instance}} {{model}}"
adapter = "sat"

[[instances.generate]]
name = "random3sat-240-{{seed}}.cnf"
command = "{GENERATOR} 240 1104 3 {{seed}}"
seeds = [1, 2, 3]
"""


def keyed(out: Path) -> dict[tuple[str, str, int], tuple[str, float, str, str]]:
    """(instance, mode, repetition) -> (verdict, user CPU time, cores, node) of
    every run. User time, not all CPU time: the system time of these runs is
    mostly first touches of memory, whose price this virtual machine's host
    sets from one second to the next."""
    db = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    try:
        return {(i, m, r): (v, c, cores, node) for i, m, r, v, c, cores, node in db.execute(
            "SELECT instance, mode, repetition, verdict, cputime_user, cores, node FROM runs")}
    finally:
        db.close()


def test_a_campaign_on_slurm_agrees_with_the_same_campaign_run_locally(
        slurm: LocalSlurm, tmp_path: Path, cgroups_usable: str) -> None:
    if shutil.which("minisat") is None or not GENERATOR.exists() or hugeheap_library() is None:
        pytest.skip("needs minisat and the build (make)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    suite = tmp_path / "suite.toml"
    suite.write_text(MINISAT_SUITE)
    local, cluster = tmp_path / "local", tmp_path / "slurm"
    # Repetition by repetition, alternating, so that the load of the machine
    # (shared with other work) hits both alike; both run two runs at a time,
    # one core each.
    for repetitions in ("1", "2", "3"):
        done = bench(suite, local, options=("--repeat", repetitions, "--jobs", "2"))
        assert done.returncode == 0, done.stderr
        done = bench(suite, cluster, options=(*SLURM, "--repeat", repetitions,
                                              "--max-array-tasks", "2"))
        assert done.returncode == 0, done.stderr
    here, there = keyed(local), keyed(cluster)
    assert len(here) == len(there) == 18
    assert {k: v[0] for k, v in here.items()} == {k: v[0] for k, v in there.items()}
    assert {v[0] for v in there.values()} == {"unsat"}

    # Each run records its node: this machine's facts, and the allocation.
    facts = machine.node_facts()
    for (instance, mode, repetition), (_, _, cores, node) in there.items():
        recorded = json.loads(node)
        assert recorded["facts"] == facts
        # The node's first-touch costs, measured by its task.
        assert recorded["first_touch"]["sampled_pages"] > 0, recorded["first_touch"]
        # And its hugetlb pool when the task started.
        assert recorded["hugetlb_pool"].keys() == {"total", "free", "reserved", "surplus",
                                                   "available"}, recorded
        # And how its cgroups count a run's pool pages in the run's peak.
        assert recorded["hugetlb_peaks"] == hugetlb_hierarchy.counting(), recorded
        placement = recorded["slurm"]
        assert placement["cores"] == [int(c) for c in cores.split(",")]
        assert placement["cpus_on_node"] == 1 and len(placement["cores"]) == 1
        # The modes of a block ran in one task, on the same core.
        other = "hugeheap" if mode == "system" else "system"
        partner = json.loads(there[instance, other, repetition][3])["slurm"]
        assert (partner["job_id"], partner["cores"]) == (placement["job_id"],
                                                         placement["cores"])
    # Each node's pool when its runs ended is in the session's machine record.
    ended = CampaignFolder(cluster).sessions()[-1]["nodes_at_end"]
    assert list(ended) == [machine.describe()["hostname"]], ended
    assert ended[machine.describe()["hostname"]]["hugetlb_pool_after"].keys() == \
        {"total", "free", "reserved", "surplus", "available"}

    # User CPU times: the difference between the executors (medians of three
    # repetitions per run) is within the run-to-run noise measured here (the
    # spread of the three local repetitions of each run), at the median run.
    runs = {(instance, mode) for instance, mode, _ in here}

    def times(stored: dict[tuple[str, str, int], tuple[str, float, str, str]],
              run: tuple[str, str]) -> list[float]:
        return [stored[(*run, repetition)][1] for repetition in range(3)]

    difference = statistics.median(
        abs(math.log(statistics.median(times(there, run)) / statistics.median(times(here, run))))
        for run in runs)
    noise = statistics.median(math.log(max(times(here, run)) / min(times(here, run)))
                              for run in runs)
    # (With a floor of 25%: three repetitions of sub-second runs show less
    # spread than the machine has. Its runs of 0.7-1.0 s differ by 10-30% from
    # one repetition to the next, and with a floor of 15% the executors once
    # differed by 19% at the median run where the local spread was 14%. A
    # measurement of the wrong thing, such as the harness's own start or the
    # wall time of two runs sharing a core, differs by more.)
    assert difference <= max(noise, 0.25), (difference, noise, here, there)

@dataclass
class InFlight:
    """A campaign on one Slurm task: a (sat) and b (unsat) finished and
    merged, c's slow run in flight, d still to do."""
    suite: Path
    out: Path
    flag: Path  # c is slow while it exists
    harness: subprocess.Popen[str]
    orphan: int  # a process c's run started
    before: list[tuple[object, ...]]  # the rows stored so far

    @property
    def array(self) -> str:
        return (self.out / "slurm" / "s1" / "job").read_text().strip()


ONE_TASK = (*SLURM, "--max-array-tasks", "1")


def in_flight(tmp_path: Path) -> InFlight:
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat", "c": "slow", "d": "sat"})
    out = tmp_path / "camp"
    flag = tmp_path / "slow.flag"
    harness, orphan = start_until_slow_run(suite, out, flag, ONE_TASK)
    wait_for(lambda: len(rows(out)) == 4)  # a and b: merged as they finished
    return InFlight(suite, out, flag, harness, orphan, rows(out))


def every_run_once_and_kept(campaign: InFlight) -> None:
    after = rows(campaign.out)
    assert len(after) == 8 and len({r[:4] for r in after}) == 8, "every run once"
    assert all(r in after for r in campaign.before), "finished runs kept as they were"
    assert all(r[4] == "ok" for r in after)


def test_a_cancelled_array_resumes_without_losing_or_repeating_a_run(
        slurm: LocalSlurm, tmp_path: Path, cgroups_usable: str) -> None:
    campaign = in_flight(tmp_path)
    slurm.command("scancel", campaign.array)
    _, stderr = campaign.harness.communicate(timeout=120)
    assert campaign.harness.returncode == 130, stderr
    assert f"Slurm job array {campaign.array} was cancelled from outside" in stderr
    assert "stopped: 4 of 8 runs finished and kept" in stderr
    wait_for(lambda: not alive(campaign.orphan), timeout=30)  # the run in flight was ended
    assert rows(campaign.out) == campaign.before

    campaign.flag.unlink()
    resumed = bench(campaign.suite, campaign.out, options=ONE_TASK)
    assert resumed.returncode == 0, resumed.stderr
    every_run_once_and_kept(campaign)
    assert not leftover_groups(campaign.out)


def test_a_task_killed_with_sigkill_leaves_its_runs_merged_and_the_rest_rerun(
        slurm: LocalSlurm, tmp_path: Path, cgroups_usable: str) -> None:
    campaign = in_flight(tmp_path)
    tool = parent_of(campaign.orphan)  # the tool's shell, started by the task
    task = parent_of(tool)
    assert "hugeheap.campaign.slurm.task" in Path(f"/proc/{task}/cmdline").read_text()
    campaign.flag.unlink()  # the slow run goes fast when it runs again
    os.kill(task, signal.SIGKILL)
    _, stderr = campaign.harness.communicate(timeout=180)
    assert campaign.harness.returncode == 0, stderr
    assert "ended FAILED with 4 of its runs not done" in stderr
    assert "4 run(s) submitted again" in stderr
    every_run_once_and_kept(campaign)
    # The killed task's run left its cgroup on the node (and a process in it,
    # unless Slurm ended the process first); the next task there ended both.
    wait_for(lambda: not alive(campaign.orphan), timeout=30)
    assert not leftover_groups(campaign.out)
    log = (campaign.out / "slurm" / "s2" / "task-0.log").read_text()
    assert "ended 1 run(s) that dead tasks left on this node" in log


def batch_step_running(job: str) -> bool:
    """Whether the batch step of the job runs on this node (its slurmstepd
    names itself after it)."""
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if status.read_bytes().startswith(f"slurmstepd: [{job}.batch]".encode()):
                return True
        except OSError:
            continue
    return False


def parent_of(pid: int) -> int:
    fields = machine.process_stat_fields(pid)
    assert fields is not None, f"process {pid} is gone"
    return int(fields[1])


def test_task_reports_that_are_not_whole_are_never_merged(slurm: LocalSlurm,
                                                          tmp_path: Path) -> None:
    """A command killed after its tasks finished but before it merged them:
    the next one merges the whole reports and reruns the runs of the others."""
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat", "c": "sat"})
    out = tmp_path / "camp"
    options = (*SLURM, "--max-array-tasks", "3")
    assert bench(suite, out, options=options).returncode == 0
    first = {r[:4]: r for r in rows(out)}
    submission = out / "slurm" / "s1"
    (submission / "merged").unlink()
    reports = {i: json.loads(slurm_files.report_path(submission, i).read_text()) for i in range(3)}
    by_instance = {report["runs"][0]["instance"]: i for i, report in reports.items()}
    truncated = slurm_files.report_path(submission, by_instance["inst/a.cnf"])
    truncated.write_text(truncated.read_text()[:-40])
    half = reports[by_instance["inst/b.cnf"]]
    del half["runs"][1]["cputime"]  # its first run is whole, its second is not
    slurm_files.report_path(submission, by_instance["inst/b.cnf"]).write_text(json.dumps(half))
    db = sqlite3.connect(out / "results.sqlite")
    with db:
        db.execute("DELETE FROM runs")
    db.close()

    again = bench(suite, out, options=options)
    assert again.returncode == 0, again.stderr
    assert "is not whole JSON" in again.stderr and "has no cputime" in again.stderr
    after = {r[:4]: r for r in rows(out)}
    assert len(after) == 6
    kept = {key for key in after if after[key] == first[key]}
    # c's runs were merged from the whole report; a's and b's ran again.
    assert {key[1] for key in kept} == {"inst/c.cnf"} and len(kept) == 2
    assert (submission / f"{truncated.name}.rejected").exists()


def test_a_bad_partition_is_one_clear_error(slurm: LocalSlurm, tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    done = bench(suite, tmp_path / "camp", options=(*SLURM, "--partition", "nope"))
    assert done.returncode == 2
    assert done.stderr == ("hugeheap: --partition nope: no such partition on this cluster "
                           f"(partitions: {slurm.partition})\n")
    assert not (tmp_path / "camp").exists()


def test_no_cluster_is_one_clear_error(tmp_path: Path) -> None:
    if shutil.which("sinfo") is None:
        pytest.skip("Slurm's client commands are not installed")
    suite = make_campaign(tmp_path, {"a": "sat"})
    conf = tmp_path / "slurm.conf"
    done = bench(suite, tmp_path / "camp", env={"SLURM_CONF": str(conf)}, options=SLURM)
    assert done.returncode == 2
    assert done.stderr == (f"hugeheap: --executor slurm: SLURM_CONF={conf}: no such file (it "
                           "should name the cluster's slurm.conf)\n")
    conf.write_text("")
    done = bench(suite, tmp_path / "camp", env={"SLURM_CONF": str(conf)}, options=SLURM)
    assert done.returncode == 2
    assert done.stderr == ("hugeheap: `sinfo` failed: Unable to process configuration file "
                           f"({conf}: a client of the cluster needs its slurm.conf there, "
                           "or SLURM_CONF)\n")


def test_doctor_sees_the_cluster_and_a_node(slurm: LocalSlurm, cgroups_usable: str) -> None:
    done = cli("doctor", "--slurm", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["problems"] == []
    assert found["cluster"] == "hugeheaptest"
    assert [p["name"] for p in found["partitions"]] == [slurm.partition]
    assert found["node"]["cgroups"] == cgroups_usable
    assert found["node"]["facts"] == machine.node_facts()
    # The node's hugetlb pool (what hugeheap-pool maps from) and how its runs'
    # peaks count pool pages, as this machine's `pool status` reads them.
    pool = found["node"]["pool"]
    assert {key: pool[key] for key in ("total", "free", "reserved", "surplus", "available")} \
        == machine.hugetlb_pool_record()
    assert pool["peaks"] == hugetlb_hierarchy.counting()
    shown = cli("doctor", "--slurm")
    assert f"partition   {slurm.partition} (default): up, 1 node(s)" in shown.stdout
    assert f"cgroups for runs: {cgroups_usable}" in shown.stdout
    assert f"its pool    {pool_pages(pool)}" in shown.stdout
    if pool["supported"]:
        assert f"pool pages in runs' peaks: {pool['peaks']['how']}" in shown.stdout


def test_a_task_takes_the_cores_of_its_allocation() -> None:
    """Where the node binds tasks, the affinity is the allocation; where it
    does not, the controller's CPU ids are; failing both, a guess says so."""
    env = {"SLURM_CPUS_ON_NODE": "1", "SLURM_JOB_CPUS_PER_NODE": "1"}
    cores, how = allocation_cores(env, {1}, "n", "7", lambda job, node: None)
    assert cores == [1] and how["cores_from"] == "the task's affinity"
    cores, how = allocation_cores(env, {0, 1}, "n", "7", lambda job, node: [1])
    assert cores == [1] and how["cores_from"].startswith("the job's CPU_IDs")
    cores, how = allocation_cores(env, {0, 1}, "n", "7", lambda job, node: None)
    assert cores == [0] and how["cores_from"].startswith("guessed")


def test_ctrl_c_cancels_the_array_and_keeps_finished_runs(slurm: LocalSlurm, tmp_path: Path,
                                                          cgroups_usable: str) -> None:
    suite = make_campaign(tmp_path, {"a": "sat", "c": "slow"})
    out = tmp_path / "camp"
    flag = tmp_path / "slow.flag"
    harness, orphan = start_until_slow_run(suite, out, flag, (*SLURM, "--max-array-tasks", "1"))
    wait_for(lambda: len(rows(out)) == 2)
    harness.send_signal(signal.SIGINT)
    _, stderr = harness.communicate(timeout=120)
    assert harness.returncode == 130, stderr
    assert "stopped: 2 of 4 runs finished and kept" in stderr and "Traceback" not in stderr
    array = (out / "slurm" / "s1" / "job").read_text().strip()
    assert slurm.command("squeue", "--noheader", f"--jobs={array}") == ""
    wait_for(lambda: not alive(orphan), timeout=30)
    assert not leftover_groups(out) and len(rows(out)) == 2


def test_a_killed_command_leaves_an_array_the_next_one_cancels(
        slurm: LocalSlurm, tmp_path: Path, cgroups_usable: str) -> None:
    campaign = in_flight(tmp_path)
    campaign.harness.send_signal(signal.SIGKILL)
    campaign.harness.communicate()
    assert alive(campaign.orphan)  # the array goes on without its command
    campaign.flag.unlink()
    resumed = bench(campaign.suite, campaign.out, options=ONE_TASK)
    assert resumed.returncode == 0, resumed.stderr
    assert "ended 1 run(s) that a killed harness left going" in resumed.stderr
    assert not alive(campaign.orphan)
    every_run_once_and_kept(campaign)


def test_a_task_that_cannot_start_stops_the_campaign_with_its_log(slurm: LocalSlurm,
                                                                  tmp_path: Path) -> None:
    """Here Python cannot start on the node (a PYTHONHOME that is not there)."""
    suite = make_campaign(tmp_path, {"a": "sat", "b": "sat"})
    out = tmp_path / "camp"
    done = bench(suite, out, options=(*SLURM, "--slurm-option=--export=ALL,PYTHONHOME=/none"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("hugeheap: Slurm task ") and "failed before it ran anything; " \
        f"its log {out.resolve()}/slurm/s1/task-" in lines[-1], done.stderr
    assert lines[-1].endswith("says: ModuleNotFoundError: No module named 'encodings'")
    assert "Traceback" not in done.stderr and rows(out) == []


def test_a_requeued_task_goes_on_where_it_stopped(slurm: LocalSlurm, tmp_path: Path,
                                                  cgroups_usable: str) -> None:
    """Slurm requeues a task (here by hand; on a cluster after a node failure):
    it starts again and runs only what it had not finished."""
    campaign = in_flight(tmp_path)
    array = campaign.array
    job = slurm.command("squeue", "--noheader", "--format=%A", f"--jobs={array}_0").strip()
    campaign.flag.unlink()
    slurm.command("scontrol", "requeue", f"{array}_0")
    wait_for(lambda: "PENDING" in slurm.command("squeue", "--noheader", "--format=%T",
                                                 f"--jobs={array}"))
    # Slurm holds a requeued job back for a while (its BeginTime), and so
    # lets the old start end first: its batch step reports the script's exit
    # status when it ends, and the controller applies it to the job by its id,
    # whichever start is running then (slurmctld's complete-batch-script
    # handler, Slurm 22.05): a new start forced before that report was failed
    # by it, before it wrote a line (once in some 30 tries here, under load).
    # The start is forced only once the old batch step is gone.
    wait_for(lambda: not batch_step_running(job))
    slurm.command("scontrol", "update", f"JobId={array}_0", "StartTime=now")
    _, stderr = campaign.harness.communicate(timeout=300)
    assert campaign.harness.returncode == 0, stderr
    every_run_once_and_kept(campaign)
    # The requeued task did the rest itself (the whole stderr on failure: it
    # names the state in which the harness saw the task end).
    assert "submitted again" not in stderr, stderr
    log = (campaign.out / "slurm" / "s1" / "task-0.log").read_text()
    assert "started again (restart 1): 4 runs were done before" in log
    assert log.count("task 0 on ") == 2  # the log of the first start is kept
    assert not alive(campaign.orphan)


class ScriptedController:
    """Slurm's controller as the executor sees it, answering from a script:
    the state of task 0 of array 7 at each question; what it was told to
    cancel and to submit is kept."""

    def __init__(self) -> None:
        self.state = "RUNNING"
        self.cancelled: list[str] = []
        self.submitted: list[list[str]] = []

    def queue(self, arrays: list[str]) -> dict[tuple[str, int], TaskState]:
        assert arrays == ["7"]
        return {("7", 0): TaskState(self.state, "None", "n1")}

    def cancel(self, jobs: list[str]) -> None:
        self.cancelled += jobs

    def submit(self, script: str, options: list[str]) -> str:
        self.submitted.append(options)
        return "8"


def a_session_with_one_task(tmp_path: Path, controller: ScriptedController
                            ) -> tuple[Any, list[Any], list[Any]]:
    """A session of the Slurm executor with one task (array 7, task 0) given
    one block (instance a under both modes), as _submit would have left it;
    the block's runs, really run here; what the session delivers."""
    suite = load(make_campaign(tmp_path, {"a": "sat"}))
    folder = CampaignFolder(tmp_path / "camp")
    folder.lock().release()  # makes the folder
    [block] = plan(suite, prepare(suite, folder.instances, None), 1, folder, set())
    submission = slurm_files.new_submission_dir(folder)
    slurm_files.write_input(submission, 0, block)
    records = [execute(spec) for spec in block]
    delivered: list[Any] = []
    executor = SimpleNamespace(max_array_tasks=1, resources=[], options=[],
                               time_limit=lambda limits: 1)
    session = _Session(executor, folder, Sink(delivered.append),  # type: ignore[arg-type]
                       queue=controller.queue, cancel=controller.cancel,
                       submit=controller.submit)
    session.pending = {spec.key: spec for spec in block}
    session.tasks.append(_Task(submission, 0, "7", dict(session.pending), time.monotonic()))
    return session, records, delivered


def report_of(session: Any, runs: list[Any], complete: bool) -> None:
    """Task 0's report, as the task writes it after each run."""
    report = slurm_files.Report(0, "7_0", {"host": "n1"}, list(runs), complete=complete)
    slurm_files.write_report(session.tasks[0].submission, report)


def test_a_requeued_task_is_never_taken_for_ended(tmp_path: Path) -> None:
    """Between `scontrol requeue` of a running task and its new start the
    controller shows the old start ending (COMPLETING), the task requeued
    (REQUEUED), requeued and held (REQUEUE_HOLD, SPECIAL_EXIT: until someone
    releases it), then pending. At none of them does the session take the
    task for ended: it cancels nothing, submits nothing again, and delivers
    each run once, as the task's report has it."""
    controller = ScriptedController()
    session, records, delivered = a_session_with_one_task(tmp_path, controller)
    report_of(session, records[:1], complete=False)
    for state in ("RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "SPECIAL_EXIT",
                  "PENDING", "RUNNING"):
        controller.state = state
        session.asked = 0.0  # the queue is asked at this poll
        session._poll()
        assert len(session.tasks) == 1, f"taken for ended when the controller said {state}"
        assert delivered == records[:1]
    report_of(session, records, complete=True)  # the new start did the second run
    controller.state = "COMPLETED"
    session._poll()
    assert not session.tasks and delivered == records
    assert controller.cancelled == [] and controller.submitted == []


def test_a_task_that_ended_with_runs_not_done_is_cancelled_before_they_go_again(
        tmp_path: Path) -> None:
    """A task that ended FAILED (a node's trouble, or Slurm killing a new
    start) with a run not done: the run goes to a new task, after the old
    one is cancelled, so that no later requeue can start it and run the run
    a second time."""
    controller = ScriptedController()
    session, records, delivered = a_session_with_one_task(tmp_path, controller)
    report_of(session, records[:1], complete=False)
    controller.state = "FAILED"
    session._poll()
    assert delivered == records[:1]
    assert controller.cancelled == ["7_0"]
    [options] = controller.submitted
    assert "--array=0-0" in options
    assert [task.array for task in session.tasks] == ["8"]
    assert set(session.tasks[0].given) == {records[1].key}
