"""The measure wing in the terminal: the result of `hugeheap run`, what
`hugeheap doctor` found, and the hugetlb pool (`hugeheap pool`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .firsttouch import what_it_means
from .hugetlb import Released, Reserved
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
        ("memory peak", _memory_peak(r)),
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


def _memory_peak(r: RunResult) -> str:
    """The peak, and for a run holding pool pages the bounds of it."""
    if r.memory_peak_bytes is None:
        return "-"
    if r.memory_peak_lower_bytes is None or r.hugetlb_peak_bytes is None:
        return f"{r.memory_peak_bytes / 2**20:.1f} MiB"
    return (f"{r.memory_peak_lower_bytes / 2**20:.1f}-{r.memory_peak_bytes / 2**20:.1f} MiB "
            f"(pool pages in it, {r.hugetlb_peak_bytes / 2**20:.1f} MiB at most: at least the "
            "most of both seen at one moment, at most the two peaks added, or each "
            "interval's memory peak and the pool's so far where the counters allow)")


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
    pool = info["pool"]
    out.print(f"[bold]pool[/bold]     {pool_pages(pool)}")
    if pool["supported"]:
        out.print(f"         {pool_peaks(pool)}")
    if pool["advice"]:
        out.print(f"         advice: {pool['advice']}")
    table = Table(title="allocator modes")
    table.add_column("mode")
    table.add_column("available")
    table.add_column("library or what is missing")
    for name, mode in info["allocators"].items():
        table.add_row(name, "yes" if mode["available"] else "no",
                      mode["library"] or mode["problem"] or "-")
    out.print(table)


def _mib(pages: int, page_bytes: int) -> str:
    return f"{pages * page_bytes / 2**20:g} MiB"


def pool_pages(pool: dict[str, Any]) -> str:
    """The hugetlb pool's pages in a line (a hugetlb.status record)."""
    if not pool["supported"]:
        return "none: this kernel has no pool of 2 MiB huge pages"
    return (f"{pool['total']} pages of 2 MiB ({_mib(pool['total'], pool['page_bytes'])}), "
            f"{pool['free']} free ({pool['reserved']} promised), {pool['surplus']} surplus")


def print_pool_status(pool: dict[str, Any]) -> None:
    """The pool, what hugeheap reserved of it and what a page costs (hugetlb.status)."""
    out.print(f"[bold]pool[/bold]         {pool_pages(pool)}")
    if pool["supported"]:
        out.print(f"[bold]run peaks[/bold]    {pool_peaks(pool)}")
    if pool["problem"]:
        out.print(f"[bold]hugeheap[/bold]     [yellow]{escape(pool['problem'])}[/yellow]")
        return
    record = pool["hugeheap"]
    if record is None:
        out.print("[bold]hugeheap[/bold]     reserved none of it")
        return
    out.print(f"[bold]hugeheap[/bold]     added {record['added_pages']} pages, the last on "
              f"{record['reserved_at']}")
    out.print(f"             the pool held {record['before_pages']} before (recorded in "
              f"{pool['state_file']})")
    cost = record["first_touch_ms"]
    out.print("[bold]first touch[/bold]  " + (
        "not measured" if cost is None else
        f"{cost:.3f} ms per 2 MiB for a new process (median of {record['measured_pages']} "
        "pool pages)"))


def pool_peaks(pool: dict[str, Any]) -> str:
    """How runs' pool pages get into their memory peaks (hugetlb_hierarchy.counting)."""
    how = escape(str(pool["peaks"]["how"]))
    return "pool pages in runs' peaks: " + (how if pool["peaks"]["exact"]
                                             else f"[yellow]{how}[/yellow]")


def print_reserved(reserved: Reserved) -> None:
    written = (f"wrote the {reserved.written_pages} free pages once: "
               f"{reserved.record.write_ms:.3f} ms a page"
               if reserved.record.write_ms is not None else "no page of it was free to write")
    out.print(f"reserved {reserved.added_pages} pages of 2 MiB "
              f"({_mib(reserved.added_pages, reserved.status['page_bytes'])}); {written}")
    if reserved.problem:
        out.print(f"[yellow]{escape(reserved.problem)}[/yellow]")
    print_pool_status(reserved.status)


def print_released(released: Released) -> None:
    pool = released.status
    if released.record is None:
        out.print(f"nothing reserved by hugeheap (no {pool['state_file']}): nothing to give "
                  "back")
        return
    out.print(f"gave back {released.record.added_pages} pages: the pool went from "
              f"{released.pages_before} to {released.pages_after - released.stayed} pages "
              f"({released.record.before_pages} before hugeheap)")
    if released.stayed:
        out.print(f"{released.stayed} of them are in use by running processes: surplus pages "
                  "now, freed when those let go of them")
    if released.problem:
        out.print(f"[yellow]{escape(released.problem)}[/yellow]")
    print_pool_status(pool)
