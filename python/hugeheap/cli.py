"""The `hugeheap` command: parses the command line, calls one function of a
wing (measure, campaign, report) and hands the result to that wing's view.
Bad input is one line on stderr and exit code 2."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

import click

from . import __version__
from .errors import HarnessError


def _fail(message: str) -> NoReturn:
    click.echo(f"hugeheap: {message}", err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__)
def main() -> None:
    """Measure reasoners the way BenchExec does, with the allocator injected per run."""
    # A harness started in the background by a script (`hugeheap bench ... &`,
    # nohup) inherits SIGINT ignored, and Python leaves it so; Ctrl-C and
    # `kill -INT` are still to stop its runs and keep what finished.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@main.command(context_settings={"ignore_unknown_options": False})
@click.option("--alloc", default="system", show_default=True, metavar="MODE",
              help="system, glibc-thp, hugeheap, hugeheap-nothp, hugeheap-pool, mimalloc, "
                   "jemalloc, tcmalloc")
@click.option("--cpu-limit", metavar="DURATION", help="CPU time of all processes, e.g. 90s, 15m")
@click.option("--wall-limit", metavar="DURATION", help="wall time, e.g. 90s, 15m")
@click.option("--mem-limit", metavar="SIZE", help="memory of the whole run, e.g. 4GiB, 512MB")
@click.option("--cores", metavar="LIST", help="cores to run on, e.g. 0,1 or 0-3")
@click.option("--stdin", "stdin_path", metavar="FILE", help="the tool's standard input")
@click.option("--output", metavar="FILE", help="the tool's standard output and error")
@click.option("--env", "assignments", multiple=True, metavar="NAME=VALUE",
              help="a variable for the tool (repeatable); the tool never gets the caller's "
              "allocator variables (LD_PRELOAD, GLIBC_TUNABLES, MALLOC_*, HUGEHEAP_*, ...) "
              "unless given here")
@click.option("--json", "as_json", is_flag=True, help="print the result as one JSON object")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(alloc: str, cpu_limit: str | None, wall_limit: str | None, mem_limit: str | None,
        cores: str | None, stdin_path: str | None, output: str | None,
        assignments: tuple[str, ...], as_json: bool, command: tuple[str, ...]) -> None:
    """Run COMMAND once, measured (write it after `--`)."""
    from .measure.allocators import require
    from .measure.runner import Limits
    from .measure.runner import run as run_measured
    from .measure.units import parse_assignments, parse_cpu_list, parse_duration, parse_size
    from .measure.view import print_run_result
    try:
        extra_env = parse_assignments(assignments, "--env")
        limits = Limits(
            cpu_s=parse_duration(cpu_limit, "--cpu-limit") if cpu_limit else None,
            wall_s=parse_duration(wall_limit, "--wall-limit") if wall_limit else None,
            memory_bytes=parse_size(mem_limit, "--mem-limit") if mem_limit else None,
            cores=parse_cpu_list(cores, "--cores") if cores is not None else None,
        )
        mode = require(alloc)
        # SIGTERM ends the run as Ctrl-C does: measured so far, then reported.
        signal.signal(signal.SIGTERM, _interrupt)
        # With --json, the tool's own output must not mix with ours on stdout.
        result = run_measured(list(command), limits, alloc=mode, stdin=stdin_path,
                              output=output, extra_env=extra_env,
                              tool_stdout=2 if as_json else None)
    except HarnessError as error:
        _fail(str(error))
    if as_json:
        click.echo(json.dumps(result.to_json()))
    else:
        print_run_result(result)
    if result.termination_reason == "killed":
        sys.exit(130)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@main.command()
@click.argument("suite_file", metavar="SUITE.toml|BENCHMARK.xml")
@click.option("--out", "out_dir", metavar="DIR", help="campaign directory (default: "
              "results/NAME); the same command on the same DIR resumes")
@click.option("--jobs", type=int, metavar="N", help="parallel runs, each on its own physical "
              "cores (default: the suite's jobs)")
@click.option("--repeat", type=int, metavar="K", help="repetitions (default: the suite's)")
@click.option("--quick", is_flag=True, help="only the instances the suite marks quick = true "
              "(a campaign of its own, NAME-quick)")
@click.option("--tools", metavar="A,B", help="run only these tools of the suite, into the "
              "same campaign (the others, or all, go on later in the same DIR)")
@click.option("--executor", type=click.Choice(["local", "slurm"]), default="local",
              show_default=True, help="where runs go: workers on this machine, or Slurm job "
              "arrays (DIR must be on a filesystem the nodes share)")
@click.option("--partition", metavar="P", help="Slurm partition (default: the cluster's)")
@click.option("--account", metavar="A", help="Slurm account to charge")
@click.option("--max-array-tasks", type=int, metavar="N", help="tasks per Slurm job array "
              "(default 100); each runs many blocks of runs")
@click.option("--slurm-option", "slurm_options", multiple=True, metavar="OPT",
              help="passed to sbatch as is, after hugeheap's own (repeatable), e.g. "
              "--slurm-option=--qos=short")
@click.option("--cache", "cache_dir", metavar="DIR", help="the instance cache for instances "
              "named by URL and hash (default: $HUGEHEAP_CACHE, else "
              "~/.cache/hugeheap)")
@click.option("--modes", metavar="A,B,...", help="the allocator modes, the first the baseline: "
              "for a suite, in place of its own (built-in modes or its [allocators.NAME]); "
              "for a BenchExec benchmark definition (default: system and every other "
              "built-in mode this machine has but hugeheap-nothp)")
@click.option("--tool-directory", metavar="DIR", help="for a BenchExec benchmark definition: "
              "where its tool-info module finds the tool (default: PATH)")
def bench(suite_file: str, out_dir: str | None, jobs: int | None, repeat: int | None,
          quick: bool, tools: str | None, executor: str, partition: str | None,
          account: str | None, max_array_tasks: int | None,
          slurm_options: tuple[str, ...], cache_dir: str | None, modes: str | None,
          tool_directory: str | None) -> None:
    """Run a campaign: every instance under every tool and allocator mode.

    A BenchExec benchmark definition (.xml) runs as BenchExec would run it,
    with the allocator modes as one more dimension: its run definitions are
    the tools, its tasks the instances."""
    from .campaign.cache import default_directory as default_cache
    from .campaign.cache import fetch_all
    from .campaign.coordinator import default_directory, run_campaign
    from .campaign.executors import Executor, LocalExecutor
    from .campaign.slurm.executor import DEFAULT_ARRAY_TASKS, SlurmExecutor
    from .campaign.suite_file import load
    from .campaign.view import DownloadView, ProgressView, print_outcome, print_skipped
    try:
        for option, value in (("--jobs", jobs), ("--repeat", repeat)):
            if value is not None and value < 1:
                raise HarnessError(f"{option} {value}: must be at least 1")
        slurm_only = [name for name, given in (
            ("--partition", partition), ("--account", account),
            ("--max-array-tasks", max_array_tasks is not None),
            ("--slurm-option", slurm_options))
            if given]
        if executor == "local" and slurm_only:
            raise HarnessError(f"{slurm_only[0]} is for --executor slurm")
        if executor == "slurm" and jobs is not None:
            raise HarnessError("--jobs is for the local executor; on Slurm every array task "
                               "is one job (--max-array-tasks bounds how many)")
        if suite_file.endswith(".xml"):
            from .campaign.definition import load_definition
            from .campaign.view import print_notes
            if quick:
                raise HarnessError("--quick is for a suite's generated instances; a benchmark "
                                   "definition has none")
            suite, notes = load_definition(suite_file, modes, tool_directory)
            print_notes(notes)
        elif tool_directory is not None:
            raise HarnessError("--tool-directory is for a BenchExec benchmark definition "
                               "(.xml); a suite names a tool's folder as tool_directory")
        else:
            suite = load(suite_file, quick, modes)
        chosen = suite.choose_tools(tools) if tools is not None else None
        runner: Executor = (
            LocalExecutor(jobs or suite.jobs) if executor == "local" else
            SlurmExecutor(suite, partition, account,
                          DEFAULT_ARRAY_TASKS if max_array_tasks is None else max_array_tasks,
                          list(slurm_options)))
        directory = Path(out_dir) if out_dir else default_directory(suite)
        print_skipped(suite.skipped_tools)
        cache = None
        wanted = suite.downloads_for(chosen)
        if wanted:
            with DownloadView() as downloads:
                cache = fetch_all(wanted, Path(cache_dir) if cache_dir else default_cache(),
                                  downloads.on_progress)[0]
        with ProgressView(directory) as view:
            outcome = run_campaign(suite, directory, runner, repeat or suite.repetitions,
                                   view.advanced, view.started, view.note, chosen, cache)
    except HarnessError as error:
        _fail(str(error))
    except KeyboardInterrupt:  # outside the runs (e.g. while generating instances)
        click.echo("hugeheap: interrupted; every finished run is kept (the same command goes "
                   "on)", err=True)
        sys.exit(130)
    sys.exit(print_outcome(outcome))


@main.command()
@click.argument("suite_files", metavar="SUITE.toml...", nargs=-1, required=True)
@click.option("--quick", is_flag=True, help="only the instances the suites mark quick")
@click.option("--cache", "cache_dir", metavar="DIR", help="the instance cache (default: "
              "$HUGEHEAP_CACHE, else ~/.cache/hugeheap)")
def fetch(suite_files: tuple[str, ...], quick: bool, cache_dir: str | None) -> None:
    """Fill the instance cache with the files the suites' tools need (instances and support
    files named by URL and hash), without running."""
    from .campaign.cache import default_directory as default_cache
    from .campaign.cache import fetch_all
    from .campaign.suite_file import load
    from .campaign.view import DownloadView, print_fetched
    try:
        files = {}
        for suite_file in suite_files:
            files.update({file.key: file
                          for file in load(suite_file, quick).downloads_for(None)})
        if not files:
            raise HarnessError(f"{', '.join(suite_files)}: names no file by URL and hash "
                               "(sets or [[instances.download]]) that its tools run on or "
                               "name; nothing to fetch")
        with DownloadView() as view:
            cache, obtained = fetch_all(list(files.values()),
                                        Path(cache_dir) if cache_dir else default_cache(),
                                        view.on_progress)
    except HarnessError as error:
        _fail(str(error))
    except KeyboardInterrupt:
        click.echo("hugeheap: interrupted; the files fetched whole are kept in the cache",
                   err=True)
        sys.exit(130)
    print_fetched(obtained, cache)


@main.group()
def cache() -> None:
    """The instance cache of files named by URL and hash."""


@cache.command("add")
@click.argument("files", metavar="FILE...", nargs=-1, required=True)
@click.option("--cache", "cache_dir", metavar="DIR", help="the instance cache (default: "
              "$HUGEHEAP_CACHE, else ~/.cache/hugeheap)")
def cache_add(files: tuple[str, ...], cache_dir: str | None) -> None:
    """Put files one has (fetched another way) into the cache, by their hash."""
    from .campaign.cache import InstanceCache
    from .campaign.cache import default_directory as default_cache
    try:
        store = InstanceCache(Path(cache_dir) if cache_dir else default_cache())
        for name in files:
            path = Path(name)
            if not path.is_file():
                raise HarnessError(f"{name}: no such file")
            for key, where in store.add(path):
                click.echo(f"{key}  {name}  -> {where}")
    except HarnessError as error:
        _fail(str(error))


@main.command(context_settings={"ignore_unknown_options": False})
@click.option("--modes", metavar="A,B,...", help="the allocator modes, the first the baseline "
              "(default: system and every other built-in mode this machine has but "
              "hugeheap-nothp)")
@click.option("-n", "repetitions", type=int, default=5, show_default=True, metavar="N",
              help="repetitions of every mode")
@click.option("--cpu-limit", metavar="DURATION", help="CPU time of a run (default 15m)")
@click.option("--wall-limit", metavar="DURATION", help="wall time of a run (default: twice "
              "the CPU limit)")
@click.option("--mem-limit", metavar="SIZE", help="memory of a run, e.g. 4GiB")
@click.option("--cores", metavar="LIST", help="the cores the runs go on (default: all)")
@click.option("--env", "assignments", multiple=True, metavar="NAME=VALUE",
              help="a variable for the command under every mode (repeatable)")
@click.option("--adapter", metavar="NAME", help="how to read the command's answer (default: "
              "by its program's name, e.g. sat for minisat; else its exit code)")
@click.option("--out", "out_dir", metavar="DIR", help="keep the runs in this campaign folder "
              "(`hugeheap report DIR` reads it; the same command resumes it)")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def compare(modes: str | None, repetitions: int, cpu_limit: str | None, wall_limit: str | None,
            mem_limit: str | None, cores: str | None, assignments: tuple[str, ...],
            adapter: str | None, out_dir: str | None, command: tuple[str, ...]) -> None:
    """Run COMMAND under several allocators, paired and interleaved (write it after `--`)."""
    import shlex
    import shutil
    import tempfile
    from dataclasses import replace

    from .campaign.compare import choose_modes, comparison_suite
    from .campaign.coordinator import run_campaign
    from .campaign.executors import LocalExecutor
    from .campaign.view import ProgressView, print_outcome, print_skipped
    from .measure.units import parse_assignments, parse_cpu_list, parse_duration, parse_size
    from .report.compare import compare as summarise
    from .report.view import print_comparison
    scratch = None
    try:
        if repetitions < 1:
            raise HarnessError(f"-n {repetitions}: must be at least 1")
        chosen, left_out = choose_modes(modes)
        allowed = set(parse_cpu_list(cores, "--cores")) if cores is not None else None
        if allowed is not None and not allowed <= os.sched_getaffinity(0):
            raise HarnessError(f"--cores {cores}: not among the cores this process may use "
                               f"({sorted(os.sched_getaffinity(0))})")
        executor = LocalExecutor(1, allowed)
        directory = Path(out_dir) if out_dir else Path(
            scratch := tempfile.mkdtemp(prefix="hugeheap-compare-"))
        suite = comparison_suite(
            list(command), chosen, adapter,
            parse_duration(cpu_limit, "--cpu-limit") if cpu_limit else None,
            parse_duration(wall_limit, "--wall-limit") if wall_limit else None,
            parse_size(mem_limit, "--mem-limit") if mem_limit else None,
            parse_assignments(assignments, "--env"), directory)
        print_skipped(left_out, "mode", "not compared")
        with ProgressView(directory) as view:
            outcome = run_campaign(suite, directory, executor, repetitions, view.advanced,
                                   view.started, view.note)
        status = print_outcome(outcome, kept=out_dir is not None)
        if outcome.ran + outcome.already:
            # Titled by the command as typed (the runs got its paths made absolute).
            print_comparison(replace(summarise(directory), command=shlex.join(command)))
    except HarnessError as error:
        _fail(str(error))
    except KeyboardInterrupt:  # outside the runs (e.g. while resolving the modes)
        click.echo("hugeheap: interrupted", err=True)
        sys.exit(130)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    sys.exit(status)


@main.command()
@click.argument("directories", metavar="DIR...", nargs=-1, required=True)
@click.option("--tables", type=click.Choice(["paper"]), help="also the THP-for-reasoners "
              "paper's Tables 2 and 3 (over every DIR given)")
@click.option("--pair", metavar="A,B", help="the modes the paper's tables compare (default: "
              "the baseline and hugeheap)")
@click.option("--html", "html_file", metavar="FILE", help="write the HTML report here")
@click.option("--csv", "csv_file", metavar="FILE", help="write one row per run here")
@click.option("--benchexec", "benchexec_dir", metavar="OUTDIR",
              help="write BenchExec result XML (one file per tool and mode) here")
@click.option("--markdown", "markdown_file", metavar="FILE", help="write the tables the docs "
              "publish here (of packed results: `hugeheap results pack`)")
@click.option("--ratio", "ratio_texts", metavar="A/B[:FIGURE]", multiple=True,
              help="per instance and mode, tool A's FIGURE over tool B's (cpu, wall, user, "
              "sys, peak, or a figure the tools measure of themselves, e.g. query_s; default "
              "cpu); repeatable")
def report(directories: tuple[str, ...], tables: str | None, pair: str | None,
           html_file: str | None, csv_file: str | None, benchexec_dir: str | None,
           markdown_file: str | None, ratio_texts: tuple[str, ...]) -> None:
    """Summarise campaigns (folders, or packed in published/): tables in the terminal, and
    HTML, CSV, BenchExec XML or Markdown."""
    from .report.figures import parse_ratio
    from .report.markdown import check_markdown_source, write_markdown
    from .report.packed import analyse_folder, load
    from .report.view import check_outputs, show
    try:
        asked = [parse_ratio(text) for text in ratio_texts]
        outputs = (Path(html_file) if html_file else None, Path(csv_file) if csv_file else None,
                   Path(benchexec_dir) if benchexec_dir else None)
        check_outputs(*outputs, Path(markdown_file) if markdown_file else None)
        if markdown_file:  # one packed campaign, read once for both
            check_markdown_source([Path(d) for d in directories])
            packed, analysis = load(Path(directories[0]))
            analyses = [analysis]
        else:
            analyses = [analyse_folder(Path(directory)) for directory in directories]
        show(analyses, *outputs, tables, pair, asked)
        if markdown_file:
            write_markdown(packed, analysis, Path(directories[0]), Path(markdown_file))
    except HarnessError as error:
        _fail(str(error))


@main.group()
def results() -> None:
    """The campaigns behind published figures, packed in published/, and the docs' tables."""


