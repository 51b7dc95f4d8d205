"""Campaigns end to end, with a small shell tool standing in for a solver:
resuming after the harness is killed with SIGKILL or stopped with Ctrl-C,
answers checked and contradictions marked wrong, the report's files."""

from __future__ import annotations

import bz2
import functools
import gzip
import hashlib
import json
import lzma
import os
import signal
import socket
import sqlite3
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from campaign_helpers import (
    SUITE,
    TOOL,
    alive,
    bench,
    leftover_groups,
    make_campaign,
    private_temporary_directory,
    rows,
    scratch_folders,
    start_until_slow_run,
    wait_for,
)
from hugeheap_cli import cli

from hugeheap.campaign import scratch
from hugeheap.campaign.coordinator import run_campaign
from hugeheap.campaign.executors import LocalExecutor
from hugeheap.campaign.store import Store
from hugeheap.campaign.suite_file import load
from hugeheap.measure import machine
from hugeheap.report.analysis import analyse


def test_a_campaign_runs_every_mode_and_checks_models(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat"})
    out = tmp_path / "camp"
    done = bench(suite, out)
    assert done.returncode == 0, done.stderr
    stored = rows(out)
    assert [(r[1], r[2], r[5]) for r in stored] == [
        ("inst/a.cnf", "hugeheap", "sat"), ("inst/a.cnf", "system", "sat"),
        ("inst/b.cnf", "hugeheap", "unsat"), ("inst/b.cnf", "system", "unsat")]
    db = sqlite3.connect(out / "results.sqlite")
    assert {d for (d,) in db.execute("SELECT verdict_detail FROM runs WHERE verdict = 'sat'")} \
        == {"model checked"}
    for name in ("suite.toml", "machine.json", "outputs/fake/system/inst__a.cnf.r0.log.gz"):
        assert (out / name).exists(), name
    # The same command again finds nothing to do.
    again = bench(suite, out)
    assert again.returncode == 0 and rows(out) == stored
    assert "4 of 4 runs finished (0 now)" in again.stderr


def test_resume_after_sigkill_loses_nothing_finished(tmp_path: Path, cgroups_usable: str) -> None:
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat", "c": "slow", "d": "sat"})
    out = tmp_path / "camp"
    flag = tmp_path / "slow.flag"
    env = private_temporary_directory(tmp_path)
    harness, orphan = start_until_slow_run(suite, out, flag, env=env)
    before = rows(out)
    harness.send_signal(signal.SIGKILL)
    harness.communicate()
    assert len(before) == 4 and {r[1] for r in before} == {"inst/a.cnf", "inst/b.cnf"}
    # The run in flight left a process and its cgroup behind, and its
    # scratch folder once its worker died with the harness.
    assert alive(orphan) and leftover_groups(out)
    wait_for(lambda: not any(alive(owner(folder)) for folder in scratch_folders(env)))
    assert len(scratch_folders(env)) == 1
    assert rows(out) == before

    flag.unlink()
    resumed = bench(suite, out, {"HH_TEST_FLAG": str(flag), **env})
    assert resumed.returncode == 0, resumed.stderr
    assert "ended 1 run(s) that a killed harness left going" in resumed.stderr
    assert "resuming" in resumed.stderr
    wait_for(lambda: not alive(orphan), timeout=10)
    assert not leftover_groups(out) and not scratch_folders(env)
    after = rows(out)
    keys = [r[:4] for r in after]
    assert len(after) == 8 and len(set(keys)) == 8, "every run once"
    assert all(r in after for r in before), "finished runs kept as they were"
    assert all(r[4] == "ok" for r in after)


def owner(folder: Path) -> int:
    """The pid of the worker that made a scratch folder (hugeheap-run-PID-...)."""
    return int(folder.name.split("-")[2])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_runs_in_flight_and_keeps_finished(tmp_path: Path, cgroups_usable: str,
                                                        stop: signal.Signals) -> None:
    """Ctrl-C and SIGTERM alike: the run in flight ends, leaving nothing
    behind (its process, cgroup, half-written output, scratch folder)."""
    suite = make_campaign(tmp_path, {"a": "sat", "c": "slow"})
    out = tmp_path / "camp"
    flag = tmp_path / "slow.flag"
    env = private_temporary_directory(tmp_path)
    harness, orphan = start_until_slow_run(suite, out, flag, env=env)
    assert len(scratch_folders(env)) == 1  # the slow run's
    harness.send_signal(stop)
    _, stderr = harness.communicate(timeout=60)
    assert harness.returncode == 130, stderr
    assert "stopped: 2 of 4 runs finished and kept" in stderr
    assert "Traceback" not in stderr
    wait_for(lambda: not alive(orphan), timeout=10)
    assert not leftover_groups(out) and len(rows(out)) == 2
    assert not list((out / "outputs").rglob("*.partial"))
    assert not scratch_folders(env)
    report = cli("report", str(out))
    assert "the campaign is not complete: 2 runs are missing" in report.stderr
    assert "1/2" in report.stdout  # c counts as unsolved


def test_a_killed_worker_leaves_nothing_behind(tmp_path: Path, cgroups_usable: str) -> None:
    """A worker killed in a run (as the OOM killer would) is replaced at once,
    and what its run left is ended then, not when the campaign ends: the
    tool's processes, their cgroup and the run's scratch folder. The run is a
    harness error, not stored; the campaign goes on."""
    suite = make_campaign(tmp_path, {"a": "sat", "c": "slow"})
    out = tmp_path / "camp"
    flag = tmp_path / "slow.flag"
    env = private_temporary_directory(tmp_path)
    harness, orphan = start_until_slow_run(suite, out, flag, env=env)
    [folder] = scratch_folders(env)
    os.kill(owner(folder), signal.SIGKILL)
    # The new worker runs the slow instance's other mode, slow too.
    pid_file = Path(f"{flag}.pid")
    wait_for(lambda: pid_file.read_text().strip() not in ("", str(orphan)))
    wait_for(lambda: not alive(orphan), timeout=10)
    [now] = scratch_folders(env)
    assert now != folder and alive(owner(now))
    flag.unlink()
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the slow run ends now
    _, stderr = harness.communicate(timeout=120)
    assert "the worker process died" in stderr, stderr
    assert len(rows(out)) == 3  # the run of the killed worker runs again on resume
    assert not scratch_folders(env) and not leftover_groups(out)


def test_only_scratch_folders_whose_process_is_gone_are_removed(tmp_path: Path) -> None:
    """Named by pid, start time and host: a folder of a live process is kept,
    one of a dead process or of a reused pid goes, another host's and one
    named otherwise stay."""
    host = socket.gethostname()
    gone_pid = _a_pid_no_process_has()
    me, my_start = os.getpid(), machine.process_start_ticks(os.getpid())
    folders = {
        "mine": f"hugeheap-run-{me}-{my_start}-{host}-abc123",
        "dead": f"hugeheap-run-{gone_pid}-12345-{host}-abc123",
        "reused pid": f"hugeheap-run-{me}-{(my_start or 0) + 1}-{host}-abc123",
        "other host": f"hugeheap-run-{gone_pid}-12345-{host}-elsewhere-abc123",
        "older name": "hugeheap-run-x8y7z6",
    }
    for name in folders.values():
        (tmp_path / name / "instance").mkdir(parents=True)
    assert scratch.remove_orphans(tmp_path) == 2
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {folders[k] for k in ("mine", "other host", "older name")}
    # A process that ended but was not reaped yet (a zombie) runs no more.
    my_fields = machine.process_stat_fields(me)
    assert my_fields is not None
    zombie = ["Z", *my_fields[1:]]
    assert scratch.remove_orphans(tmp_path, lambda pid: zombie if pid == me else my_fields) == 1
    assert not (tmp_path / folders["mine"]).exists()
    # A made folder is named so; without /proc nothing can be told, nothing goes.
    with scratch.run_folder(tmp_path) as made:
        assert Path(made).name.startswith(f"hugeheap-run-{me}-{my_start}-{host}-")
        assert scratch.remove_orphans(tmp_path, stat_fields=lambda pid: None) == 0
        assert scratch.remove_orphans(tmp_path) == 0 and Path(made).is_dir()


def _a_pid_no_process_has() -> int:
    child = subprocess.Popen(["true"])
    child.wait()  # reaped: its pid is free (and not reused this soon)
    return child.pid


def test_contradicting_answers_are_marked_wrong(tmp_path: Path) -> None:
    suite_text = SUITE + '\n[tools.liar]\ncommand = "./liar.sh {instance}"\nadapter = "sat"\n'
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat"}, suite_text)
    liar = tmp_path / "liar.sh"  # says UNSAT to everything
    liar.write_text('#!/bin/sh\necho "s UNSATISFIABLE"\nexit 20\n')
    liar.chmod(0o755)
    out = tmp_path / "camp"
    done = bench(suite, out)
    assert done.returncode == 1
    assert "WRONG ANSWERS: inst/a.cnf: 2 run(s) say SAT" in done.stderr
    assert "the UNSAT runs are marked wrong" in done.stderr
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "1/2 (1 wrong)" in report.stdout and "WRONG ANSWERS" in report.stderr


def test_a_model_that_does_not_hold_is_wrong(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "badmodel"})
    out = tmp_path / "camp"
    assert bench(suite, out).returncode == 0
    db = sqlite3.connect(out / "results.sqlite")
    details = db.execute("SELECT DISTINCT verdict, verdict_detail FROM runs").fetchall()
    assert details == [("wrong", "the model leaves clause 1 false: [1, -2]")]


