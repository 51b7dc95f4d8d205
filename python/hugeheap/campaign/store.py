"""results.sqlite of a campaign: one row per finished run, each committed in a
transaction of its own as the run ends (WAL mode), so a harness killed at any
moment leaves every finished run and no half-written one. Only the command
that runs the campaign writes it: a cluster's tasks write files of their own
that it merges (SQLite over a network filesystem is not safe)."""

from __future__ import annotations

import sqlite3
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from ..errors import HarnessError

SCHEMA_VERSION = "7"
READABLE_VERSIONS = ("1", "2", "3", "4", "5", "6", SCHEMA_VERSION)

RunKey = tuple[str, str, str, int]  # tool, instance, mode, repetition


@dataclass
class RunRecord:
    tool: str
    instance: str
    mode: str
    repetition: int
    status: str  # ok, timeout, memout, signal, error (as hugeheap run says)
    termination_reason: str | None
    verdict: str  # the adapter's answer: sat, unsat, unknown, done, error, wrong, ...
    verdict_detail: str | None
    answer_value: str | None  # what every run on the instance must agree on, if anything
    exit_code: int | None
    signal: int | None
    cputime: float | None
    cputime_user: float | None
    cputime_system: float | None
    walltime: float
    memory_peak: int | None
    huge_share: float | None
    tlb_misses: int | None
    tlb_reason: str | None
    reliable: bool
    warnings: str  # JSON list
    cores: str
    start_time: str
    output: str | None  # the compressed output, relative to the campaign's outputs/
    # JSON: {"host", "facts": measure.machine.node_facts(), and where the
    # executor placed the run, e.g. "slurm": {...}}; None in campaigns stored
    # before hugeheap recorded it
    node: str | None = None
    # JSON: what the harness did to the tool's environment, {"set": {name:
    # value}, "withheld": [name]} (measure.environment.tool_environment); None in
    # campaigns stored before hugeheap recorded it
    environment: str | None = None
    # JSON: where a BenchExec tool-info module read the answer
    # (answers/toolinfo.py), BenchExec's status, category, score and max_score,
    # the expected verdict, the property and its file, the task and its input
    # files; None for other runs and in campaigns stored before
    benchexec: str | None = None
    # JSON: the figures the tool measured of itself, by name (the adapter's
    # metrics: answers/adapters.py); None where it gave none, and in
    # campaigns stored before
    metrics: str | None = None
    # seconds the host of a virtual machine gave the run's CPUs to other work
    # while it ran (measure.runner.RunResult.steal_time_s); None where the
    # kernel does not count it, and in campaigns stored before
    steal_time: float | None = None
    # bytes: for a run holding pages of the hugetlb pool, the least its true
    # peak can be (memory_peak, memory's and the pool's peaks added, run-long
    # or memory's per interval between samples, is the most;
    # measure.runner.RunResult.memory_peak_lower_bytes); None for other
    # runs, and in campaigns stored before
    memory_peak_lower: int | None = None

    @property
    def key(self) -> RunKey:
        return self.tool, self.instance, self.mode, self.repetition


_COLUMNS = [f.name for f in fields(RunRecord)]
_TYPES = {"repetition": "INTEGER NOT NULL", "exit_code": "INTEGER", "signal": "INTEGER",
          "memory_peak": "INTEGER", "tlb_misses": "INTEGER", "reliable": "INTEGER NOT NULL",
          "walltime": "REAL NOT NULL", "cputime": "REAL", "cputime_user": "REAL",
          "cputime_system": "REAL", "huge_share": "REAL", "steal_time": "REAL",
          "memory_peak_lower": "INTEGER"}