@results.command("pack")
@click.argument("directory", metavar="CAMPAIGN_DIR")
@click.argument("name")
@click.option("--command", "command", required=True, metavar="CMD",
              help="the command that reproduces the campaign, as the tables will name it")
@click.option("--into", default="published", show_default=True, metavar="DIR",
              help="the folder of packed campaigns")
@click.option("--tools", metavar="A,B", help="pack only these tools' runs, as a campaign of "
              "them alone (for a campaign `hugeheap bench --tools` ran in part)")
def results_pack(directory: str, name: str, command: str, into: str, tools: str | None
                 ) -> None:
    """Pack a finished campaign into DIR/NAME: its runs, machine, library, suite, command."""
    from .measure.units import parse_names
    from .report.packed import pack
    try:
        packed = pack(Path(directory), Path(into), name, command,
                      None if tools is None else parse_names(tools))
    except HarnessError as error:
        _fail(str(error))
    click.echo(f"packed {packed.campaign.suite_name} ({packed.date}) into {Path(into) / name}")


@results.command("docs")
@click.option("--check", is_flag=True, help="change nothing; exit 1 if a generated table "
              "differs from its data")
@click.option("--root", default=".", show_default=True, metavar="DIR", help="the checkout")
def results_docs(check: bool, root: str) -> None:
    """Make the blocks <!-- results:NAME --> (of published/NAME), <!-- results:NAME
    by-instance --> (its figures per tool and instance) and <!-- results:families
    NAME[=FAMILY]... --> (hugeheap on each family) in docs/*.md, docs/notebook/*.md and
    README.md anew."""
    from .report.blocks import refresh, stale
    try:
        found = stale(Path(root)) if check else refresh(Path(root))
    except HarnessError as error:
        _fail(str(error))
    for path in found:
        click.echo(f"{'differs from its data' if check else 'made anew'}: {path}")
    if not found:
        click.echo("every generated table of the docs is what its data gives")
    sys.exit(1 if check and found else 0)


