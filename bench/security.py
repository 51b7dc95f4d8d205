#!/usr/bin/env python3
"""Which heap bugs each allocator catches: the security probes of
bench/security (the bug classes of mimalloc-bench's security folder, probes
of our own) run under every allocator mode.

    python3 bench/security.py [--modes system,hugeheap,mimalloc,jemalloc,tcmalloc]
                              [--sizes small,medium,large] [--repeat K] [--build DIR]
    python3 bench/security.py expect --library LIB --bin DIR FAMILY/PROBE[:SIZE] ...

The first form prints Markdown (modes also glibc-thp, hugeheap-nothp and
hugeheap-pool, the library drawing on a reserved pool: `hugeheap pool
reserve`): per bug class a table of every probe and size under every mode, the
number caught per class and in all, and the probes the system allocator
(glibc) catches that hugeheap does not. `expect` is the test (ctest runs it):
it exits 1 unless every probe named is caught with LIB preloaded, after a
control probe showed that LIB serves malloc there.

A probe commits one bug and then prints NOT_CAUGHT. It is *caught* when the
process dies by a signal (the allocator aborts, or the bug faults) or exits
nonzero before printing NOT_CAUGHT; exit status 3 means the probe itself saw
the allocator do the safe thing (malloc of an impossible size returned NULL,
a freed block was not handed out again at once). It is *not caught* when it
prints NOT_CAUGHT and exits 0; a process that prints NOT_CAUGHT and then
dies (the allocator noticed only later, at exit) counts as not caught and
shows as `late`; a probe still running after --timeout seconds (a heap the
bug sent into a loop) as `hang`, not caught either. Exit status 64 is no
verdict (the probe was called wrongly, or a plain malloc failed) and stops
the run. Every probe runs --repeat times: where a bug lands depends on the
address layout, random per process, and a probe counts as caught only if it
was caught every time (a cell like `segv/-` shows both endings).

Sizes are the allocation sizes of sized probes: small 8 bytes, medium 4 KiB,
large 256 KiB (mimalloc-bench's three, so the count compares with its 116),
and huge 4 MiB (beyond every allocator's size classes: blocks mapped on their
own); a probe that takes no size runs once. The probes are found in
BUILD/bin (`make build` makes them; if they are missing and BUILD is a CMake
build directory, they are built there first); hugeheap's library is found as
every hugeheap command finds it (HUGEHEAP_LIBRARY, else this checkout's
build/lib)."""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.errors import HarnessError  # noqa: E402
from hugeheap.measure.allocators import AllocatorMode, resolve  # noqa: E402

SIZES = {"small": 8, "medium": 4096, "large": 256 * 1024, "huge": 4 * 1024 * 1024}
DEFAULT_SIZES = ["small", "medium", "large"]
DEFAULT_MODES = ["system", "hugeheap", "mimalloc", "jemalloc", "tcmalloc"]
FAMILIES = ["double-free", "invalid-free", "overflow", "use-after-free", "zero-size", "reuse",
            "size-overflow", "heap-properties", "delete-mismatch"]
PROBE_CAUGHT = 3  # probe.h: the probe saw the allocator do the safe thing
PROBE_ERROR = 64  # probe.h: no verdict
NOT_CAUGHT = "NOT_CAUGHT"
# The allocator the control probe names for each built-in mode.
SERVING = {"system": "glibc", "glibc-thp": "glibc", "hugeheap": "hugeheap",
           "hugeheap-nothp": "hugeheap", "hugeheap-pool": "hugeheap", "mimalloc": "mimalloc",
           "jemalloc": "jemalloc", "tcmalloc": "tcmalloc"}


@dataclass(frozen=True)
class Probe:
    family: str  # the program hh-probe-FAMILY
    name: str
    bug_class: str
    sized: bool


@dataclass(frozen=True)
class Case:
    """One probe at one size (size None for a probe that takes none)."""
    probe: Probe
    size: str | None

    @property
    def label(self) -> str:
        where = f"{self.probe.family}/{self.probe.name}"
        return f"{where}:{self.size}" if self.size else where


@dataclass(frozen=True)
class Outcome:
    caught: bool
    how: str  # abort, segv, safe, exit N; not caught: -, late (...), hang
    message: str  # the first line the process wrote on stderr


def program(bin_dir: Path, family: str) -> Path:
    return bin_dir / f"hh-probe-{family}"


