"""The allocator modes a suite's campaign runs: campaign.modes, or the list
`hugeheap bench --modes A,B,...` gives in its place; and the modes of a
suite's own ([allocators.NAME]) that such a list may name. Each is resolved
once, here (measure/allocators.py), and carried with every run; the first is
the baseline."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.allocators import MODES, AllocatorMode, derive, resolve
from .toml_checker import TomlChecker


def suite_modes(check: TomlChecker, campaign: dict[str, Any],
                own: Mapping[str, AllocatorMode], from_option: bool) -> list[AllocatorMode]:
    """The modes to run: campaign.modes, or the list --modes gave in its place
    (from_option: its mistakes are named as the option's, not the file's)."""
    modes = campaign.get("modes")

    def fail(problem: str, fix: str) -> HarnessError:
        if from_option:
            return HarnessError(f"--modes {','.join(modes or [])}: {problem}; {fix}")
        return check.fail(problem, fix, "campaign", "modes")

    if modes is None:
        raise check.fail("[campaign] names no allocator modes",
                         'add modes = ["system", "hugeheap"] (the first is the baseline)',
                         "campaign")
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
        raise check.fail("campaign.modes must be a list of mode names",
                         'write modes = ["system", "hugeheap"]', "campaign", "modes")
    known = MODES + sorted(own)
    resolved = []
    for mode in modes:
        if mode not in known:
            close = difflib.get_close_matches(mode, known, n=1)
            raise fail(f"unknown allocator mode '{mode}'",
                       f"did you mean '{close[0]}'?" if close else
                       f"known: {', '.join(known)}, or define it under [allocators.NAME]")
        if modes.count(mode) > 1:
            raise fail(f"mode '{mode}' is named twice", "name each mode once")
        found = own[mode] if mode in own else resolve(mode)
        if found.missing:
            raise fail(f"mode '{mode}' cannot run here: {found.missing}",
                       "or remove it from modes")
        resolved.append(found)
    return resolved


def own_modes(check: TomlChecker, table: dict[str, Any], directory: Path
              ) -> dict[str, AllocatorMode]:
    """[allocators.NAME]: a built-in mode with another library or more
    environment, e.g. a second build of hugeheap to compare with."""
    own: dict[str, AllocatorMode] = {}
    for name, values in table.items():
        where = f"allocators.{name}"
        if not isinstance(values, dict):
            raise check.fail(f"'{where}' must be a table", f"write it as [{where}]",
                             "allocators", name)
        if name in MODES:
            raise check.fail(f"'{name}' is a built-in mode", "give your mode another name",
                             where)
        check.known_keys(values, "allocator", where)
        like = check.string(values, "like", where, example="hugeheap")
        if like not in MODES:
            raise check.fail(f"{where}.like = '{like}' is not a built-in mode",
                             f"write one of {', '.join(MODES)}", where, "like")
        library = values.get("library")
        if library is not None and (not isinstance(library, str) or not library):
            raise check.fail(f"{where}.library must be a path", 'write library = "lib.so"',
                             where, "library")
        environment = values.get("environment", {})
        if not isinstance(environment, dict) or not all(
                isinstance(v, str) for v in environment.values()):
            raise check.fail(f"{where}.environment must be a table of strings",
                             'write environment = { HUGEHEAP_THP = "off" }', where,
                             "environment")
        try:
            own[name] = derive(name, like, directory / library if library else None,
                               environment)
        except HarnessError as error:
            # A mode the campaign does not run may lack its library (a build
            # of an earlier revision, made only to compare with): it is an
            # error where it is named among the modes.
            own[name] = AllocatorMode(name=name, like=like, missing=f"{where}: {error}")
    return own