COMPRESSED = SUITE.replace('"inst/*.cnf"', '"inst/*.cnf.*"') + """
# Tells where its instance is: in the run's own folder, decompressed ...
[tools.where]
command = "./where.sh {instance}"
adapter = 'regex:^got /.*/hugeheap-run-[^/]+/(?P<answer>instance/\\S+)$'

# ... or where the suite has it, compressed.
[tools.reader]
command = "./where.sh {instance}"
adapter = 'regex:^got /.*/inst/(?P<answer>\\S+)$'
reads_compressed = ["FORMAT"]
"""


@pytest.mark.parametrize(("format_name", "suffix", "compress"), [
    ("gzip", ".gz", gzip.compress), ("bzip2", ".bz2", bz2.compress), ("xz", ".xz", lzma.compress),
    ("lzma", ".lzma", functools.partial(lzma.compress, format=lzma.FORMAT_ALONE))])
def test_compressed_instances(tmp_path: Path, format_name: str, suffix: str,
                              compress: Callable[[bytes], bytes]) -> None:
    """A tool that does not read the format gets the instance decompressed in
    its run's folder; one that does gets the file as it is; models are
    checked against the compressed formula; the campaign records each file's
    checksum as stored."""
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat"},
                          COMPRESSED.replace("FORMAT", format_name))
    for plain in sorted((tmp_path / "inst").iterdir()):
        plain.with_name(plain.name + suffix).write_bytes(compress(plain.read_bytes()))
        plain.unlink()
    where = tmp_path / "where.sh"
    where.write_text('#!/bin/sh\necho "got $1"\n')
    where.chmod(0o755)
    out = tmp_path / "camp"
    env = private_temporary_directory(tmp_path)
    done = bench(suite, out, env)
    assert done.returncode == 0, done.stderr
    answers = {(tool, instance, mode): verdict
               for tool, instance, mode, _, status, verdict, *_ in rows(out)}
    for mode in ("system", "hugeheap"):
        assert answers[("fake", "inst/a.cnf", mode)] == "sat"
        assert answers[("fake", "inst/b.cnf", mode)] == "unsat"
        assert answers[("where", "inst/a.cnf", mode)] == "instance/a.cnf"
        assert answers[("reader", "inst/b.cnf", mode)] == f"b.cnf{suffix}"
    db = sqlite3.connect(out / "results.sqlite")
    assert {d for (d,) in db.execute("SELECT verdict_detail FROM runs WHERE verdict = 'sat'")} \
        == {"model checked"}
    recorded = json.loads(Store(out / "results.sqlite", readonly=True).meta("identity") or "{}")
    assert recorded["files"] == {f"inst/{name}.cnf": sha256(tmp_path / "inst" /
                                                            f"{name}.cnf{suffix}")
                                 for name in ("a", "b")}
    assert not scratch_folders(env)  # the decompressed copies went with their runs


