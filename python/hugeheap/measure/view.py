"""The measure wing in the terminal: the result of `hugeheap run`, and what
`hugeheap doctor` found."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from .firsttouch import what_it_means
from .runner import RunResult

err = Console(stderr=True)
out = Console()


def _shown(value: Any, unit: str = "") -> str:
    """A measured value for the terminal: '-' where there is none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}{unit}"
    return f"{value}{unit}"


def print_run_result(r: RunResult) -> None:
    """On stderr, so that the tool's own output keeps stdout."""
    table = Table(title="hugeheap run", show_header=False)
    table.add_column(style="bold")
    table.add_column()
    rows = [
        ("status", r.status + (f" ({r.termination_reason})" if r.termination_reason else "")),
        ("exit code", _shown(r.exit_code) if r.signal is None else f"signal {r.signal}"),
        ("cpu time", f"{_shown(r.cputime_s, ' s')} (user {_shown(r.cputime_user_s, ' s')}, "
                     f"system {_shown(r.cputime_system_s, ' s')})"),
        ("wall time", _shown(r.walltime_s, " s")),
        ("steal time", "-" if r.steal_time_s is None
         else f"{r.steal_time_s:.2f} s (the host's other work on the run's CPUs)"),
        ("memory peak", "-" if r.memory_peak_bytes is None
         else f"{r.memory_peak_bytes / 2**20:.1f} MiB"),
        ("allocator", r.alloc + (f" ({r.alloc_library})" if r.alloc_library else "")),
        ("huge-page share", "-" if r.huge_share is None else f"{r.huge_share:.0%}"),
        ("TLB misses", _shown(r.tlb_misses) if r.tlb_misses is not None
         else f"- ({r.tlb_misses_reason})"),
        ("measured by", f"cgroup {r.cgroup_version}" if r.cgroup_version else "rusage"),
        ("environment", _environment(r.environment)),
        ("reliable", "yes" if r.reliable else "no"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    err.print(table)
    for warning in r.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}")


def _environment(record: dict[str, Any]) -> str:
    """What the harness did to the tool's environment, in a line."""
    parts = [f"{name}={value}" for name, value in record.get("set", {}).items()]
    withheld = record.get("withheld", [])
    if withheld:
        parts.append("withheld: " + " ".join(withheld))
    return "; ".join(parts) or "the harness's own"


def print_doctor(info: dict[str, Any]) -> None:
    facts = info["machine"]
    out.print(f"[bold]machine[/bold]  {facts['hostname']}: {facts['cpu_model']}, "
              f"{facts['cpu_count']} cpus, kernel {facts['kernel']}, glibc {facts['glibc']}")
    thp = facts["thp"]
    out.print(f"[bold]THP[/bold]      enabled={thp['enabled']} defrag={thp['defrag']} "
              f"khugepaged/defrag={thp['khugepaged_defrag']}")
    cgroups = info["cgroups"]
    usable = cgroups["usable"] or "none (measurements fall back to rusage: not reliable)"
    out.print(f"[bold]cgroups[/bold]  usable: {usable}; v2 at {cgroups['v2']} controllers "
              f"{cgroups['v2_controllers']}; v1 controllers {sorted(cgroups['v1'])}")
    for problem in cgroups["problems"]:
        out.print(f"         note: {problem}")
    tlb = info["tlb_counters"]
    out.print("[bold]TLB[/bold]      " + ("counters available" if tlb["available"]
                                           else f"not measurable: {tlb['problem']}"))
    touch = info["first_touch"]
    out.print(f"[bold]memory[/bold]   {what_it_means(touch)} ({touch['note']})")
    table = Table(title="allocator modes")
    table.add_column("mode")
    table.add_column("available")
    table.add_column("library or what is missing")
    for name, mode in info["allocators"].items():
        table.add_row(name, "yes" if mode["available"] else "no",
                      mode["library"] or mode["problem"] or "-")
    out.print(table)