@main.group()
def pool() -> None:
    """The kernel's pool of 2 MiB huge pages, for tools run with HUGEHEAP_THP=hugetlb."""


@pool.command("reserve")
@click.argument("size")
def pool_reserve(size: str) -> None:
    """Add SIZE (e.g. 1GiB) to the pool, write each free page once, measure a page's first touch.

    Needs root. What the pool held before is recorded, for `hugeheap pool release`."""
    from .measure.hugetlb import reserve
    from .measure.units import parse_size
    from .measure.view import print_reserved
    try:
        reserved = reserve(parse_size(size, "pool reserve"))
    except HarnessError as error:
        _fail(str(error))
    except KeyboardInterrupt:
        click.echo("hugeheap: interrupted; whatever the kernel had granted is recorded or given "
                   "back (`hugeheap pool status` says which)", err=True)
        sys.exit(130)
    print_reserved(reserved)


@pool.command("status")
@click.option("--json", "as_json", is_flag=True, help="print the status as one JSON object")
def pool_status(as_json: bool) -> None:
    """The pool's pages, what hugeheap reserved of it, what a page costs a new process."""
    from .measure.hugetlb import status
    from .measure.view import print_pool_status
    found = status()
    if as_json:
        click.echo(json.dumps(found, indent=1))
    else:
        print_pool_status(found)


