"""Checking a TOML file a person wrote (a suite): each mistake is one
HarnessError, `FILE:LINE: problem; fix`, pointing at the line of the key or
table where it is. tomllib keeps no positions, so the lines are found again
in the text. What the file may hold (the keys of each kind of table) is the
caller's: this module knows no suite."""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError


def unknown_key(values: Mapping[str, object], allowed: Collection[str]
                ) -> tuple[str, str] | None:
    """The first key of values that is not allowed, with the fix to name (the
    allowed key closest to it, else all of them); None where all are."""
    for key in values:
        if key not in allowed:
            close = difflib.get_close_matches(key, sorted(allowed), n=1)
            return key, (f"did you mean '{close[0]}'?" if close
                         else f"the keys allowed there are: {', '.join(sorted(allowed))}")
    return None


class _Locator:
    """Lines of tables and keys in the TOML text, for error messages."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-\"'.]+)\s*=")

    def __init__(self, text: str) -> None:
        self.entries: list[tuple[str, int, str | None, int]] = []  # table, index, key, line
        table, counts = "", {}  # type: str, dict[str, int]
        index = 0
        for number, line in enumerate(text.splitlines(), 1):
            header = self._HEADER.match(line)
            if header:
                table = header.group(2).replace('"', "").replace("'", "")
                index = counts.get(table, 0)
                counts[table] = index + 1
                self.entries.append((table, index, None, number))
                continue
            key = self._KEY.match(line)
            if key:
                full = key.group(1).replace('"', "").replace("'", "")
                *prefix, last = full.split(".")
                where = ".".join([table, *prefix]) if table else ".".join(prefix)
                self.entries.append((where, index, last, number))

    def line(self, table: str, key: str | None = None, index: int = 0) -> int | None:
        for where, position, name, number in self.entries:
            if where == table and name == key and position == index:
                return number
        if key is not None:  # the key is missing: point at its table
            return self.line(table, None, index)
        return None


class TomlChecker:
    """The checks of one file. keys: the keys each kind of table may hold
    ("" the top level). A table is named as written ("tools.minisat"); index
    counts the arrays of tables ([[instances.generate]]) of one name."""

    def __init__(self, path: Path, text: str, keys: Mapping[str, Collection[str]]) -> None:
        self.path, self.keys, self._locate = path, keys, _Locator(text)

    def where(self, table: str = "", key: str | None = None, index: int = 0) -> str:
        """FILE:LINE of a key or table, FILE alone where it has no line."""
        line = self._locate.line(table, key, index) if (table or key) else None
        return f"{self.path}:{line}" if line else str(self.path)

    def fail(self, problem: str, fix: str, table: str = "", key: str | None = None,
             index: int = 0) -> HarnessError:
        return HarnessError(f"{self.where(table, key, index)}: {problem}; {fix}")

    def known_keys(self, values: dict[str, Any], kind: str, table: str, index: int = 0) -> None:
        unknown = unknown_key(values, self.keys[kind])
        if unknown is not None:
            key, fix = unknown
            place = f"[{table}]" if table else "the top level"
            raise self.fail(f"unknown key '{key}' in {place}", fix, table, key, index)

    def table(self, values: dict[str, Any], key: str, parent: str = "") -> dict[str, Any]:
        value = values.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"'{key}' must be a table", f"write it as [{key}]", parent, key)
        return value

    def array(self, values: dict[str, Any], key: str, table: str, item: type,
              problem: str, fix: str) -> list[Any]:
        """values[key] as a list of items of the type item (one given alone
        is a list of one; none given, an empty list); fail(problem, fix) at
        the key otherwise."""
        value = values.get(key, [])
        if isinstance(value, item):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, item) for v in value):
            raise self.fail(problem, fix, table, key)
        return value

    def whole_number(self, values: dict[str, Any], key: str, table: str, default: int,
                     minimum: int = 1) -> int:
        value = values.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(f"{table}.{key} = {value!r} is not a whole number of at least "
                            f"{minimum}", f"write e.g. {key} = {max(minimum, default)}",
                            table, key)
        return value

    def string(self, values: dict[str, Any], key: str, table: str, index: int = 0,
               example: str = "...") -> str:
        if key not in values:
            raise self.fail(f"[{table}] has no '{key}'", f'add {key} = "{example}"', table,
                            None, index)
        value = values[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{table}.{key} must be a non-empty string",
                            f'write {key} = "{example}"', table, key, index)
        return value
