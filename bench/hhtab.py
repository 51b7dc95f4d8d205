#!/usr/bin/env python3
"""hhtab's benchmarks on the tabling paper's eight path programs (left and
right recursion over BTree 17, Pyramid 1500, Cycle 2000, Grid 35), and on
programs of each kind of the tabling benchmark set SWI-Prolog's tabling is
measured with (`hhtab gen FAMILY N`).

    python3 bench/hhtab.py table1            # Table I from hhtab --json
    python3 bench/hhtab.py swipl [--repeat 3] [--rows ...]
    python3 bench/hhtab.py programs [--repeat 3] [--rows ...]
    python3 bench/hhtab.py threads [--repeat 3] [--rows ...] [--threads 2]
    python3 bench/hhtab.py memory [--rows ...]

swipl: hhtab against SWI-Prolog (`:- table path/2.`, aggregate_all(count,
path(_,_), N)), one thread, configurations interleaved in a shuffled order per
repetition, medians of the query's own time and of the process's wall, user
and system time and peak memory (from /usr/bin/time, not Python's rusage).
programs: the same for the benchmark set's kinds, each program's query
(its first line) counted by both.
threads: the paper's overhead ratios at 2 threads, T(2 threads) / T(1 thread,
ns), for ns/ss/fs x --alloc pool/malloc, first and second runs (--repeat 2),
and SWI-Prolog with shared tables and 2 threads.  memory: table bytes per
answer and the share of anonymous memory in huge pages.  Prints Markdown."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
from hugeheap.measure.allocators import derive, resolve  # noqa: E402
from hugeheap.measure.runner import run as run_measured  # noqa: E402

Row = tuple[str, str, int]
T = TypeVar("T")


@dataclass(frozen=True)
class Config:
    """hhtab's options and environment, or SWI-Prolog (options None) with
    swipl_threads threads (more than one: tables shared)."""
    options: tuple[str, ...] | None
    env: tuple[tuple[str, str], ...] = ()
    swipl_threads: int = 1


Runner = Callable[[Row, Config], dict[str, float]]

ROWS = [(rec, shape, n) for rec in ("left", "right")
        for shape, n in (("btree", 17), ("pyramid", 1500), ("cycle", 2000), ("grid", 35))]
# The benchmark set's kinds (hhtab gen FAMILY N), at sizes where SWI-Prolog
# takes a fraction of a second to seconds; the pyramid of the set is the
# path program's right recursion over Pyramid 500.
FAMILIES = [("fib", 30000), ("nrev", 1000), ("nrev", 2000), ("shuttle", 200000),
            ("pingpong", 200000), ("recognize", 200000), ("loop", 150), ("chain", 300),
            ("pyramid", 500), ("joins", 13), ("mondial", 3000)]
COUNT_GOAL = "aggregate_all(count, path(_,_), N)"
FOREIGN_LIMIT = 0.1
DISTURBED: list[float] = []


def row_name(row: Row) -> str:
    rec, shape, n = row
    return f"{rec.capitalize()} {shape.capitalize()} {n}"


def program(build: Path, row: Row) -> Path:
    rec, shape, n = row
    path = build / "hhtab-bench" / f"{shape}-{n}-{rec}.pl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(build / "bin" / "hhtab"), "gen", "path", shape, str(n),
                        "--recursion", rec, "-o", str(path)], check=True)
    return path


def hhtab_query(build: Path, row: Row, *options: str) -> list[str]:
    """hhtab running the row's query, its result as JSON."""
    return [str(build / "bin" / "hhtab"), "run", str(program(build, row)), "--query", "path(X,Y)",
            "--json", *options]


def shared_program(build: Path, row: Row) -> Path:
    """The same program for SWI-Prolog with tables shared between threads."""
    plain = program(build, row)
    path = plain.with_name(plain.stem + "-shared.pl")
    if not path.exists():
        path.write_text(plain.read_text().replace(":- table path/2.", ":- table path/2 as shared."))
    return path


