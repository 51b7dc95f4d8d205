"""The campaign wing in the terminal: a progress bar while `hugeheap bench`
runs, and what came of it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from ..measure.view import pool_pages, pool_peaks
from .cache import InstanceCache, Obtained
from .coordinator import Outcome
from .coordinator import Progress as CampaignProgress
from .remote import RemoteFile

err = Console(stderr=True, highlight=False, soft_wrap=True)


class ProgressView:
    """A live bar while the campaign runs (a line every 30 s into a log), and
    the callbacks the coordinator calls."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("unsolved {task.fields[unsolved]}"),
                            TextColumn("[red]failed {task.fields[failed]}"), TimeElapsedColumn(),
                            TextColumn("left"), TimeRemainingColumn(),
                            TextColumn("{task.fields[queue]}"), console=err)
        self.task: TaskID | None = None
        self.last_line = time.monotonic()

    def __enter__(self) -> ProgressView:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def started(self, progress: CampaignProgress, leftovers: int) -> None:
        if leftovers:
            err.print(f"[yellow]ended {leftovers} run(s) that a killed harness left going; "
                      "they run again[/yellow]")
        if progress.already:
            err.print(f"resuming {self.directory}: {progress.already} of {progress.total} runs "
                      "were finished before")
        self.task = self.bar.add_task("runs", total=progress.total, completed=progress.already,
                                      unsolved=0, failed=0, queue="")

    def advanced(self, progress: CampaignProgress) -> None:
        if self.task is not None:
            self.bar.update(self.task, completed=progress.already + progress.done,
                            unsolved=progress.unsolved, failed=progress.failed,
                            queue=progress.queue)
        if not err.is_terminal and time.monotonic() - self.last_line >= 30:
            self.last_line = time.monotonic()
            err.print(f"runs {progress.already + progress.done}/{progress.total}, unsolved "
                      f"{progress.unsolved}, failed {progress.failed}"
                      + (f"; {progress.queue}" if progress.queue else ""))

    def note(self, line: str) -> None:
        err.print(f"[yellow]{line}[/yellow]")


class DownloadView:
    """A bar per file while the instance cache fetches it (bytes, speed,
    time left); on_progress is the cache's callback."""

    def __init__(self) -> None:
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
                            console=err, transient=False)
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> DownloadView:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(None, None, None)

    def on_progress(self, file: RemoteFile, done: int, total: int | None) -> None:
        if file.key not in self.tasks:
            self.tasks[file.key] = self.bar.add_task(file.name, total=total)
        self.bar.update(self.tasks[file.key], completed=done, total=total)


def print_fetched(obtained: list[Obtained], cache: InstanceCache) -> None:
    """What `hugeheap fetch` did, a line a file, and where the cache is."""
    for item in obtained:
        size = item.path.stat().st_size
        err.print(f"{item.how:>10}  {item.file.name}  ({size:,} bytes)")
    counts = {how: sum(1 for item in obtained if item.how == how)
              for how in ("downloaded", "vendored", "cached")}
    err.print(f"{len(obtained)} instance files in the cache {cache.directory}: "
              + ", ".join(f"{count} {how}" for how, count in counts.items() if count)
              + "; campaigns on them run offline now")


def print_skipped(skipped: list[tuple[str, str]], what: str = "tool",
                  because: str = "it is optional in the suite") -> None:
    for name, why in skipped:
        err.print(f"[yellow]skipping {what} {name}:[/yellow] {why} ({because})")


def print_notes(notes: list[str]) -> None:
    """What a benchmark definition asks for that hugeheap does not do, one line each."""
    for note in notes:
        err.print(f"[yellow]note:[/yellow] {note}")


def print_outcome(outcome: Outcome, kept: bool = True) -> int:
    """What came of the campaign; returns the exit code of `hugeheap bench`.
    kept: whether the campaign folder stays (not a comparison's scratch)."""
    directory = outcome.directory
    for message in outcome.harness_errors[:10]:
        err.print(f"[red]not run:[/red] {message}")
    if len(outcome.harness_errors) > 10:
        err.print(f"[red]... and {len(outcome.harness_errors) - 10} more runs not run[/red]")
    for disagreement in outcome.disagreements:
        err.print(f"[bold red]WRONG ANSWERS: {disagreement.describe()}[/bold red]")
    finished = outcome.already + outcome.ran
    if outcome.interrupted:
        err.print(f"stopped: {finished} of {outcome.planned} runs finished and kept in "
                  f"{directory}; run the same command again to go on" if kept else
                  f"stopped: {finished} of {outcome.planned} runs finished (give --out DIR to "
                  "keep runs and go on later)")
        return 130
    if kept:
        err.print(f"campaign {directory}: {finished} of {outcome.planned} runs finished "
                  f"({outcome.ran} now); `hugeheap report {directory}` summarises it")
    return 1 if outcome.harness_errors or outcome.disagreements else 0


def print_slurm_doctor(info: dict[str, Any]) -> None:
    """What `hugeheap doctor --slurm` found, on stdout."""
    out = Console(highlight=False, soft_wrap=True)
    out.print(f"[bold]sbatch[/bold]      {info['sbatch'] or 'not found'}")
    if info["cluster"]:
        out.print(f"[bold]cluster[/bold]     {info['cluster']}")
    for p in info["partitions"]:
        limit = "no time limit" if p["time_limit_s"] is None else \
            f"time limit {p['time_limit_s'] / 3600:g} h"
        out.print(f"[bold]partition[/bold]   {p['name']}{' (default)' if p['default'] else ''}: "
                  f"{'up' if p['up'] else 'DOWN'}, {p['nodes']} node(s), {limit}")
    node = info["node"]
    if node:
        facts = node["facts"]
        out.print(f"[bold]a node[/bold]      {node['host']} of {info['probed_partition']}: "
                  f"{facts['cpu_model']}, kernel {facts['kernel']}, glibc {facts['glibc']}, "
                  f"THP {facts['thp']['enabled']}; cgroups for runs: "
                  f"{node['cgroups'] or 'no'}; hugeheap {node['hugeheap']} ({node['python']})")
        out.print(f"[bold]its pool[/bold]    {pool_pages(node['pool'])}")
        if node["pool"]["supported"]:
            out.print(f"            {pool_peaks(node['pool'])}")
    for problem in info["problems"]:
        out.print(f"[red]problem[/red]     {problem}")
    if not info["problems"]:
        out.print("campaigns can run here: hugeheap bench SUITE --out DIR --executor slurm")
