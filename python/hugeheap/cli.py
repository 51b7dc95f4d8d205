"""The `hugeheap` command: a thin shell over the library modules."""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from . import __version__
from . import doctor as doctor_module
from .errors import HarnessError
from .runner import Limits, RunResult
from .runner import run as run_measured
from .units import parse_cores, parse_duration, parse_size

err = Console(stderr=True)
out = Console()


def _fail(message: str) -> None:
    click.echo(f"hugeheap: {message}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__)
def main() -> None:
    """Measure reasoners the way BenchExec does, with the allocator injected per run."""


@main.command(context_settings={"ignore_unknown_options": False})
@click.option("--alloc", default="system", show_default=True, metavar="MODE",
              help="system, glibc-thp, hugeheap, hugeheap-nothp, mimalloc, jemalloc, tcmalloc")
@click.option("--cpu-limit", metavar="DURATION", help="CPU time of all processes, e.g. 90s, 15m")
@click.option("--wall-limit", metavar="DURATION", help="wall time, e.g. 90s, 15m")
@click.option("--mem-limit", metavar="SIZE", help="memory of the whole run, e.g. 4GiB, 512MB")
@click.option("--cores", metavar="LIST", help="cores to run on, e.g. 0,1 or 0-3")
@click.option("--stdin", "stdin_path", metavar="FILE", help="the tool's standard input")
@click.option("--output", metavar="FILE", help="the tool's standard output and error")
@click.option("--json", "as_json", is_flag=True, help="print the result as one JSON object")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(alloc: str, cpu_limit: str | None, wall_limit: str | None, mem_limit: str | None,
        cores: str | None, stdin_path: str | None, output: str | None, as_json: bool,
        command: tuple[str, ...]) -> None:
    """Run COMMAND once, measured (write it after `--`)."""
    try:
        limits = Limits(
            cpu_s=parse_duration(cpu_limit, "--cpu-limit") if cpu_limit else None,
            wall_s=parse_duration(wall_limit, "--wall-limit") if wall_limit else None,
            memory_bytes=parse_size(mem_limit, "--mem-limit") if mem_limit else None,
            cores=parse_cores(cores, "--cores") if cores else None,
        )
        # SIGTERM ends the run as Ctrl-C does: measured so far, then reported.
        signal.signal(signal.SIGTERM, _interrupt)
        # With --json, the tool's own output must not mix with ours on stdout.
        result = run_measured(list(command), limits, alloc=alloc, stdin=stdin_path,
                              output=output, tool_stdout=2 if as_json else None)
    except HarnessError as error:
        _fail(str(error))
        return
    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        _print_result(result)
    if result.termination_reason == "killed":
        sys.exit(130)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}"
    return f"{value}{unit}"


def _print_result(r: RunResult) -> None:
    table = Table(title="hugeheap run", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("status", r.status + (f" ({r.termination_reason})" if r.termination_reason else "")),
        ("exit code", _fmt(r.exit_code) if r.signal is None else f"signal {r.signal}"),
        ("cpu time", f"{_fmt(r.cputime_s, ' s')} (user {_fmt(r.cputime_user_s, ' s')}, "
                     f"system {_fmt(r.cputime_system_s, ' s')})"),
        ("wall time", _fmt(r.walltime_s, " s")),
        ("memory peak", "-" if r.memory_peak_bytes is None
         else f"{r.memory_peak_bytes / 2**20:.1f} MiB"),
        ("allocator", r.alloc + (f" ({r.alloc_library})" if r.alloc_library else "")),
        ("huge-page share", "-" if r.huge_share is None else f"{r.huge_share:.0%}"),
        ("TLB misses", _fmt(r.tlb_misses) if r.tlb_misses is not None
         else f"- ({r.tlb_misses_reason})"),
        ("measured by", f"cgroup {r.cgroup_version}" if r.cgroup_version else "rusage"),
        ("reliable", "yes" if r.reliable else "no"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    err.print(table)
    for warning in r.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")


@main.command()
@click.argument("suite_file", metavar="SUITE.toml")
@click.option("--out", "out_dir", metavar="DIR", help="campaign directory (default: "
              "results/NAME); the same command on the same DIR resumes")
@click.option("--jobs", type=int, metavar="N", help="parallel runs, each on its own physical "
              "cores (default: the suite's jobs)")
@click.option("--repeat", type=int, metavar="K", help="repetitions (default: the suite's)")
def bench(suite_file: str, out_dir: str | None, jobs: int | None, repeat: int | None) -> None:
    """Run a campaign: every instance under every tool and allocator mode."""
    from .bench_view import bench_command
    try:
        code = bench_command(suite_file, out_dir, jobs, repeat)
    except HarnessError as error:
        _fail(str(error))
        return
    except KeyboardInterrupt:  # outside the runs (e.g. while generating instances)
        click.echo("hugeheap: interrupted; every finished run is kept (the same command goes "
                   "on)", err=True)
        sys.exit(130)
    sys.exit(code)


@main.command()
@click.argument("directory", metavar="DIR")
@click.option("--html", "html_file", metavar="FILE", help="write the HTML report here")
@click.option("--csv", "csv_file", metavar="FILE", help="write one row per run here")
@click.option("--benchexec", "benchexec_dir", metavar="OUTDIR",
              help="write BenchExec result XML (one file per tool and mode) here")
def report(directory: str, html_file: str | None, csv_file: str | None,
           benchexec_dir: str | None) -> None:
    """Summarise a campaign: tables in the terminal, and HTML, CSV or BenchExec XML."""
    from .report_view import report_command
    try:
        report_command(directory, html_file, csv_file, benchexec_dir)
    except HarnessError as error:
        _fail(str(error))


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print the report as one JSON object")
def doctor(as_json: bool) -> None:
    """What this machine offers for measurement."""
    info = doctor_module.report()
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
    m = info["machine"]
    out.print(f"[bold]machine[/bold]  {m['hostname']}: {m['cpu_model']}, {m['cpu_count']} cpus, "
              f"kernel {m['kernel']}, glibc {m['glibc']}")
    thp = m["thp"]
    out.print(f"[bold]THP[/bold]      enabled={thp['enabled']} defrag={thp['defrag']} "
              f"khugepaged/defrag={thp['khugepaged_defrag']}")
    cg = info["cgroups"]
    usable = cg["usable"] or "none (measurements fall back to rusage: not reliable)"
    out.print(f"[bold]cgroups[/bold]  usable: {usable}; v2 at {cg['v2']} controllers "
              f"{cg['v2_controllers']}; v1 controllers {sorted(cg['v1'])}")
    for problem in cg["problems"]:
        out.print(f"         note: {problem}")
    tlb = info["tlb_counters"]
    out.print("[bold]TLB[/bold]      " + ("counters available" if tlb["available"]
                                           else f"not measurable: {tlb['problem']}"))
    table = Table(title="allocator modes")
    table.add_column("mode")
    table.add_column("available")
    table.add_column("library or what is missing")
    for name, mode in info["allocators"].items():
        table.add_row(name, "yes" if mode["available"] else "no",
                      mode["library"] or mode["problem"] or "-")
    out.print(table)


if __name__ == "__main__":
    main()