def busy_cpu_seconds() -> float:
    """CPU time every process of the machine has used so far (/proc/stat)."""
    with open("/proc/stat") as stat:
        fields = [float(x) for x in stat.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[str, dict[str, float]]:
    """Runs cmd under /usr/bin/time: its stdout, and wall, user, sys seconds,
    peak resident memory in bytes, and `foreign`: the CPU time other
    processes used meanwhile, per second of wall time (running alone keeps
    builds and tests away, not everything)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as times:
        before = busy_cpu_seconds()
        out = subprocess.run(["/usr/bin/time", "-o", times.name, "-f", "%e %U %S %M", *cmd],
                             env={**os.environ, **(env or {})}, capture_output=True, text=True)
        busy = busy_cpu_seconds() - before
        if out.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr.strip()[-400:]}")
        wall, user, system, kb = times.read().split()[-4:]
    foreign = max(0.0, busy - float(user) - float(system)) / max(float(wall), 0.01)
    return out.stdout, {"wall": float(wall), "user": float(user), "sys": float(system),
                        "rss": float(kb) * 1024, "foreign": foreign}


def hhtab(build: Path, row: Row, *options: str,
          env: dict[str, str] | None = None) -> dict[str, float]:
    out, t = timed(hhtab_query(build, row, *options), env)
    r = json.loads(out)
    return {**t, "query": r["seconds"][0], "second": r["seconds"][-1], "answers": r["answers"],
            "table_bytes": r["table_bytes"], "unique": r["unique"], "pool_bytes": r["pool_bytes"]}


def swipl(build: Path, row: Row, threads: int = 1) -> dict[str, float]:
    """SWI-Prolog's query time (measured inside it, like hhtab's) and process."""
    work = COUNT_GOAL if threads == 1 else (
        f"findall(T, (between(1, {threads}, _), thread_create(({COUNT_GOAL}), T)), Ts), "
        "maplist(thread_join, Ts)")
    goal = (f"get_time(T0), {work}, get_time(T1), S is T1 - T0, "
            + ("write(N-S)" if threads == 1 else "write(0-S)") + ", nl")
    path = program(build, row) if threads == 1 else shared_program(build, row)
    out, t = timed(["swipl", "-g", goal, "-t", "halt", str(path)])
    answers, seconds = out.strip().splitlines()[-1].split("-")
    return {**t, "query": float(seconds), "answers": float(answers)}


def interleaved(configs: Mapping[str, Config], repeat: int, rows: list[Row],
                run: Runner) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Every (row, configuration) `repeat` times, configurations in a shuffled
    order within each row and repetition."""
    rng = random.Random(1)
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    for rep in range(repeat):
        for row in rows:
            names = list(configs)
            rng.shuffle(names)
            for name in names:
                # A run during which other processes took more than a tenth
                # of a core is run again (up to four times).
                for _attempt in range(5):
                    r = run(row, configs[name])
                    if r["foreign"] <= FOREIGN_LIMIT:
                        break
                    DISTURBED.append(r["foreign"])
                results.setdefault((row_name(row), name), []).append(r)
                print(f"  rep {rep + 1} {row_name(row)} {name}: query {r['query']:.3f} s, wall "
                      f"{r['wall']:.2f} s, others {r['foreign']:.2f} cores", file=sys.stderr,
                      flush=True)
    if DISTURBED:
        print(f"{len(DISTURBED)} runs were repeated because other processes took "
              f"{min(DISTURBED):.2f} to {max(DISTURBED):.2f} cores meanwhile.\n")
    kept = [r["foreign"] for rs in results.values() for r in rs]
    print(f"Other processes during the runs kept: at most {max(kept):.2f} cores "
          f"(median {statistics.median(kept):.2f}).\n")
    return results


def med(rs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rs)


def table1(build: Path, rows: list[Row]) -> None:
    print("| benchmark | calls | subgoal trie nodes | subgoal trie depth | unique | repeated | "
          "answer trie nodes | answer trie depth |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        out, _ = timed(hhtab_query(build, row, "--design", "ns"))
        r = json.loads(out)
        sd, ad = r["subgoal_trie_depth"], r["answer_trie_depth"]
        print(f"| {row_name(row)} | {r['calls']:,} | {r['subgoal_trie_nodes']:,} | "
              f"{sd[0]}/{sd[1]:.2f}/{sd[2]} | {r['unique']:,} | {r['repeated']:,} | "
              f"{r['answer_trie_nodes']:,} | {ad[0]}/{ad[1]:.2f}/{ad[2]} |", flush=True)


def family_program(build: Path, family: str, n: int) -> tuple[Path, str]:
    """A benchmark set kind's program and its query (the first line's)."""
    if family == "pyramid":
        path = program(build, ("right", "pyramid", n))
        return path, "path(X,Y)"
    path = build / "hhtab-bench" / f"{family}-{n}.pl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(build / "bin" / "hhtab"), "gen", family, str(n), "-o", str(path)],
                       check=True)
    with path.open() as text:
        first = text.readline()
    if not first.startswith("% query: "):
        raise SystemExit(f"{path}: the first line names no query")
    return path, first[len("% query: "):].strip()