_NOT_NULL = {"tool", "instance", "mode", "status", "verdict", "warnings", "cores", "start_time"}
# Columns later versions added, each nullable: an older store gains them when
# it is opened to write (and becomes the current schema), and reads them as
# NULL when only read. answer_value (schema 2): the value an answer claims (an
# optimum's cost, the states stored); node: where the run ran; environment
# (schema 3): what the harness did to the tool's environment; benchexec
# (schema 4): what BenchExec made of the answer; metrics (schema 5): what the
# tool measured of itself; steal_time (schema 6): the host's other work on the
# run's CPUs; memory_peak_lower (schema 7): the least a pool run's peak can be.
LATER_COLUMNS = ["answer_value", "node", "environment", "benchexec", "metrics", "steal_time",
                 "memory_peak_lower"]


class Store:
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        if readonly and not path.exists():
            raise HarnessError(f"{path.parent}: no campaign here (no {path.name}); run "
                               "`hugeheap bench SUITE --out DIR` first")
        try:
            uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
            self.db = sqlite3.connect(uri, uri=True, isolation_level=None)
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                # A commit survives the harness being killed; only power loss may
                # lose the last ones, and those runs are then simply run again.
                self.db.execute("PRAGMA synchronous=NORMAL")
                self._create()
            version = self.meta("schema")
            present = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
        except sqlite3.DatabaseError as error:
            raise HarnessError(f"{path}: not a campaign database ({error})") from None
        if version not in READABLE_VERSIONS:
            raise HarnessError(f"{path}: written by another version of hugeheap (schema "
                               f"{version}, this one reads {', '.join(READABLE_VERSIONS)})")
        self.missing_columns = set(_COLUMNS) - present
        self._selected = ", ".join(f"NULL AS {c}" if c in self.missing_columns else c
                                   for c in _COLUMNS)

    def _create(self) -> None:
        columns = ", ".join(
            f"{name} {_TYPES.get(name, 'TEXT NOT NULL' if name in _NOT_NULL else 'TEXT')}"
            for name in _COLUMNS)
        with self.db:
            self.db.execute("BEGIN")
            self.db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, "
                            "value TEXT NOT NULL)")
            self.db.execute(f"CREATE TABLE IF NOT EXISTS runs ({columns}, "
                            "PRIMARY KEY (tool, instance, mode, repetition))")
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            present = {row[1] for row in self.db.execute("PRAGMA table_info(runs)")}
            for name in LATER_COLUMNS:
                if name not in present:
                    self.db.execute(f"ALTER TABLE runs ADD COLUMN {name} "
                                    f"{_TYPES.get(name, 'TEXT')}")
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'schema' AND value IN "
                            f"({', '.join('?' for _ in READABLE_VERSIONS)})",
                            (SCHEMA_VERSION, *READABLE_VERSIONS))

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def add(self, record: RunRecord) -> None:
        """One run, in one transaction of its own."""
        placeholders = ", ".join("?" for _ in _COLUMNS)
        self.db.execute(f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES ({placeholders})",
                        astuple(record))

    def add_many(self, records: list[RunRecord]) -> None:
        placeholders = ", ".join("?" for _ in _COLUMNS)
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany(f"INSERT INTO runs ({', '.join(_COLUMNS)}) VALUES "
                                f"({placeholders})", [astuple(r) for r in records])

    def finished(self) -> set[RunKey]:
        rows = self.db.execute("SELECT tool, instance, mode, repetition FROM runs")
        return {(t, i, m, int(r)) for t, i, m, r in rows}

    def block_nodes(self, tool: str, instance: str, repetition: int) -> list[str | None]:
        """The node of every stored run of one block (all modes of one tool,
        instance and repetition)."""
        rows = self.db.execute("SELECT node FROM runs WHERE tool = ? AND instance = ? AND "
                               "repetition = ?", (tool, instance, repetition))
        return [node for (node,) in rows]

    def runs(self) -> list[RunRecord]:
        rows = self.db.execute(f"SELECT {self._selected} FROM runs "
                               "ORDER BY tool, instance, mode, repetition")
        records = []
        for row in rows:
            record = RunRecord(*row)
            record.reliable = bool(record.reliable)
            records.append(record)
        return records

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

