"""`hugeheap bench` in the terminal: a progress bar while the campaign runs,
and what came of it."""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from .campaign import Progress as CampaignProgress
from .campaign import default_directory, run_campaign
from .errors import HarnessError
from .suite import load

err = Console(stderr=True, highlight=False, soft_wrap=True)


def bench_command(suite_file: str, out_dir: str | None, jobs: int | None,
                  repeat: int | None) -> int:
    suite = load(suite_file)
    for option, value in (("--jobs", jobs), ("--repeat", repeat)):
        if value is not None and value < 1:
            raise HarnessError(f"{option} {value}: must be at least 1")
    directory = Path(out_dir) if out_dir else default_directory(suite)
    for name, why in suite.skipped_tools:
        err.print(f"[yellow]skipping tool {name}:[/yellow] {why} (it is optional in the suite)")
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("unsolved {task.fields[unsolved]}"),
                   TextColumn("[red]failed {task.fields[failed]}"), TimeElapsedColumn(),
                   TextColumn("left"), TimeRemainingColumn(), console=err)
    task: list[TaskID] = []

    def on_start(progress: CampaignProgress, leftovers: int) -> None:
        if leftovers:
            err.print(f"[yellow]ended {leftovers} run(s) that a killed harness left going; "
                      "they run again[/yellow]")
        if progress.already:
            err.print(f"resuming {directory}: {progress.already} of {progress.total} runs "
                      "were finished before")
        task.append(bar.add_task("runs", total=progress.total, completed=progress.already,
                                 unsolved=0, failed=0))

    last_line = [time.monotonic()]

    def on_progress(progress: CampaignProgress) -> None:
        bar.update(task[0], completed=progress.already + progress.done,
                   unsolved=progress.unsolved, failed=progress.failed)
        # Into a log (no terminal, so no live bar): a line now and then.
        if not err.is_terminal and time.monotonic() - last_line[0] >= 30:
            last_line[0] = time.monotonic()
            err.print(f"runs {progress.already + progress.done}/{progress.total}, unsolved "
                      f"{progress.unsolved}, failed {progress.failed}")

    with bar:
        outcome = run_campaign(suite, directory, jobs or suite.jobs, repeat or suite.repetitions,
                               on_progress, on_start)
    for message in outcome.harness_errors[:10]:
        err.print(f"[red]not run:[/red] {message}")
    if len(outcome.harness_errors) > 10:
        err.print(f"[red]... and {len(outcome.harness_errors) - 10} more runs not run[/red]")
    for disagreement in outcome.disagreements:
        err.print(f"[bold red]WRONG ANSWERS: {disagreement.describe()}[/bold red]")
    finished = outcome.already + outcome.ran
    if outcome.interrupted:
        err.print(f"stopped: {finished} of {outcome.planned} runs finished and kept in "
                  f"{directory}; run the same command again to go on")
        return 130
    err.print(f"campaign {directory}: {finished} of {outcome.planned} runs finished "
              f"({outcome.ran} now); `hugeheap report {directory}` summarises it")
    return 1 if outcome.harness_errors or outcome.disagreements else 0