def test_a_changed_instance_file_is_another_campaign(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    instance = tmp_path / "inst" / "a.cnf"
    said = refusal_after(suite, tmp_path / "camp",
                         lambda: instance.write_text(instance.read_text() + "c edited\n"))
    assert "holds a campaign of another suite (its files differ" in said


def test_a_damaged_compressed_instance_is_named(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"}, SUITE.replace('"inst/*.cnf"', '"inst/*.xz"'))
    instance = tmp_path / "inst" / "a.cnf"
    damaged = lzma.compress(instance.read_bytes())
    (tmp_path / "inst" / "a.cnf.xz").write_bytes(damaged[:len(damaged) // 2])
    instance.unlink()
    done = bench(suite, tmp_path / "camp")
    assert done.returncode != 0
    assert "a.cnf.xz: damaged xz data (Compressed file ended before" in done.stderr
    assert "Traceback" not in done.stderr and not rows(tmp_path / "camp")


def refusal_after(suite: Path, out: Path, change: Callable[[], object]) -> str:
    """What the harness says when the campaign in out, once run, is run again
    after the change."""
    assert bench(suite, out).returncode == 0
    change()
    refused = bench(suite, out)
    assert refused.returncode == 2
    return refused.stderr


def test_another_suite_in_the_same_directory_is_refused(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    said = refusal_after(suite, tmp_path / "camp",
                         lambda: suite.write_text(SUITE.replace('"20s"', '"30s"')))
    assert "holds a campaign of another suite (its limits differ" in said


def test_too_many_jobs_is_an_error(tmp_path: Path) -> None:
    suite = make_campaign(tmp_path, {"a": "sat"})
    done = cli("bench", str(suite), "--out", str(tmp_path / "camp"), "--jobs", "4096")
    assert done.returncode == 2 and "--jobs 4096: this machine has only" in done.stderr
    assert not (tmp_path / "camp" / "results.sqlite").exists()


def test_parallel_jobs_run_on_disjoint_cores(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two cores")
    suite = make_campaign(tmp_path, {f"i{n}": "sat" for n in range(6)})
    out = tmp_path / "camp"
    done = cli("bench", str(suite), "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    db = sqlite3.connect(out / "results.sqlite")
    core_sets = {cores for (cores,) in db.execute("SELECT DISTINCT cores FROM runs")}
    assert len(core_sets) == 2, core_sets
    first, second = (set(c.split(",")) for c in core_sets)
    assert not first & second
    # Each instance's modes ran back to back on one worker's cores.
    per_block = db.execute("SELECT COUNT(DISTINCT cores) FROM runs GROUP BY instance").fetchall()
    assert all(count == 1 for (count,) in per_block)


def hugeheap_library_copies(tmp_path: Path) -> tuple[Path, Path]:
    """Two libhugeheap.so files that work alike but differ in their bytes."""
    from hugeheap.measure.allocators import hugeheap_library
    built = hugeheap_library()
    if built is None:
        pytest.skip("libhugeheap.so is not built")
    first, second = tmp_path / "first.so", tmp_path / "second.so"
    first.write_bytes(Path(built).read_bytes())
    second.write_bytes(Path(built).read_bytes() + b"\0")
    return first, second


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def preloaded_in_output(out: Path) -> set[str]:
    """What the runs' tools saw in LD_PRELOAD (the tool prints it), where set."""
    return {line.split("=", 1)[1] for log in (out / "outputs").rglob("*.log.gz")
            for line in gzip.open(log, "rt").read().splitlines()
            if line.startswith("LD_PRELOAD=") and line != "LD_PRELOAD="}


def test_the_library_recorded_is_the_library_preloaded(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The mode is resolved when the suite is loaded and carried with every
    run: a library that changes afterwards (here HUGEHEAP_LIBRARY) changes
    neither what the runs preload nor what the campaign records."""
    first, second = hugeheap_library_copies(tmp_path)
    suite_file = make_campaign(tmp_path, {"a": "sat", "b": "unsat"})
    tool = tmp_path / "tool.sh"
    tool.write_text(TOOL.replace("#!/bin/sh\n", '#!/bin/sh\necho "LD_PRELOAD=$LD_PRELOAD"\n'))
    monkeypatch.setenv("HUGEHEAP_LIBRARY", str(first))
    suite = load(suite_file)
    monkeypatch.setenv("HUGEHEAP_LIBRARY", str(second))
    out = tmp_path / "camp"
    outcome = run_campaign(suite, out, LocalExecutor(1), 1)
    assert outcome.ran == 4 and not outcome.harness_errors
    assert preloaded_in_output(out) == {str(first)}
    with Store(out / "results.sqlite", readonly=True) as store:
        recorded = json.loads(store.meta("identity") or "{}")
    assert recorded["libraries"]["hugeheap"] == sha256(first)
    machine = json.loads((out / "machine.json").read_text())
    assert machine[-1]["allocators"]["hugeheap"]["library"] == str(first)


def test_a_mode_of_ones_own_compares_two_builds(tmp_path: Path) -> None:
    first, second = hugeheap_library_copies(tmp_path)
    suite_file = make_campaign(tmp_path, {"a": "sat"}, SUITE.replace(
        'modes = ["system", "hugeheap"]', 'modes = ["old", "new"]') + f"""
[allocators.old]
like = "hugeheap"
library = "{first.name}"

[allocators.new]
like = "hugeheap-nothp"
library = "{second}"
environment = {{ HUGEHEAP_RELEASE_DELAY_MS = "0" }}
""")
    (tmp_path / "tool.sh").write_text(TOOL.replace(
        "#!/bin/sh\n", '#!/bin/sh\necho "LD_PRELOAD=$LD_PRELOAD"\n'
        'echo "THP=$HUGEHEAP_THP DELAY=$HUGEHEAP_RELEASE_DELAY_MS"\n'))
    out = tmp_path / "camp"
    assert bench(suite_file, out).returncode == 0
    assert preloaded_in_output(out) == {str(first), str(second)}
    new_log = gzip.open(out / "outputs/fake/new/inst__a.cnf.r0.log.gz", "rt").read()
    assert "THP=off DELAY=0" in new_log
    with Store(out / "results.sqlite", readonly=True) as store:
        recorded = json.loads(store.meta("identity") or "{}")
        environments = {r.mode: json.loads(r.environment or "{}")["set"] for r in store.runs()}
    assert recorded["libraries"] == {"old": sha256(first), "new": sha256(second)}
    # Each run records what the harness set in its tool's environment.
    assert environments == {"old": {"LD_PRELOAD": str(first)},
                            "new": {"LD_PRELOAD": str(second), "HUGEHEAP_THP": "off",
                                    "HUGEHEAP_RELEASE_DELAY_MS": "0"}}


GENERATOR = """#!/bin/sh
echo "c sat"
echo "p cnf 2 1"
echo "1 -2 0"
"""


def test_a_rebuilt_generator_is_another_campaign(tmp_path: Path) -> None:
    suite_file = make_campaign(tmp_path, {"a": "sat"}, SUITE + """
[[instances.generate]]
name = "gen-{seed}.cnf"
command = "./gen.sh {seed}"
seeds = [1]
""")
    generator = tmp_path / "gen.sh"
    generator.write_text(GENERATOR)
    generator.chmod(0o755)
    rebuilt = GENERATOR.replace("c sat", "c sat, from a rebuilt generator")
    said = refusal_after(suite_file, tmp_path / "camp", lambda: generator.write_text(rebuilt))
    assert "(its generators differ" in said


def test_a_tool_runs_on_its_own_instances_only(tmp_path: Path) -> None:
    suite_file = make_campaign(tmp_path, {"a": "sat", "b": "unsat", "c": "sat"}, SUITE + """
[tools.picky]
command = "./tool.sh {instance}"
adapter = "sat"
instances = ["inst/b.*"]
""")
    out = tmp_path / "camp"
    done = bench(suite_file, out)
    assert done.returncode == 0, done.stderr
    ran = {(tool, instance) for tool, instance, *_ in rows(out)}
    assert {i for t, i in ran if t == "picky"} == {"inst/b.cnf"}
    assert {i for t, i in ran if t == "fake"} == {"inst/a.cnf", "inst/b.cnf", "inst/c.cnf"}
    assert "8 of 8 runs finished" in done.stderr
    summaries = {(s.tool, s.mode): s for s in analyse(out).summaries}
    assert summaries[("picky", "system")].instances == 1
    assert summaries[("fake", "system")].instances == 3


def test_a_block_is_not_paired_across_unlike_nodes(tmp_path: Path) -> None:
    """The other mode of the block ran where THP was `always` (here, a stored
    run altered so): the run done here is not stored beside it."""
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat"})
    out = tmp_path / "camp"
    assert bench(suite, out).returncode == 0
    db = sqlite3.connect(out / "results.sqlite")
    (text,) = db.execute("SELECT node FROM runs WHERE mode = 'system' AND instance = "
                         "'inst/a.cnf'").fetchone()
    node = json.loads(text)
    assert node["facts"] == machine.node_facts()
    node["host"] = "elsewhere"
    node["facts"]["thp"]["enabled"] = "always"
    with db:
        db.execute("UPDATE runs SET node = ? WHERE mode = 'system' AND instance = 'inst/a.cnf'",
                   (json.dumps(node),))
        db.execute("DELETE FROM runs WHERE mode = 'hugeheap'")
    db.close()
    refused = bench(suite, out)
    assert refused.returncode == 1
    assert ("fake/hugeheap/inst/a.cnf#0: not stored: the other modes of its block ran on a "
            "node unlike this one (thp {") in refused.stderr
    assert "'always'" in refused.stderr and "that node: elsewhere)" in refused.stderr
    # b's block ran on one node: its run is stored.
    assert [(r[1], r[2]) for r in rows(out)] == [
        ("inst/a.cnf", "system"), ("inst/b.cnf", "hugeheap"), ("inst/b.cnf", "system")]


def test_a_store_from_before_nodes_were_recorded_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    store = Store(path)
    store.db.execute("ALTER TABLE runs DROP COLUMN node")  # as hugeheap wrote it before
    store.db.execute("INSERT INTO runs (tool, instance, mode, repetition, status, verdict, "
                     "walltime, reliable, warnings, cores, start_time) VALUES "
                     "('t', 'i', 'system', 0, 'ok', 'sat', 1.0, 1, '[]', '0', 'now')")
    store.close()
    old = Store(path, readonly=True)
    assert [r.node for r in old.runs()] == [None]
    old.close()
    upgraded = Store(path)
    assert upgraded.block_nodes("t", "i", 0) == [None]
    upgraded.close()


def test_part_of_a_suite_goes_into_the_same_campaign(tmp_path: Path) -> None:
    """bench --tools runs some tools of a suite; the rest (or the whole suite)
    goes on later in the same folder, running only what is missing."""
    suite = make_campaign(tmp_path, {"a": "sat", "b": "unsat"}, SUITE + """
[tools.other]
command = "./tool.sh {instance}"
adapter = "sat"
""")
    out = tmp_path / "camp"
    first = bench(suite, out, options=("--tools", "other"))
    assert first.returncode == 0, first.stderr
    assert {r[0] for r in rows(out)} == {"other"} and len(rows(out)) == 4
    assert "4 of 4 runs finished (4 now)" in first.stderr
    rest = bench(suite, out)
    assert rest.returncode == 0, rest.stderr
    assert "8 of 8 runs finished (4 now)" in rest.stderr
    assert {r[0] for r in rows(out)} == {"fake", "other"} and len(rows(out)) == 8
    wrong = cli("bench", str(suite), "--out", str(out), "--tools", "fake,nosuch")
    assert wrong.returncode == 2 and wrong.stderr.count("\n") == 1
    assert "suite.toml has no tool 'nosuch' (its tools: fake, other)" in wrong.stderr
