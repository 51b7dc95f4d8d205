#!/usr/bin/env python3
"""Checks of libhugeheap as users meet it: preloaded into real programs, linked
statically, configured through the environment.  One check per invocation, so
that ctest lists and skips them one by one (exit 77 = skipped, with the reason).

Only the standard library is used: these run before any virtual environment
exists."""

from __future__ import annotations

import argparse
import contextlib
import json
import mmap
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

SKIP = 77
MIB = 1 << 20


class Skip(Exception):
    """The check cannot run here; the message says why."""


class Failure(Exception):
    """The check ran and found something wrong."""


def run(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 600,
        cwd: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(cmd, env=full_env, capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, input=stdin)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise Skip(f"{name} is not installed "
                   f"(Debian package: {name}; `make deps` as root installs it)")
    return path


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def kernel_collapses() -> bool:
    """Whether the kernel has MADV_COLLAPSE (Linux 6.1+): without it the
    library's collapses fail, and khugepaged promotes at its own pace."""
    return tuple(int(x) for x in re.findall(r"\d+", platform.release())[:2]) >= (6, 1)


def system_thp() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unavailable"
    match = re.search(r"\[(\w+)\]", text)
    return match.group(1) if match else "unknown"


def thp_mode_among(modes: tuple[str, ...], why: str) -> str:
    """The kernel's THP mode, if it is one of `modes`; else the check is
    skipped, saying why it needs one of them."""
    mode = system_thp()
    if mode not in modes:
        raise Skip(f"transparent huge pages are '{mode}': {why}")
    return mode


def kernel_huge_page_failures() -> int:
    """Huge pages the kernel could not supply so far, machine-wide: faults
    that fell back to 4 KiB pages and collapses that found no free huge page
    (/proc/vmstat; 0 where it does not count them)."""
    try:
        text = Path("/proc/vmstat").read_text()
    except OSError:
        return 0
    counts = dict(line.split() for line in text.splitlines() if line.count(" ") == 1)
    return sum(int(counts.get(name, 0)) for name in ("thp_fault_fallback",
                                                     "thp_collapse_alloc_failed"))


PROBE_ATTEMPTS = 3


def probe_values(stdout: str) -> dict[str, int]:
    """alloc_probe's "key=N key=N" line as numbers."""
    return {key: int(value) for key, value in (item.split("=") for item in stdout.split())}


def run_probe(args: argparse.Namespace, command: list[str], env: dict[str, str]
              ) -> dict[str, int]:
    """alloc_probe COMMAND... in env (LD_PRELOAD as the caller sets it): the
    NAME=N pairs it prints.  The budget for huge pages is off unless env says
    otherwise: these checks are of the mechanisms, which must not depend on
    what a huge page costs on the machine that runs them.  Nor on whether the
    kernel has free huge pages to give: a run during which it could not
    supply some (memory short or fragmented by other work; thp-coverage's
    512 MiB were 27-80% huge while a runaway test beside it filled the
    machine's memory, until the OOM killer stopped it) is run again, and
    where none of PROBE_ATTEMPTS runs had the kernel's pages the check is
    skipped, saying so."""
    short = 0
    for _ in range(PROBE_ATTEMPTS):
        failures_before = kernel_huge_page_failures()
        result = run([args.probe, *command], env={"HUGEHEAP_HUGE_BUDGET": "off", **env})
        expect(result.returncode == 0,
               f"alloc_probe {command[0]} failed: {result.stderr.strip()}")
        short = kernel_huge_page_failures() - failures_before
        if short == 0:
            return probe_values(result.stdout)
    raise Skip(f"the kernel could not supply huge pages during any of {PROBE_ATTEMPTS} runs of "
               f"alloc_probe {command[0]} ({short} fell back to 4 KiB pages in the last: memory "
               "short or fragmented): nothing to tell of the library")


def probe_touch(args: argparse.Namespace, mib: int, env: dict[str, str]) -> dict[str, int]:
    return run_probe(args, ["touch", str(mib)], {"LD_PRELOAD": args.lib, **env})


def read_stats(path: Path) -> list[dict[str, object]]:
    records = []
    for line in path.read_text().splitlines():
        records.append(json.loads(line))
    return records


# ---------------------------------------------------------------- the checks

def check_symbols(args: argparse.Namespace) -> None:
    """The shared library needs nothing from glibc newer than 2.17 (RHEL 7)."""
    objdump = need_tool("objdump")
    out = run([objdump, "-T", args.lib]).stdout
    too_new = []
    for line in out.splitlines():
        match = re.search(r"\(?GLIBC_(\d+)\.(\d+)(?:\.\d+)?\)?\s+(\S+)$", line)
        if match and (int(match.group(1)), int(match.group(2))) > (2, 17):
            too_new.append(f"{match.group(3)}@GLIBC_{match.group(1)}.{match.group(2)}")
    expect(not too_new, f"symbols newer than GLIBC_2.17: {', '.join(too_new)}")
    exported = {line.split()[-1] for line in out.splitlines() if " .text" in line}
    wanted = {"malloc", "free", "calloc", "realloc", "reallocarray", "memalign",
              "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "malloc_usable_size",
              "free_sized", "free_aligned_sized", "malloc_trim", "mallinfo2", "malloc_stats"}
    expect(wanted <= exported, f"not exported: {sorted(wanted - exported)}")


def check_static(args: argparse.Namespace) -> None:
    """A static binary linked with libhugeheap.a has no glibc malloc in it."""
    nm = need_tool("nm")
    symbols = run([nm, args.binary]).stdout
    expect("_int_malloc" not in symbols, "glibc's malloc was linked into the static binary")
    result = run([args.binary])
    expect(result.returncode == 0, f"static test failed:\n{result.stdout}{result.stderr}")


def check_thp_coverage(args: argparse.Namespace) -> None:
    """512 MiB allocated and touched in many blocks: at least 90% in huge pages
    where THP is `madvise` or `always`; where it is `never` the kernel gives
    none, and the heap works in small pages."""
    mode = thp_mode_among(("madvise", "always", "never"), "nothing to measure on this machine")
    values = probe_touch(args, 512, {})
    expect(values["huge_kb"] >= 0, "no AnonHugePages in /proc/self/smaps_rollup")
    share = values["huge_kb"] * 1024 / (512 * MIB)
    print(f"{values['blocks']} blocks, {values['huge_kb'] // 1024} MiB of 512 MiB in huge pages "
          f"({share:.1%}), THP mode {mode}")
    if mode == "never":
        expect(values["huge_kb"] == 0, f"{values['huge_kb']} kB in huge pages with THP never")
    else:
        expect(share >= 0.90, f"only {share:.1%} of 512 MiB in huge pages")


def check_thp_off(args: argparse.Namespace) -> None:
    """HUGEHEAP_THP=off: plain 4 KiB pages, even where THP is `always`."""
    thp_mode_among(("madvise", "always"), "off cannot be told from on")
    values = probe_touch(args, 256, {"HUGEHEAP_THP": "off"})
    expect(values["huge_kb"] * 1024 < 4 * MIB,
           f"{values['huge_kb']} kB in huge pages with HUGEHEAP_THP=off")


def check_small_heap(args: argparse.Namespace) -> None:
    """A small heap stays in 4 KiB pages (what glibc would use), even where THP
    is `always`; with the threshold at 0 the same heap is huge, except where
    THP is `never`."""
    mode = thp_mode_among(("madvise", "always", "never"), "small and huge look alike")
    small = probe_touch(args, 12, {})
    expect(small["huge_kb"] * 1024 < 2 * MIB,
           f"{small['huge_kb']} kB in huge pages for a 12 MiB heap (below the threshold)")
    huge = probe_touch(args, 12, {"HUGEHEAP_HUGE_THRESHOLD_MB": "0"})
    if mode == "never":
        expect(huge["huge_kb"] == 0, f"{huge['huge_kb']} kB in huge pages with THP never")
    else:
        expect(huge["huge_kb"] * 1024 >= 6 * MIB,
               f"only {huge['huge_kb']} kB in huge pages with HUGEHEAP_HUGE_THRESHOLD_MB=0")


def check_api_heaps(args: argparse.Namespace) -> None:
    """Arenas and pools follow the heap's huge threshold (32 MiB): 12 MiB of
    either stays in 4 KiB pages; 96 MiB passes the threshold, and the chunks
    and regions mapped from then on are huge, and those mapped before are
    collapsed (Linux 6.1+).  The budget is off, so that the machine's price
    of a huge page does not decide."""
    thp_mode_among(("madvise", "always"), "small and huge look alike")
    collapses = kernel_collapses()
    env = {"LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_BUDGET": "off"}
    for kind in ("arena", "pool"):
        small = run_probe(args, [kind, "12"], env)
        expect(small["huge_kb"] * 1024 < 2 * MIB,
               f"{small['huge_kb']} kB in huge pages for a 12 MiB {kind} (below the threshold)")
        big = run_probe(args, [kind, "96"], env)
        # The arena's first chunks (2-16 MiB: 30 MiB) and the pool's first 16
        # regions are mapped below the threshold, the rest (64-66 MiB) above;
        # the first are collapsed once the heap is huge.
        expect(big["huge_kb"] * 1024 >= (88 if collapses else 48) * MIB,
               f"only {big['huge_kb']} kB of a 96 MiB {kind} in huge pages")
        print(f"{kind}: 12 MiB, {small['huge_kb'] // 1024} MiB huge; "
              f"96 MiB, {big['huge_kb'] // 1024} MiB huge")


def check_early_blocks(args: argparse.Namespace) -> None:
    """A large block mapped in 4 KiB pages while the heap was small, and never
    grown, goes into huge pages when the heap passes the threshold: two blocks
    of 40 MiB with the threshold at 60 MiB are both huge after the second."""
    thp_mode_among(("madvise", "always"), "no huge pages to promote to")
    if not kernel_collapses():
        raise Skip(f"Linux {platform.release()} has no MADV_COLLAPSE (6.1+): khugepaged "
                   "promotes at its own pace")
    values = run_probe(args, ["early", "40"],
                       {"LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_THRESHOLD_MB": "60"})
    print(f"{values['huge_kb'] // 1024} MiB of two 40 MiB blocks in huge pages")
    expect(values["huge_kb"] >= 76 * 1024,
           f"only {values['huge_kb']} kB in huge pages: the block mapped before the heap "
           "was huge stayed in 4 KiB pages")


def check_sparse_blocks(args: argparse.Namespace) -> None:
    """Blocks written a tenth each (as ABC's pdr leaves many) stay out of
    memory in a huge heap: its units become huge pages only once mostly
    written.  HUGEHEAP_HUGE_UNITS=all, which makes every unit huge at its
    first touch, shows what they would cost."""
    # 160 MiB: well past the size (64 MiB) where a heap that proves dense drops
    # the policy; this one must not.
    huge_env = {"LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_THRESHOLD_MB": "0"}
    dense = run_probe(args, ["sparse", "160"], huge_env)
    print(f"160 MiB of blocks written a tenth each: {dense['anon_kb'] // 1024} MiB resident")
    expect(dense["anon_kb"] <= 48 * 1024,
           f"{dense['anon_kb']} kB resident for 16 MiB written in 160 MiB of blocks")
    thp_mode_among(("madvise", "always"), "every unit is small anyway")
    every = run_probe(args, ["sparse", "160"], {**huge_env, "HUGEHEAP_HUGE_UNITS": "all"})
    print(f"with HUGEHEAP_HUGE_UNITS=all: {every['anon_kb'] // 1024} MiB resident")
    expect(every["anon_kb"] >= 128 * 1024,
           f"HUGEHEAP_HUGE_UNITS=all: only {every['anon_kb']} kB resident; the probe does "
           "not show what huge pages at the first touch cost")


def check_whole_units(args: argparse.Namespace) -> None:
    """Blocks of 6 MiB filled at once (arrays in the page heap) are huge pages
    from their first touch under the dense policy: the units they cover whole
    are not faulted in 4 KiB pages and copied afterwards, which would show
    as units collapsed."""
    thp_mode_among(("madvise", "always"), "no huge pages to make")
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        values = run_probe(args, ["arrays", "48"], {
            "LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_THRESHOLD_MB": "0",
            "HUGEHEAP_STATS": f"json:{stats}"})
        collapsed = int(read_stats(stats)[0]["units_promoted"])  # type: ignore[call-overload]
    print(f"48 MiB in 6 MiB arrays: {values['huge_kb'] // 1024} MiB in huge pages, "
          f"{collapsed} units collapsed")
    # The units the arrays cover whole (two or three of each array's three or
    # four) are huge at their first touch, even where the kernel has no
    # MADV_COLLAPSE for the rest: at least 32 MiB, asserted with a unit of
    # slack.
    expect(values["huge_kb"] >= 30 * 1024,
           f"only {values['huge_kb']} kB of 48 MiB of arrays in huge pages")
    # The units the arrays share at their ends are collapsed (7 here); without
    # the advice every unit is (21).
    expect(collapsed <= 12, f"{collapsed} units collapsed: the arrays' units were faulted "
           "in 4 KiB pages first")


def check_huge_budget(args: argparse.Namespace) -> None:
    """With the budget for huge pages (HUGEHEAP_HUGE_BUDGET=always: as where
    the library finds them dear), a heap filled fast stays mostly in 4 KiB
    pages, at most a thirty-second of the CPU time (and one collapse more)
    goes to making huge pages, and more of them come as the CPU time grows;
    with the budget off the same heap is huge."""
    thp_mode_among(("madvise", "always"), "no huge pages to budget")
    if not kernel_collapses():
        raise Skip(f"Linux {platform.release()} has no MADV_COLLAPSE (6.1+) to time")

    def overdraw_allowed_ms(unit_ms: float, dearest_ms: float) -> float:
        # The budget is asked before each make at what the last ones cost: one
        # make dearer than those (a fresh page) overdraws it by what that one
        # cost.
        return max(2 * unit_ms, dearest_ms) + 5

    def filled_and_computed(ms: int) -> tuple[dict[str, int], int, int, float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            stats_path = Path(tmp) / "stats.json"
            values = run_probe(args, ["budget", "256", str(ms)], {
                "LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_BUDGET": "always",
                "HUGEHEAP_STATS": f"json:{stats_path}"})
            stats = read_stats(stats_path)[0]
        spent_ms, deferred = int(stats["huge_cost_ms"]), int(stats["huge_deferred"])  # type: ignore[call-overload]
        unit_ms = int(stats["huge_unit_cost_us"]) / 1000  # type: ignore[call-overload]
        dearest_ms = int(stats["huge_dearest_cost_us"]) / 1000  # type: ignore[call-overload]
        print(f"256 MiB filled, {ms} ms computed: {values['filled_huge_kb'] // 1024} MiB in huge "
              f"pages, {values['huge_kb'] // 1024} MiB after {values['cpu_ms']} ms of CPU; "
              f"{spent_ms} ms spent on them ({unit_ms:.2f} ms per 2 MiB, the dearest make "
              f"{dearest_ms:.2f} ms over 4 KiB pages' cost), {deferred} waits")
        return values, spent_ms, deferred, unit_ms, dearest_ms

    values, spent_ms, deferred, unit_ms, dearest_ms = filled_and_computed(1500)
    # Where a huge page costs tens of milliseconds (a host backing memory
    # lazily, on a bad day), 1.5 s of CPU time buys none beyond the first:
    # then compute long enough for the budget to afford two more at that price.
    grew = values["huge_kb"] >= values["filled_huge_kb"] + 2048
    if not grew and values["cpu_ms"] / 32 < spent_ms + 2 * unit_ms:
        needed_ms = int(32 * (spent_ms + 3 * unit_ms))
        if needed_ms > 30000:
            raise Skip(f"a huge page costs {unit_ms:.1f} ms here: {needed_ms} ms of CPU time "
                       "would be needed to afford more")
        values, spent_ms, deferred, unit_ms, dearest_ms = filled_and_computed(needed_ms)
    expect(deferred > 0, "the budget never said wait for a heap filled at once")
    expect(values["filled_huge_kb"] <= 128 * 1024,
           f"{values['filled_huge_kb']} kB of 256 MiB in huge pages right after filling")
    expect(spent_ms <= values["cpu_ms"] / 32 + overdraw_allowed_ms(unit_ms, dearest_ms),
           f"{spent_ms} ms spent on huge pages in {values['cpu_ms']} ms of CPU time "
           f"(the dearest make {dearest_ms:.2f} ms)")
    expect(values["huge_kb"] >= values["filled_huge_kb"] + 2048,
           f"no huge page made as the CPU time grew ({values['filled_huge_kb']} kB, then "
           f"{values['huge_kb']} kB)")
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        eighth = run_probe(args, ["budget", "256", "600"], {
            "LD_PRELOAD": args.lib, "HUGEHEAP_HUGE_BUDGET": "always",
            "HUGEHEAP_HUGE_BUDGET_SHARE": "8", "HUGEHEAP_STATS": f"json:{stats_path}"})
        stats = read_stats(stats_path)[0]
    spent_ms, unit_ms = int(stats["huge_cost_ms"]), int(stats["huge_unit_cost_us"]) / 1000  # type: ignore[call-overload]
    dearest_ms = int(stats["huge_dearest_cost_us"]) / 1000  # type: ignore[call-overload]
    print(f"with HUGEHEAP_HUGE_BUDGET_SHARE=8: {spent_ms} ms in {eighth['cpu_ms']} ms of CPU")
    expect(spent_ms <= eighth["cpu_ms"] / 8 + overdraw_allowed_ms(unit_ms, dearest_ms),
           f"{spent_ms} ms spent on huge pages in {eighth['cpu_ms']} ms of CPU time with a share "
           "of an eighth")
    off = run_probe(args, ["budget", "256", "0"], {"LD_PRELOAD": args.lib})
    expect(off["huge_kb"] >= 200 * 1024,
           f"only {off['huge_kb']} kB of 256 MiB in huge pages with the budget off")


def check_slack(args: argparse.Namespace) -> None:
    """Free memory beyond a sixteenth of the demand goes back within a
    second of its units falling quiet, not after the release delay: 48 MiB
    of 256 KiB blocks, three in four freed, leave about 12 MiB resident, in
    4 KiB pages and in a huge heap, whose huge pages at most half in use are
    split for it (the kernel frees no part of a huge page before it splits
    it).  The library before kept all 48 MiB for the release delay (10 s).
    A heap still in 4 KiB pages keeps 256 KiB beyond the sixteenth, not a
    whole unit: 8 MiB of such blocks, three in four freed, leave the 2 MiB
    in use and little more (1.5 MiB more with a unit kept)."""
    def holes(env: dict[str, str], shape: tuple[str, ...] = ("48",)) -> dict[str, int]:
        return run_probe(args, ["holes", *shape], {"LD_PRELOAD": args.lib, **env})

    # A block of 1 MiB every 100 ms, placed above the holes: they fall quiet.
    few = holes({}, ("8", "100", "1024"))
    own_kb = few["anon_kb"] - 8 * 1024  # the program's own, before the heap
    kept_kb = few["anon_after_kb"] - own_kb - 2 * 1024
    print(f"8 MiB in 4 KiB pages, 6 MiB freed: {kept_kb} kB kept beyond the 2 MiB in use")
    expect(kept_kb <= 512, f"{kept_kb} kB of free memory kept beyond the 2 MiB in use of a "
           "small heap (at most 256 KiB and the pages the last block wrote)")

    small = holes({"HUGEHEAP_THP": "off"})
    print(f"4 KiB pages: {small['anon_kb']} kB, then {small['anon_after_kb']} kB")
    # 12 MiB in use, a sixteenth of it and one unit kept, the program's own.
    expect(small["anon_after_kb"] <= 20 * 1024,
           f"{small['anon_after_kb']} kB resident a second after freeing 36 of 48 MiB")
    if system_thp() not in ("madvise", "always"):
        return
    huge = holes({})
    print(f"huge heap: {huge['anon_kb']} kB ({huge['huge_kb']} kB in huge pages), then "
          f"{huge['anon_after_kb']} kB ({huge['huge_after_kb']} kB); {huge['splits']} huge "
          "pages split")
    if huge["huge_kb"] < 32 * 1024:
        raise Skip(f"only {huge['huge_kb']} kB of the 48 MiB heap became huge pages here")
    expect(huge["anon_after_kb"] <= 20 * 1024,
           f"{huge['anon_after_kb']} kB resident a second after freeing 36 of 48 MiB")
    expect(huge["splits"] >= 8,
           f"the kernel split {huge['splits']} huge pages: the free parts of those at most half "
           "in use stay charged")


def check_growing_vector(args: argparse.Namespace) -> None:
    """An array grown by doubling (a new copy, the old one freed, as a C++
    vector grows) costs what it costs under glibc, which unmaps each old
    copy: the old copies are big frees that set a record, and give their
    memory back at once, in a small heap and in a huge one."""
    def peak_kb(env: dict[str, str]) -> int:
        return run_probe(args, ["grow", "24"], env)["peak_kb"]

    glibc = peak_kb({})
    for name, env in (("small at first", {}), ("huge", {"HUGEHEAP_HUGE_THRESHOLD_MB": "0"})):
        peak = peak_kb({"LD_PRELOAD": args.lib, **env})
        # glibc's peak is the last two copies (12 and 24 MiB) and the program;
        # a huge heap adds the free parts of the 2 MiB units the two copies
        # share with freed ones (at most 2 MiB each).  The old copies kept
        # would add 12 MiB.
        expect(peak <= glibc + 6 * 1024,
               f"heap {name}: peak {peak} kB growing a 24 MiB array, glibc's {glibc} kB "
               "(the old copies were kept)")
        print(f"heap {name}: peak {peak} kB, glibc's {glibc} kB")


def check_replaced_blocks(args: argparse.Namespace) -> None:
    """Big blocks replaced by others of about their size (8 live blocks of
    4-20 MiB, the oldest replaced 1000 times) set a record of the big frees
    now and then; the room each leaves is filled again at once, so a huge
    heap stops giving it back once it sees the units it gave back faulted in
    again: 43 units given back here, 106 without the rule (growing with the
    count of replacements)."""
    thp_mode_among(("madvise", "always"), "the heap never turns huge")
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        run_probe(args, ["replace", "1000"], {
            "LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{stats}"})
        record = read_stats(stats)[0]
    released = int(record["units_released"])  # type: ignore[call-overload]
    again = int(record["units_refaulted"])  # type: ignore[call-overload]
    print(f"1000 big blocks replaced: {released} units given back, {again} needed again")
    expect(released <= 64, f"{released} 2 MiB units given back and {again} of them needed "
           "again: the heap kept giving back room the program reuses")


POOL_2MB = Path("/sys/kernel/mm/hugepages/hugepages-2048kB")


MAP_HUGETLB = getattr(mmap, "MAP_HUGETLB", 0x40000)  # the value on x86-64 and AArch64


def write_pool_pages_once(pages: int) -> None:
    """Writes `pages` free pages of the pool once, as `hugeheap pool reserve`
    does: a page never written costs 2-9 ms at its first touch on a virtual
    machine whose host backs memory lazily, more than the same memory in
    4 KiB pages, so the library's budget would rightly hold a heap back from
    it, by as much as the host's timing says."""
    pool = mmap.mmap(-1, pages << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_HUGETLB)
    try:
        for page in range(pages):
            pool[page << 21] = 1
    finally:
        pool.close()


@contextlib.contextmanager
def reserved_pool(pages: int) -> Iterator[None]:
    """pages more 2 MiB pages in the kernel's pool for the block, each written
    once, given back after it (Skip where they cannot be had: not root, no
    hugetlbfs, memory too fragmented)."""
    total = POOL_2MB / "nr_hugepages"
    if not total.exists():
        raise Skip("the kernel has no 2 MiB hugetlb pool (no hugetlbfs)")
    if os.geteuid() != 0:
        raise Skip("reserving hugetlb pages needs root")
    before = int(total.read_text())
    try:
        total.write_text(f"{before + pages}\n")
        free = int((POOL_2MB / "free_hugepages").read_text())
        if free < pages:
            raise Skip(f"the kernel gave {free} free 2 MiB pages of the {pages} asked for")
        write_pool_pages_once(pages)
        yield
    finally:
        total.write_text(f"{before}\n")


def hugetlb_probe(args: argparse.Namespace, probe: list[str],
                  **env: str) -> tuple[dict[str, object], str]:
    """The statistics and the output of an alloc_probe command in hugetlb mode."""
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.json"
        result = run([args.probe, *probe], env={
            "LD_PRELOAD": args.lib, "HUGEHEAP_THP": "hugetlb", "HUGEHEAP_STATS": f"json:{stats}",
            **env})
        expect(result.returncode == 0, f"probe failed under hugetlb: {result.stderr}")
        record = read_stats(stats)[0]
    expect(record["mode"] == "hugetlb", f"mode is {record['mode']}")
    return record, result.stdout


def hugetlb_run(args: argparse.Namespace, mib: int, *probe: str, **env: str) -> dict[str, object]:
    """The statistics of alloc_probe touching mib MiB (and keeping them), or
    of the probe's other commands, in hugetlb mode."""
    return hugetlb_probe(args, list(probe or ("touch", str(mib))), **env)[0]


def check_hugetlb(args: argparse.Namespace) -> None:
    """HUGEHEAP_THP=hugetlb works whether or not the kernel's pool has pages;
    with pages in it (reserved here, as root, and given back), a big heap
    takes them, a small heap does not, and HUGEHEAP_POOL_MAX_MB caps them."""
    try:
        pool = int(Path("/proc/sys/vm/nr_hugepages").read_text())
    except OSError:
        pool = 0
    record = hugetlb_run(args, 64)
    if pool == 0:
        expect(int(record["hugetlb_fallbacks"]) >= 1,  # type: ignore[call-overload]
               "empty hugetlb pool but no fallback to THP recorded")
    with reserved_pool(24):  # 48 MiB
        small = hugetlb_run(args, 8)
        expect(small["hugetlb_bytes"] == 0,
               f"an 8 MiB heap holds {small['hugetlb_bytes']} bytes of the pool "
               "(a small heap stays in 4 KiB pages)")
        # A 64 MiB heap's units start in 4 KiB pages and are moved into pool
        # pages once written, 0.7-0.9 ms of CPU each here, just under the
        # 1 ms a unit may cost free of the budget. The probe runs 30-60 ms of
        # CPU time, whose thirty-second one move dearer than that (a slower
        # machine) spends, leaving the rest in 4 KiB pages. Where pool pages
        # go is checked here, with a budget of half the CPU time; what the
        # budget holds back, by preload_huge-budget.
        generous = {"HUGEHEAP_HUGE_BUDGET_SHARE": "2"}
        big = hugetlb_run(args, 64, **generous)
        held = int(big["hugetlb_bytes"])  # type: ignore[call-overload]
        expect(held >= 16 << 20, f"a 64 MiB heap holds only {held} bytes of a 48 MiB pool")
        # Its units were written in 4 KiB pages before it proved dense: they
        # came into the pool by moves, and the statistics say so.
        moved_in = int(big["units_into_pool"])  # type: ignore[call-overload]
        expect(moved_in << 21 >= 16 << 20, f"a 64 MiB heap holds {held} bytes of the pool, but "
               f"statistics count {moved_in} units moved into pool pages")
        capped = hugetlb_run(args, 64, HUGEHEAP_POOL_MAX_MB="8", **generous)
        held = int(capped["hugetlb_bytes"])  # type: ignore[call-overload]
        expect(0 < held <= 8 << 20, f"HUGEHEAP_POOL_MAX_MB=8, yet {held} bytes held")
        expect(int(capped["hugetlb_capped"]) >= 1,  # type: ignore[call-overload]
               "the cap held the heap back but no capped fallback was counted")
        print(f"64 MiB heap: {big['hugetlb_bytes']} bytes of the pool ({moved_in} units moved "
              f"in); capped at 8 MiB: {held} bytes, {capped['hugetlb_capped']} fallbacks")
        # An arena's chunks take pool pages only once the heap passes the
        # threshold: 40 MiB fill chunks of 2, 4, 8 and 16 MiB below it, then
        # one of 32 MiB.
        small_arena = hugetlb_run(args, 0, "arena", "8")
        expect(small_arena["hugetlb_bytes"] == 0,
               f"an arena of 8 MiB holds {small_arena['hugetlb_bytes']} bytes of the pool")
        big_arena = hugetlb_run(args, 0, "arena", "40")
        held = int(big_arena["hugetlb_bytes"])  # type: ignore[call-overload]
        # The 32 MiB chunk, and perhaps a unit of the (then huge) malloc heap.
        expect(32 << 20 <= held <= 36 << 20,
               f"an arena of 40 MiB holds {held} bytes of the pool: not its 32 MiB chunk alone")
        # A block of pool pages grown by realloc from 34 to 42 MiB (2 steps)
        # takes new pool pages after it or moves its pages: copied into a new
        # block instead, the old and new blocks would need 38 pages at the
        # last step, more than the 24 the pool has: it would fall back to THP.
        # Grown from 33 MiB by 1.5 MiB, its tail past the whole units (4 KiB
        # pages) grows, or is copied into the pool pages it gains.
        for growth in (("34", "42"), ("33", "41", "1536")):
            grown = hugetlb_run(args, 0, "realloc", *growth)
            copies = int(grown["large_allocs"]) - 1  # type: ignore[call-overload]
            expect(copies == 0, f"a pool block grown by realloc ({' '.join(growth)}) was "
                   f"copied {copies} times into a new block")
            expect(int(grown["hugetlb_fallbacks"]) == 0,  # type: ignore[call-overload]
                   f"{grown['hugetlb_fallbacks']} fallbacks to THP growing a pool block")
            held = int(grown["hugetlb_bytes"])  # type: ignore[call-overload]
            expect(0 < held <= 10 << 20, f"shrunk to 8.25-8.5 MiB, the block still holds {held} "
                   "bytes of the pool")
        print(f"pool block grown 34 -> 42 MiB and 33 -> 40.5 MiB without a copy; shrunk: {held} "
              "bytes held")
        # A block's whole 2 MiB units are pool pages, its header page and the
        # tail past them 4 KiB pages: a pool page is resident whole, so the
        # header in one would cost a block of 32 MiB a 17th page.
        for kib in (32 << 10, 33 << 10):
            result = run([args.probe, "block", str(kib)],
                         env={"LD_PRELOAD": args.lib, "HUGEHEAP_THP": "hugetlb"})
            expect(result.returncode == 0, f"alloc_probe block failed under hugetlb: "
                   f"{result.stderr}")
            values = probe_values(result.stdout)
            expect(values["hugetlb_kb"] == 32 << 10,
                   f"a block of {kib} KiB holds {values['hugetlb_kb']} KiB of the pool, not "
                   "its 32 MiB of whole units")
        # A sparse heap (blocks written a tenth, as ABC's pdr's) in a process
        # of one thread keeps its units in 4 KiB pages under the dense policy,
        # as THP mode does: a pool page at each unit's first touch would hold
        # 2 MiB where 200 KiB were written (the whole pool, here).
        sparse = hugetlb_run(args, 0, "sparse", "96")
        held = int(sparse["hugetlb_bytes"])  # type: ignore[call-overload]
        expect(held <= 8 << 20, f"a sparse heap of 96 MiB holds {held} bytes of the pool")
        print(f"sparse heap of 96 MiB: {held} bytes of the pool")
        check_pool_pages_moved(args)


def check_pool_pages_moved(args: argparse.Namespace) -> None:
    """The pool pages of units left at most half in use become 4 KiB pages
    (their free pages then go back) in a process of one thread, with every
    byte kept; not with a second thread, nor under HUGEHEAP_POOL_MOVE=off."""
    cases = [("1", {}, True), ("2", {}, False), ("1", {"HUGEHEAP_POOL_MOVE": "off"}, False)]
    for threads, env, moves in cases:
        record, out = hugetlb_probe(args, ["scatter-blocks", "80", threads], **env)
        values = probe_values(out)
        moved = int(record["pool_units_moved"])  # type: ignore[call-overload]
        what = f"{threads} thread(s){', ' + str(env) if env else ''}"
        expect(values["hugetlb_kb"] >= 16 << 10,
               f"{what}: the 80 MiB heap held only {values['hugetlb_kb']} KiB of the pool")
        if moves:
            expect(moved >= 1 and values["hugetlb_after_kb"] < values["hugetlb_kb"],
                   f"{what}: {moved} pool pages moved, {values['hugetlb_kb']} -> "
                   f"{values['hugetlb_after_kb']} KiB of the pool after seven blocks in eight "
                   "were freed")
        else:
            expect(moved == 0 and values["hugetlb_after_kb"] == values["hugetlb_kb"],
                   f"{what}: {moved} pool pages moved ({values['hugetlb_kb']} -> "
                   f"{values['hugetlb_after_kb']} KiB), which only a process of one thread may do")
        print(f"scattered blocks, {what}: {moved} pool pages moved, {values['hugetlb_kb']} -> "
              f"{values['hugetlb_after_kb']} KiB of the pool")


def check_environment(args: argparse.Namespace) -> None:
    """Unknown values: one warning line naming the variable, then the default."""
    cases = {
        "HUGEHEAP_THP": ("sometimes", "unknown HUGEHEAP_THP value"),
        "HUGEHEAP_STATS": ("verbose", "unknown HUGEHEAP_STATS value"),
        "GLIBC_THP_ALWAYS": ("yes", "unknown GLIBC_THP_ALWAYS value"),
        "HUGEHEAP_RELEASE_DELAY_MS": ("soon", "HUGEHEAP_RELEASE_DELAY_MS is not a number"),
        "HUGEHEAP_HUGE_THRESHOLD_MB": ("big", "HUGEHEAP_HUGE_THRESHOLD_MB is not a number"),
        "HUGEHEAP_HUGE_UNITS": ("some", "unknown HUGEHEAP_HUGE_UNITS value"),
        "HUGEHEAP_HUGE_BUDGET": ("cheap", "unknown HUGEHEAP_HUGE_BUDGET value"),
        "HUGEHEAP_POOL_MOVE": ("sometimes", "unknown HUGEHEAP_POOL_MOVE value"),
        "HUGEHEAP_LENDING": ("sometimes", "unknown HUGEHEAP_LENDING value"),
        "HUGEHEAP_HUGE_BUDGET_SHARE": ("0", "HUGEHEAP_HUGE_BUDGET_SHARE is not a whole number"),
        "HUGEHEAP_POOL_MAX_MB": ("lots", "HUGEHEAP_POOL_MAX_MB is not a number"),
    }
    for variable, (value, message) in cases.items():
        result = run([args.probe, "touch", "4"], env={"LD_PRELOAD": args.lib, variable: value})
        expect(result.returncode == 0, f"{variable}={value}: probe failed")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        expect(len(lines) == 1 and message in lines[0],
               f"{variable}={value}: expected one warning, got {lines!r}")
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "s.json"
        for env, mode in (({"GLIBC_THP_ALWAYS": "1"}, "on"), ({"HUGEHEAP_THP": "off"}, "off"),
                          ({}, "on"), ({"HUGEHEAP_THP": "off", "GLIBC_THP_ALWAYS": "1"}, "off")):
            stats.unlink(missing_ok=True)
            run([args.probe, "touch", "1"],
                env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{stats}", **env})
            got = read_stats(stats)[0]["mode"]
            expect(got == mode, f"{env}: mode {got}, expected {mode}")


def check_stats(args: argparse.Namespace) -> None:
    """HUGEHEAP_STATS=json:PATH writes one JSON object per process; =1 prints."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stats-%p.json"
        result = run([args.probe, "threads"],
                     env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{path}"})
        expect(result.returncode == 0, f"probe failed: {result.stderr}")
        files = list(Path(tmp).glob("stats-*.json"))
        expect(len(files) == 1, f"expected one stats file with the pid in its name, got {files}")
        records = read_stats(files[0])
        expect(len(records) == 1, f"expected one record, got {len(records)}")
        r = records[0]
        expect(files[0].name == f"stats-{r['pid']}.json", "%p was not the process id")
        keys = {"mode", "mapped_bytes", "mapped_peak_bytes", "in_use_peak_bytes", "allocs",
                "frees", "threads", "anonymous_bytes", "anon_huge_bytes", "huge_share",
                "mremap_moves", "mremap_in_place", "large_allocs", "system_thp"}
        expect(keys <= r.keys(), f"missing keys: {sorted(keys - r.keys())}")
        as_int = {k: int(v) for k, v in r.items() if isinstance(v, int)}
        expect(as_int["threads"] >= 5, f"threads {as_int['threads']}")
        expect(as_int["allocs"] >= 800_000, f"allocs {as_int['allocs']}")
        expect(as_int["frees"] >= 800_000, f"frees {as_int['frees']}")
        expect(as_int["mapped_peak_bytes"] >= 200 * MIB, "mapped peak below the 200 MiB block")
        expect(as_int["in_use_peak_bytes"] >= 200 * MIB, "in-use peak below the 200 MiB block")
        expect(as_int["mremap_moves"] + as_int["mremap_in_place"] >= 1, "realloc did not remap")
        share = r["huge_share"]
        expect(isinstance(share, float) and 0.0 <= share <= 1.0, f"huge_share {share!r}")
        expect(r["system_thp"] == system_thp(),
               f"system_thp {r['system_thp']!r}, the machine's is {system_thp()!r}")
        if system_thp() == "never":
            expect(share == 0.0, f"huge_share {share} with THP never")

    # Lending, counted: 32 blocks of 3000 bytes served by the freed blocks of
    # 3500 (a larger class) in the main thread of a small heap; none with it off.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lend.json"
        for lending, least, most in (("auto", 32, 32), ("off", 0, 0)):
            path.unlink(missing_ok=True)
            result = run([args.probe, "lend", "64"],
                         env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{path}",
                              "HUGEHEAP_LENDING": lending})
            expect(result.returncode == 0, f"probe failed: {result.stderr}")
            lent = read_stats(path)[0]["lent_allocs"]
            expect(isinstance(lent, int) and least <= lent <= most,
                   f"HUGEHEAP_LENDING={lending}: {lent!r} blocks lent, expected {least}-{most}")

    # The units' fullness at the peak: small pages thinned to one in eight
    # before the peak leave the units of their 16 MiB an eighth in use.
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scatter.json"
        result = run([args.probe, "scatter", "16"],
                     env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{path}"})
        expect(result.returncode == 0, f"probe failed: {result.stderr}")
        r = read_stats(path)[0]
        units = [r[f"peak_units_{k}_used"] for k in ("mostly", "half", "quarter", "little")]
        expect(units[3] >= 6 and units[0] <= 2,
               f"units by use at the peak (3/4+, 1/2+, 1/4+, less): {units}")

    # A json file that cannot be written is named on the stderr the program
    # started with, even by one that closes its own at exit (ls does).
    missing = "/nonexistent-hugeheap-dir/stats.json"
    result = run(["ls", "/"], env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{missing}"})
    expect(f"cannot open the HUGEHEAP_STATS json file for writing: {missing}" in result.stderr,
           f"no warning naming {missing}: {result.stderr!r}")

    result = run([args.probe, "threads"], env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": "1"})
    lines = [line for line in result.stderr.splitlines() if line.startswith("hugeheap:")]
    expect(len(lines) >= 3 and "huge-page share" in result.stderr,
           f"HUGEHEAP_STATS=1 printed:\n{result.stderr}")


# ------------------------------------------------- real programs, preloaded

def compare_preloaded(args: argparse.Namespace, cmd: list[str], normalise: Callable[[str], str],
                      env: dict[str, str] | None = None, cwd: str | None = None,
                      outputs: list[Path] | None = None) -> None:
    """Runs cmd without and with hugeheap preloaded; output must be the same
    and the preloaded run must have allocated through hugeheap."""
    base_env = dict(env or {})
    plain = run(cmd, env=base_env, cwd=cwd)
    plain_files = [p.read_bytes() for p in outputs or []]
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats-%p.json"
        preloaded = run(cmd, env={**base_env, "LD_PRELOAD": args.lib,
                                  "HUGEHEAP_STATS": f"json:{stats}"}, cwd=cwd)
        records = [rec for f in Path(tmp).glob("stats-*.json") for rec in read_stats(f)]
    preloaded_files = [p.read_bytes() for p in outputs or []]
    expect(preloaded.returncode == plain.returncode,
           f"exit code {preloaded.returncode} preloaded, {plain.returncode} without\n"
           f"{preloaded.stderr[-2000:]}")
    expect(normalise(preloaded.stdout) == normalise(plain.stdout),
           "output differs with hugeheap preloaded")
    expect(preloaded_files == plain_files, "output files differ with hugeheap preloaded")
    expect(any(int(r["allocs"]) > 0 for r in records),  # type: ignore[call-overload]
           "hugeheap did not see the program's allocations (was it preloaded?)")
    total = sum(int(r["allocs"]) for r in records)  # type: ignore[call-overload]
    print(f"{Path(cmd[0]).name}: same output; {len(records)} process(es), {total} allocations "
          "through hugeheap")


def random_cnf(variables: int, clauses: int, seed: int) -> str:
    import random
    rng = random.Random(seed)
    lines = [f"p cnf {variables} {clauses}"]
    for _ in range(clauses):
        picked = rng.sample(range(1, variables + 1), 3)
        lines.append(" ".join(str(v if rng.random() < 0.5 else -v) for v in picked) + " 0")
    return "\n".join(lines) + "\n"


def pigeonhole_cnf(holes: int) -> str:
    pigeons = holes + 1
    var = lambda p, h: p * holes + h + 1  # noqa: E731
    clauses = [[var(p, h) for h in range(holes)] for p in range(pigeons)]
    for h in range(holes):
        for p in range(pigeons):
            for q in range(p + 1, pigeons):
                clauses.append([-var(p, h), -var(q, h)])
    body = "\n".join(" ".join(map(str, c)) + " 0" for c in clauses)
    return f"p cnf {pigeons * holes} {len(clauses)}\n{body}\n"


def sat_lines(text: str) -> str:
    """The answer and model of a SAT-competition-style output, without timings."""
    return "\n".join(line for line in text.splitlines() if line[:2] in ("s ", "v "))


def check_real_python(args: argparse.Namespace) -> None:
    script = (
        "import json, collections\n"
        "words = [str(i * 7919 % 100003) for i in range(300000)]\n"
        "counts = collections.Counter(w[:3] for w in words)\n"
        "table = {w: [len(w), w[::-1]] for w in words[:50000]}\n"
        "text = ' '.join(sorted(set(words)))\n"
        "print(json.dumps(counts.most_common(20)), len(table), len(text), hash('x') & 0)\n"
    )
    compare_preloaded(args, [sys.executable, "-c", script], lambda s: s,
                      env={"PYTHONHASHSEED": "0"})


def check_real_gcc(args: argparse.Namespace) -> None:
    gcc = need_tool("gcc")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "prog.c"
        functions = "\n".join(
            f"int f{i}(int x) {{ int s = 0; for (int k = 0; k < x; k++) s += k * {i} ^ (s >> 3);"
            f" return s; }}" for i in range(300))
        source.write_text(functions + "\nint main(void) { return f7(3); }\n")
        compare_preloaded(args, [gcc, "-O2", "-S", "-frandom-seed=1", "-o", "-", str(source)],
                          lambda s: s, cwd=tmp)


def sat_instances(tmp: str, seed: int) -> list[Path]:
    """A large satisfiable random instance and a small unsatisfiable one."""
    paths = []
    for name, cnf in (("random", random_cnf(100000, 300000, seed)), ("php", pigeonhole_cnf(7))):
        path = Path(tmp) / f"{name}.cnf"
        path.write_text(cnf)
        paths.append(path)
    return paths


def check_real_minisat(args: argparse.Namespace) -> None:
    minisat = need_tool("minisat")
    with tempfile.TemporaryDirectory() as tmp:
        for instance in sat_instances(tmp, 1):
            result_file = instance.with_suffix(".out")
            # The result file holds the answer and the model; stdout has timings.
            compare_preloaded(args, [minisat, "-verb=0", str(instance), str(result_file)],
                              lambda s: "", outputs=[result_file])


def check_real_cadical(args: argparse.Namespace) -> None:
    cadical = need_tool("cadical")
    with tempfile.TemporaryDirectory() as tmp:
        for instance in sat_instances(tmp, 2):
            compare_preloaded(args, [cadical, "-q", str(instance)], sat_lines)


def check_real_z3(args: argparse.Namespace) -> None:
    z3 = need_tool("z3")
    p, q = 40009, 50021
    problem = (
        "(set-logic QF_BV)\n(declare-const x (_ BitVec 32))\n(declare-const y (_ BitVec 32))\n"
        "(assert (bvugt x #x00000001))\n(assert (bvugt y #x00000001))\n"
        "(assert (bvult x #x00010000))\n(assert (bvult y #x00010000))\n"
        f"(assert (= (bvmul x y) (_ bv{p * q} 32)))\n(check-sat)\n(get-value (x y))\n")
    with tempfile.TemporaryDirectory() as tmp:
        smt = Path(tmp) / "factor.smt2"
        smt.write_text(problem)
        compare_preloaded(args, [z3, str(smt)], lambda s: s)


def check_glibc_small_heaps(args: argparse.Namespace) -> None:
    """HUGEHEAP_SMALL_HEAPS=glibc: glibc serves the heap while it is small
    (every block of a 4 MiB heap made from two threads, aligned and zeroed
    ones too, is glibc's), the library once it passes 8 MiB (of 48 MiB more
    in blocks of 256 KiB, all but the first few); glibc's blocks grown by realloc
    move into the library with their contents, free and malloc_usable_size
    take both, a forked child allocates.  The size classes serve every block
    by default and where the value is unknown (with a warning)."""
    def handover(env: dict[str, str]) -> tuple[dict[str, int], str]:
        with tempfile.TemporaryDirectory() as tmp:
            stats = Path(tmp) / "stats.json"
            result = run([args.probe, "handover", "48"],
                         env={"LD_PRELOAD": args.lib, "HUGEHEAP_STATS": f"json:{stats}", **env})
            expect(result.returncode == 0, f"alloc_probe handover failed: {result.stderr.strip()}")
            values = probe_values(result.stdout)
            record = read_stats(stats)[0]
            values["glibc_blocks"] = int(str(record["glibc_blocks"]))
            return values, result.stderr

    glibc, _ = handover({"HUGEHEAP_SMALL_HEAPS": "glibc"})
    print(f"glibc serves: {glibc}")
    expect(glibc["small_ours"] == 0,
           f"{glibc['small_ours']} of the small heap's {glibc['small']} blocks were the library's")
    # Each thread tells its count in steps of 1024 blocks: the exited one's
    # last step may be untold.
    expect(glibc["small"] - 1024 <= glibc["glibc_blocks"] <= glibc["small"] + glibc["big"],
           f"the statistics count {glibc['glibc_blocks']} blocks from glibc")
    # glibc serves up to 8 MiB: of the 48 MiB in blocks of 256 KiB, at most
    # 32 blocks, less what the small heap holds.
    expect(0 < glibc["big_ours"] < glibc["big"] and glibc["big"] - glibc["big_ours"] <= 32,
           f"{glibc['big_ours']} of {glibc['big']} blocks past the threshold were the library's")
    expect(glibc["moved_ours"] == glibc["small"],
           f"{glibc['moved_ours']} of {glibc['small']} grown blocks moved into the library")
    classes, _ = handover({})
    expect(classes["small_ours"] == classes["small"] and classes["glibc_blocks"] == 0,
           f"by default {classes['small_ours']} of {classes['small']} small blocks were the "
           f"library's and {classes['glibc_blocks']} glibc's")
    unknown, stderr = handover({"HUGEHEAP_SMALL_HEAPS": "both"})
    expect("unknown HUGEHEAP_SMALL_HEAPS" in stderr and unknown["small_ours"] == unknown["small"],
           f"an unknown value: {unknown}, stderr {stderr.strip()!r}")


CHECKS: dict[str, Callable[[argparse.Namespace], None]] = {
    "glibc-small-heaps": check_glibc_small_heaps,
    "symbols": check_symbols,
    "static": check_static,
    "thp-coverage": check_thp_coverage,
    "huge-budget": check_huge_budget,
    "slack": check_slack,
    "thp-off": check_thp_off,
    "hugetlb": check_hugetlb,
    "small-heap": check_small_heap,
    "api-heaps": check_api_heaps,
    "early-blocks": check_early_blocks,
    "sparse-blocks": check_sparse_blocks,
    "whole-units": check_whole_units,
    "growing-vector": check_growing_vector,
    "replaced-blocks": check_replaced_blocks,
    "environment": check_environment,
    "stats": check_stats,
    "real-python": check_real_python,
    "real-gcc": check_real_gcc,
    "real-minisat": check_real_minisat,
    "real-cadical": check_real_cadical,
    "real-z3": check_real_z3,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--lib", help="path of libhugeheap.so")
    parser.add_argument("--probe", help="path of alloc_probe")
    parser.add_argument("--binary", help="path of the static test binary")
    args = parser.parse_args()
    try:
        CHECKS[args.check](args)
    except Skip as skip:
        print(f"SKIP: {skip}")
        return SKIP
    except Failure as failure:
        print(f"FAIL: {failure}")
        return 1
    print(f"{args.check}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