# hhtab (THP on and off) against SWI-Prolog, one thread.
SWIPL_CONFIGS = {"hhtab": Config(("--design", "ns", "--alloc", "pool")),
                 "hhtab, THP off": Config(("--design", "ns", "--alloc", "pool"),
                                          (("HUGEHEAP_THP", "off"),)),
                 "swipl": Config(None)}


def print_against_swipl(results: dict[tuple[str, str], list[dict[str, float]]],
                        labels: dict[str, str], repeat: int) -> None:
    """The table of a swipl comparison, a row per label (row name -> label),
    after checking that both count the same answers."""
    print(f"Medians of {repeat}; query: the query's own time (program loaded); wall, user, sys: "
          "the whole process; peak: its largest resident memory.\n")
    print("| benchmark | answers | swipl query s | hhtab query s (speed-up) | hhtab, THP off, "
          "query s (speed-up) | swipl wall / user / sys s | hhtab wall / user / sys s | hhtab, "
          "THP off, wall / user / sys s | peak MiB: swipl, hhtab, THP off |")
    print("|---|---|---|---|---|---|---|---|---|")

    def process(rs: list[dict[str, float]]) -> str:
        return f"{med(rs, 'wall'):.2f} / {med(rs, 'user'):.2f} / {med(rs, 'sys'):.2f}"

    for name, label in labels.items():
        h, off, s = (results[(name, config)] for config in SWIPL_CONFIGS)
        if len({r["answers"] for r in h + off + s}) != 1:
            raise SystemExit(f"{label}: hhtab and swipl count different answers")
        sq = med(s, "query")
        print(f"| {label} | {int(s[0]['answers']):,} | {sq:.3g} | {med(h, 'query'):.3g} "
              f"({sq / med(h, 'query'):.2f}) | {med(off, 'query'):.3g} "
              f"({sq / med(off, 'query'):.2f}) | {process(s)} | {process(h)} | {process(off)} | "
              f"{med(s, 'rss') / 2**20:.0f}, {med(h, 'rss') / 2**20:.0f}, "
              f"{med(off, 'rss') / 2**20:.0f} |", flush=True)


def against_swipl_programs(build: Path, families: list[tuple[str, int]], repeat: int) -> None:
    rows: list[Row] = [(family, family, n) for family, n in families]

    def run(row: Row, config: Config) -> dict[str, float]:
        path, goal = family_program(build, row[0], row[2])
        if config.options is None:
            out, t = timed(["swipl", "-g", f"get_time(T0), aggregate_all(count, ({goal}), N), "
                            "get_time(T1), S is T1 - T0, write(N-S), nl", "-t", "halt",
                            str(path)])
            answers, seconds = out.strip().splitlines()[-1].split("-")
            return {**t, "query": float(seconds), "answers": float(answers)}
        out, t = timed([str(build / "bin" / "hhtab"), "run", str(path), "--query", goal,
                        "--json", *config.options], dict(config.env))
        r = json.loads(out)
        return {**t, "query": r["seconds"][0], "answers": r["answers"]}

    results = interleaved(SWIPL_CONFIGS, repeat, rows, run)
    print_against_swipl(results, {row_name(row): f"{row[0]} {row[2]}" for row in rows}, repeat)


def against_swipl(build: Path, rows: list[Row], repeat: int) -> None:
    def run(row: Row, config: Config) -> dict[str, float]:
        if config.options is None:
            return swipl(build, row)
        return hhtab(build, row, *config.options, env=dict(config.env))

    results = interleaved(SWIPL_CONFIGS, repeat, rows, run)
    print_against_swipl(results, {row_name(row): row_name(row) for row in rows}, repeat)


