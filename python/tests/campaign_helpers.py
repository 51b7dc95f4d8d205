"""A small campaign for the tests of hugeheap bench, locally and on Slurm: a
shell tool standing in for a solver, its instances and suite, and ways to
look at what a campaign left (stored rows, processes, cgroups)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
from pathlib import Path

from hugeheap_cli import CLI, cli

from hugeheap.campaign.folder import group_prefix
from hugeheap.measure import machine
from hugeheap.measure.cgroups import discover

# Answers what the instance's first line says; `slow` sleeps in a child of
# its own while the flag file exists, so that a run is in flight when the
# harness is killed, with a process that outlives the tool's main process.
TOOL = """#!/bin/sh
case "$(head -n1 "$1")" in
  "c sat") echo "s SATISFIABLE"; echo "v 1 -2 0"; exit 10;;
  "c badmodel") echo "s SATISFIABLE"; echo "v -1 2 0"; exit 10;;
  "c unsat") echo "s UNSATISFIABLE"; exit 20;;
  "c slow")
    if [ -e "$HH_TEST_FLAG" ]; then
      sleep 300 & echo $! > "$HH_TEST_FLAG.pid"; wait
    fi
    echo "s UNSATISFIABLE"; exit 20;;
esac
echo "s UNKNOWN"; exit 0
"""

SUITE = """
[campaign]
modes = ["system", "hugeheap"]
seed = 7

[limits]
cpu_time = "20s"
memory = "512MiB"

[tools.fake]
command = "./tool.sh {instance}"
adapter = "sat"

[instances]
files = ["inst/*.cnf"]
"""


def make_campaign(tmp_path: Path, answers: dict[str, str], suite: str = SUITE) -> Path:
    (tmp_path / "inst").mkdir()
    for name, answer in answers.items():
        (tmp_path / "inst" / f"{name}.cnf").write_text(f"c {answer}\np cnf 2 1\n1 -2 0\n")
    tool = tmp_path / "tool.sh"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    (tmp_path / "suite.toml").write_text(suite)
    return tmp_path / "suite.toml"


def start_bench(suite: Path, out: Path, env: dict[str, str] | None = None,
                options: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, "bench", str(suite), "--out", str(out), *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def bench(suite: Path, out: Path, env: dict[str, str] | None = None,
          options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return cli("bench", str(suite), "--out", str(out), *options, env=env, timeout=300)


def rows(out: Path) -> list[tuple[object, ...]]:
    db = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return db.execute("SELECT tool, instance, mode, repetition, status, verdict, "
                          "start_time, walltime FROM runs ORDER BY 1, 2, 3, 4").fetchall()
    finally:
        db.close()


def alive(pid: int) -> bool:
    fields = machine.process_stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def leftover_groups(out: Path) -> list[Path]:
    found = discover()
    parents = ([found.v2] if found.v2 else []) + list(found.v1.values())
    return [p for parent in parents for p in parent.glob(group_prefix(out) + "_*")]


def wait_for(condition: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def start_until_slow_run(suite: Path, out: Path, flag: Path, options: tuple[str, ...] = (),
                         env: dict[str, str] | None = None
                         ) -> tuple[subprocess.Popen[str], int]:
    """Starts a campaign and waits until its `slow` run is in flight; returns
    the harness and the pid of the process the slow run started."""
    flag.write_text("")
    harness = start_bench(suite, out, {"HH_TEST_FLAG": str(flag), **(env or {})}, options)
    pid_file = Path(f"{flag}.pid")
    wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
    return harness, int(pid_file.read_text())


def private_temporary_directory(tmp_path: Path) -> dict[str, str]:
    """An environment whose temporary directory is the test's own, so that
    the scratch folders a campaign leaves are told from other campaigns'."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    return {"TMPDIR": str(scratch)}


def scratch_folders(env: dict[str, str]) -> list[Path]:
    """The runs' scratch folders in that environment's temporary directory."""
    return sorted(Path(env["TMPDIR"]).glob("hugeheap-run-*"))


def as_stored_by_schema(store: Path, version: str, column: str) -> None:
    """Makes a campaign's store look as an older hugeheap wrote it: without
    the column that schema `version` did not have yet."""
    db = sqlite3.connect(store)
    db.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (version,))
    db.commit()
    db.close()
