"""results.sqlite of a campaign: one row per finished run, each committed in a
transaction of its own as the run ends (WAL mode), so a harness killed at any
moment leaves every finished run and no half-written one."""

from __future__ import annotations

import sqlite3
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from ..errors import HarnessError

SCHEMA_VERSION = "2"
# Columns a schema added, for reading and upgrading older campaigns: schema 2
# keeps the value an answer claims (an optimum's cost, the states stored).
_ADDED = {"2": ["answer_value"]}


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
    output: str | None  # the compressed output, relative to the campaign directory

    @property
    def key(self) -> tuple[str, str, str, int]:
        return self.tool, self.instance, self.mode, self.repetition


_COLUMNS = [f.name for f in fields(RunRecord)]
_TYPES = {"repetition": "INTEGER NOT NULL", "exit_code": "INTEGER", "signal": "INTEGER",
          "memory_peak": "INTEGER", "tlb_misses": "INTEGER", "reliable": "INTEGER NOT NULL",
          "walltime": "REAL NOT NULL", "cputime": "REAL", "cputime_user": "REAL",
          "cputime_system": "REAL", "huge_share": "REAL"}
_NOT_NULL = {"tool", "instance", "mode", "status", "verdict", "warnings", "cores", "start_time"}


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
            if version == "1" and not readonly:
                self._upgrade_from_1()
                version = SCHEMA_VERSION
        except sqlite3.DatabaseError as error:
            raise HarnessError(f"{path}: not a campaign database ({error})") from None
        self.missing_columns = set(_ADDED["2"]) if version == "1" else set()
        if version not in (SCHEMA_VERSION, "1"):
            raise HarnessError(f"{path}: written by another version of hugeheap (schema "
                               f"{version}, this one reads 1 and {SCHEMA_VERSION})")

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

    def _upgrade_from_1(self) -> None:
        with self.db:
            self.db.execute("BEGIN")
            for column in _ADDED["2"]:
                self.db.execute(f"ALTER TABLE runs ADD COLUMN {column} TEXT")
            self.db.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (SCHEMA_VERSION,))

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

    def finished(self) -> set[tuple[str, str, str, int]]:
        rows = self.db.execute("SELECT tool, instance, mode, repetition FROM runs")
        return {(t, i, m, int(r)) for t, i, m, r in rows}

    def runs(self) -> list[RunRecord]:
        # A campaign of an older schema, read only: its runs claimed no values.
        columns = [f"NULL AS {c}" if c in self.missing_columns else c for c in _COLUMNS]
        rows = self.db.execute(f"SELECT {', '.join(columns)} FROM runs "
                               "ORDER BY tool, instance, mode, repetition")
        records = []
        for row in rows:
            record = RunRecord(*row)
            record.reliable = bool(record.reliable)
            records.append(record)
        return records

    def close(self) -> None:
        self.db.close()