def overheads(build: Path, rows: list[Row], repeat: int, threads: int) -> None:
    configs = {"base": Config(("--design", "ns", "--alloc", "malloc"))}
    for design in ("ns", "ss", "fs"):
        for alloc in ("pool", "malloc"):
            configs[f"{design} {alloc}"] = Config(("--design", design, "--alloc", alloc,
                                                   "--threads", str(threads)))
    configs["fs pool, 1 thread"] = Config(("--design", "fs", "--alloc", "pool"))
    configs["swipl"] = Config(None)
    configs["swipl shared"] = Config(None, swipl_threads=threads)

    def run(row: Row, config: Config) -> dict[str, float]:
        if config.options is None:
            return swipl(build, row, threads=config.swipl_threads)
        return hhtab(build, row, *config.options, "--repeat", "2")

    results = interleaved(configs, repeat, rows, run)
    names = [n for n in configs if n not in ("base", "swipl", "swipl shared")]
    print(f"T({threads} threads) / T(1 thread, ns, --alloc malloc), medians of {repeat}; first "
          "runs (second runs in parentheses: the same process, tables abolished in between).\n")
    print("| benchmark | base s | " + " | ".join(names) + f" | swipl shared, {threads} threads "
          "/ swipl 1 thread |")
    print("|---|---|" + "---|" * (len(names) + 1))
    for row in rows:
        base = results[(row_name(row), "base")]
        b1, b2 = med(base, "query"), med(base, "second")
        cells = [f"{med(results[(row_name(row), n)], 'query') / b1:.2f} "
                 f"({med(results[(row_name(row), n)], 'second') / b2:.2f})" for n in names]
        sw1, swn = results[(row_name(row), "swipl")], results[(row_name(row), "swipl shared")]
        print(f"| {row_name(row)} | {b1:.2f} ({b2:.2f}) | " + " | ".join(cells) +
              f" | {med(swn, 'query') / med(sw1, 'query'):.2f} ({med(swn, 'query'):.2f} s) |")


def memory(build: Path, rows: list[Row]) -> None:
    malloc = ("--alloc", "malloc")
    configs = [("pool", (), resolve("system")), ("malloc, glibc", malloc, resolve("system")),
               ("malloc, glibc-thp", malloc, resolve("glibc-thp")),
               ("malloc, hugeheap", malloc,
                derive("hugeheap", "hugeheap", build.resolve() / "lib" / "libhugeheap.so"))]
    print("Table bytes per unique answer (as counted by hhtab), peak RSS and the largest share "
          "of anonymous memory in huge pages seen while it ran (hugeheap's runner); 1 thread, "
          "ns.\n")
    print("| benchmark | " + " | ".join(f"{name}: bytes/answer, peak MiB, huge share"
                                       for name, _, _ in configs) + " |")
    print("|---|" + "---|" * len(configs))
    for row in rows:
        cells = []
        for name, options, alloc in configs:
            with tempfile.TemporaryFile("w+b") as out:
                m = run_measured(hhtab_query(build, row, "--design", "ns", *options),
                                 alloc=alloc, tool_stdout=out, measure_tlb=False)
                if m.status != "ok":
                    raise SystemExit(f"{row_name(row)}, {name}: hhtab ended {m.status}")
                out.seek(0)
                r = json.loads(out.read())
            share = "-" if m.huge_share is None else f"{m.huge_share:.2f}"
            cells.append(f"{r['table_bytes'] / r['unique']:.1f}, "
                         f"{r['peak_rss_bytes'] / 2**20:.0f}, {share}")
        print(f"| {row_name(row)} | " + " | ".join(cells) + " |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("section", choices=["table1", "swipl", "programs", "threads", "memory"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2, help="threads: each run's threads")
    parser.add_argument("--rows", help="comma-separated, e.g. left-cycle,right-grid or (programs) "
                        "fib-30000,nrev-1000 (default all)")
    parser.add_argument("--build", type=Path, default=ROOT / "build")
    args = parser.parse_args()
    def chosen(items: list[T], name: Callable[[T], str], example: str) -> list[T]:
        """The items --rows names (all without it)."""
        if not args.rows:
            return items
        wanted = set(args.rows.split(","))
        kept = [item for item in items if name(item) in wanted]
        if len(kept) != len(wanted):
            parser.error(f"--rows: not all of {sorted(wanted)} are {example}")
        return kept

    if args.section == "programs":
        families = chosen(FAMILIES, lambda f: f"{f[0]}-{f[1]}", "programs such as nrev-1000")
        if shutil.which("swipl") is None:
            parser.error("swipl is not installed (Debian package swi-prolog-core)")
        against_swipl_programs(args.build, families, args.repeat)
        return 0
    rows = chosen(ROWS, lambda r: f"{r[0]}-{r[1]}", "rows such as left-btree")
    if args.section in ("swipl", "threads") and shutil.which("swipl") is None:
        parser.error("swipl is not installed (Debian package swi-prolog-core)")
    if args.section == "table1":
        table1(args.build, rows)
    elif args.section == "swipl":
        against_swipl(args.build, rows, args.repeat)
    elif args.section == "threads":
        overheads(args.build, rows, args.repeat, args.threads)
    else:
        memory(args.build, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