def locate_probes(build: Path) -> Path:
    """BUILD/bin with every probe program in it, building them first where
    BUILD is a CMake build directory that lacks them."""
    bin_dir = build / "bin"
    if all(program(bin_dir, f).is_file() for f in FAMILIES):
        return bin_dir
    if not (build / "CMakeCache.txt").is_file():
        raise HarnessError(f"the security probes are not in {bin_dir} and {build} is no CMake "
                           f"build directory: run `make build` first")
    built = subprocess.run(["cmake", "--build", str(build), "--target", "security-probes"],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise HarnessError(f"building the security probes in {build} failed: "
                           f"{built.stdout[-400:]}{built.stderr[-400:]}")
    return bin_dir


def list_probes(bin_dir: Path) -> list[Probe]:
    """Every probe of every family, as the programs list themselves."""
    probes = []
    for family in FAMILIES:
        listed = subprocess.run([str(program(bin_dir, family)), "--list"], capture_output=True,
                                text=True, check=True)
        for line in listed.stdout.splitlines():
            name, bug_class, sized = line.split("\t")
            probes.append(Probe(family, name, bug_class, sized == "sized"))
    return probes


def cases(probes: Iterable[Probe], sizes: Sequence[str]) -> list[Case]:
    return [Case(p, size) for p in probes for size in (sizes if p.sized else [None])]


def classify(returncode: int, stdout: str, stderr: str) -> Outcome:
    """The verdict of a finished probe (the rule of the module's docstring)."""
    message = next((line for line in stderr.splitlines() if line.strip()), "")
    printed = NOT_CAUGHT in stdout
    if returncode < 0:
        try:
            died = signal.Signals(-returncode).name.removeprefix("SIG").lower()
        except ValueError:
            died = f"signal {-returncode}"
        return Outcome(False, f"late ({died})", message) if printed else \
            Outcome(True, died, message)
    if returncode == PROBE_ERROR:
        raise HarnessError(f"a probe gave no verdict: {message}")
    if printed:
        return Outcome(False, "-" if returncode == 0 else f"late (exit {returncode})", message)
    if returncode == PROBE_CAUGHT:
        return Outcome(True, "safe", message)
    if returncode != 0:
        return Outcome(True, f"exit {returncode}", message)
    raise HarnessError(f"a probe exited 0 without a verdict: {message}")


def execute(bin_dir: Path, case: Case, env: Mapping[str, str],
            timeout: float) -> subprocess.CompletedProcess[str] | None:
    """The finished probe, or None when it ran out of time."""
    argv = [str(program(bin_dir, case.probe.family)), case.probe.name]
    if case.size is not None:
        argv.append(str(SIZES[case.size]))
    try:
        return subprocess.run(argv, env={**os.environ, **env}, capture_output=True, text=True,
                              errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def verdict(case: Case, done: subprocess.CompletedProcess[str] | None, timeout: float) -> Outcome:
    if done is None:
        return Outcome(False, "hang", f"still running after {timeout:g} s")
    try:
        return classify(done.returncode, done.stdout, done.stderr)
    except HarnessError as error:
        raise HarnessError(f"{case.label}: {error}") from None


def run_case(bin_dir: Path, case: Case, env: Mapping[str, str], timeout: float) -> Outcome:
    return verdict(case, execute(bin_dir, case, env, timeout), timeout)


def check_serving(bin_dir: Path, env: Mapping[str, str], expected: str, what: str) -> None:
    """Runs the control probe (no bug) with ENV: it must pass and name EXPECTED
    as the allocator serving malloc, or else nothing measured with ENV means
    anything."""
    control = Case(Probe(FAMILIES[0], "control", "control", True), "small")
    done = execute(bin_dir, control, env, 30)
    outcome = verdict(control, done, 30)
    serving = next((line.removeprefix("allocator: ") for line in (done.stdout if done else "")
                    .splitlines() if line.startswith("allocator: ")), "nothing")
    if outcome.caught or serving != expected:
        raise HarnessError(f"{what}: the control probe (no bug) ran with {serving} serving malloc "
                           f"and ended '{outcome.how}', expected {expected} and no catch")


def combined(outcomes: Sequence[Outcome]) -> Outcome:
    """One outcome for repeated runs of a case: caught only if caught every
    time; the ways it ended, each once, in the order seen (`segv/-`: the
    address layout, random per run, decided)."""
    hows = list(dict.fromkeys(outcome.how for outcome in outcomes))
    message = next((outcome.message for outcome in outcomes if outcome.message), "")
    return Outcome(all(outcome.caught for outcome in outcomes), "/".join(hows), message)


def run_all(bin_dir: Path, work: Sequence[Case], modes: Sequence[AllocatorMode], timeout: float,
            jobs: int, repeat: int) -> dict[tuple[str, Case], Outcome]:
    """Every case under every mode REPEAT times, JOBS at a time."""
    tasks = [(mode, case) for mode in modes for case in work]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        runs = list(pool.map(lambda task: run_case(bin_dir, task[1], task[0].env, timeout),
                             tasks * repeat))
    return {(mode.name, case): combined(runs[index::len(tasks)])
            for index, (mode, case) in enumerate(tasks)}


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def report(work: Sequence[Case], modes: Sequence[str], results: Mapping[tuple[str, Case], Outcome],
           reference: str, subject: str) -> str:
    """Markdown: a table per bug class, the counts, and what REFERENCE catches
    that SUBJECT does not."""
    classes = list(dict.fromkeys(case.probe.bug_class for case in work))
    parts = []
    for bug_class in classes:
        rows = [[case.probe.name, case.size or "-"] + [results[m, case].how for m in modes]
                for case in work if case.probe.bug_class == bug_class]
        parts.append(f"### {bug_class}\n\n" + markdown_table(["probe", "size", *modes], rows))

    def caught(mode: str, members: Sequence[Case]) -> str:
        return str(sum(results[mode, case].caught for case in members))

    count_rows = []
    for bug_class in classes:
        members = [case for case in work if case.probe.bug_class == bug_class]
        count_rows.append([bug_class, str(len(members))] + [caught(m, members) for m in modes])
    count_rows.append(["**all**", str(len(work))] + [f"**{caught(m, work)}**" for m in modes])
    parts.append("### caught, per class\n\n" +
                 markdown_table(["bug class", "probes", *modes], count_rows))
    if reference in modes and subject in modes:
        missed = [case for case in work
                  if results[reference, case].caught and not results[subject, case].caught]
        lines = [f"- {case.label}: {reference} {results[reference, case].how}"
                 + (f" ({results[reference, case].message})" if results[reference, case].message
                    else "") for case in missed]
        parts.append(f"### caught by {reference}, not by {subject} ({len(missed)})\n\n"
                     + ("\n".join(lines) or "none"))
    return "\n\n".join(parts)


def parse_list(text: str, known: Iterable[str], what: str) -> list[str]:
    names = [name for name in text.split(",") if name]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise HarnessError(f"{what} must be some of {', '.join(known)} (comma-separated), "
                           f"not '{text}'")
    return names


def table_command(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.jobs < 1 or args.timeout <= 0:
        raise HarnessError("--repeat, --jobs and --timeout must be positive")
    sizes = parse_list(args.sizes, SIZES, "--sizes")
    wanted = parse_list(args.modes, SERVING, "--modes")
    bin_dir = locate_probes(args.build)
    modes = []
    for name in wanted:
        mode = resolve(name)
        if mode.missing:
            print(f"{name}: skipped ({mode.missing})", file=sys.stderr)
            continue
        check_serving(bin_dir, mode.env, SERVING[name], f"mode {name}")
        modes.append(mode)
    work = cases(list_probes(bin_dir), sizes)
    results = run_all(bin_dir, work, modes, args.timeout, args.jobs, args.repeat)
    print(report(work, [m.name for m in modes], results, "system", "hugeheap"))
    return 0


def parse_case(text: str, probes: Sequence[Probe]) -> Case:
    """FAMILY/PROBE[:SIZE] as a case, or HarnessError naming what is wrong."""
    where, _, size = text.partition(":")
    family, _, name = where.partition("/")
    probe = next((p for p in probes if p.family == family and p.name == name), None)
    if probe is None:
        raise HarnessError(f"no probe {where} (FAMILY/PROBE, as `hh-probe-FAMILY --list` "
                           f"names them)")
    if probe.sized != bool(size) or (size and size not in SIZES):
        raise HarnessError(f"{text}: probe {where} takes "
                           + (f"a size, one of {', '.join(SIZES)}" if probe.sized else "no size"))
    return Case(probe, size or None)


def expect_command(args: argparse.Namespace) -> int:
    env = {"LD_PRELOAD": str(args.library.resolve())}
    check_serving(args.bin, env, "hugeheap", str(args.library))
    probes = list_probes(args.bin)
    expected = [parse_case(text, probes) for text in args.cases]
    missed = 0
    for case in expected:
        outcome = run_case(args.bin, case, env, args.timeout)
        missed += not outcome.caught
        print(f"{case.label}: {'caught' if outcome.caught else 'NOT CAUGHT'} ({outcome.how}) "
              f"{outcome.message}")
    if missed:
        print(f"{missed} of {len(expected)} probes not caught with {args.library}")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds a probe may run (default 20)")
    sub = parser.add_subparsers(dest="command")
    parser.add_argument("--modes", default=",".join(DEFAULT_MODES))
    parser.add_argument("--sizes", default=",".join(DEFAULT_SIZES))
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of every probe (default 3); caught means caught every time")
    expect = sub.add_parser("expect", help="exit 1 unless every probe named is caught")
    expect.add_argument("--library", type=Path, required=True, help="the allocator to preload")
    expect.add_argument("--bin", type=Path, required=True, help="where the probes are")
    expect.add_argument("cases", nargs="+", metavar="FAMILY/PROBE[:SIZE]")
    args = parser.parse_args()
    # Probes crash on purpose: no core files.
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    try:
        return expect_command(args) if args.command == "expect" else table_command(args)
    except (HarnessError, OSError, subprocess.CalledProcessError) as error:
        print(f"security.py: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