@pool.command("release")
def pool_release() -> None:
    """Give back what `hugeheap pool reserve` added (needs root; nothing to do without it)."""
    from .measure.hugetlb import release
    from .measure.view import print_released
    try:
        released = release()
    except HarnessError as error:
        _fail(str(error))
    print_released(released)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="print the report as one JSON object")
@click.option("--slurm", is_flag=True, help="instead: whether campaigns can run on the Slurm "
              "cluster (client commands, partitions, a node of the partition)")
@click.option("--partition", metavar="P", help="with --slurm: the partition whose node to "
              "probe (default: the cluster's)")
def doctor(as_json: bool, slurm: bool, partition: str | None) -> None:
    """What this machine offers for measurement."""
    if partition is not None and not slurm:
        _fail("--partition is for doctor --slurm")
    if slurm:
        from .campaign.slurm.doctor import diagnose as diagnose_slurm
        from .campaign.view import print_slurm_doctor
        found = diagnose_slurm(partition)
        if as_json:
            click.echo(json.dumps(found, indent=1))
        else:
            print_slurm_doctor(found)
        sys.exit(1 if found["problems"] else 0)
    from .measure.doctor import diagnose
    from .measure.view import print_doctor
    info = diagnose()
    if as_json:
        click.echo(json.dumps(info, indent=1))
    else:
        print_doctor(info)


if __name__ == "__main__":
    main()
