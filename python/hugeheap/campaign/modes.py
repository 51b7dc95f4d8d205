"""The allocator modes a campaign runs, named in a list: a suite's
campaign.modes, or `--modes A,B,...` (`hugeheap bench`, `hugeheap compare`),
parsed here alone; and the modes of a suite's own ([allocators.NAME]) that
such a list may name. Each is resolved once, here (measure/allocators.py), and
carried with every run; the first is the baseline."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import HarnessError
from ..measure.allocators import MODES, AllocatorMode, derive, resolve
from ..measure.units import parse_names
from .toml_checker import TomlChecker

# Makes the error of a problem and its fix, naming where the list was given.
Fail = Callable[[str, str], HarnessError]


def resolve_modes(names: list[str], own: Mapping[str, AllocatorMode] | None,
                  fail: Fail) -> list[AllocatorMode]:
    """The modes names names, in its order: built-in ones, or those of own
    (a suite's [allocators.NAME]; None where there is no suite to define
    them in). fail(problem, fix) for a name that is no mode, a name given
    twice, or a mode that cannot run here."""
    known = MODES + sorted(own or {})
    resolved = []
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            raise fail(f"unknown allocator mode '{name}'",
                       f"did you mean '{close[0]}'?" if close else
                       f"known: {', '.join(known)}"
                       + (", or define it under [allocators.NAME]" if own is not None else ""))
        if names.count(name) > 1:
            raise fail(f"mode '{name}' is named twice", "name each mode once")
        found = own[name] if own and name in own else resolve(name)
        if found.missing:
            raise fail(f"mode '{name}' cannot run here: {found.missing}",
                       "or remove it from modes")
        resolved.append(found)
    return resolved


def parse_modes_option(option: str, own: Mapping[str, AllocatorMode] | None = None,
                       at_least: int = 1) -> list[AllocatorMode]:
    """`--modes A,B,...`, resolved (resolve_modes); its mistakes are named as
    the option's. at_least: how many modes the command needs."""
    names = parse_names(option)

    def fail(problem: str, fix: str) -> HarnessError:
        return HarnessError(f"--modes {option}: {problem}; {fix}")

    if len(names) < at_least:
        wanted = "a mode" if at_least == 1 else f"{at_least} modes"
        raise fail(f"name {wanted} or more", "separate them by commas, e.g. --modes "
                   "system,hugeheap")
    return resolve_modes(names, own, fail)


def suite_modes(check: TomlChecker, campaign: dict[str, Any],
                own: Mapping[str, AllocatorMode]) -> list[AllocatorMode]:
    """A suite's campaign.modes, resolved (resolve_modes)."""
    modes = campaign.get("modes")
    if modes is None:
        raise check.fail("[campaign] names no allocator modes",
                         'add modes = ["system", "hugeheap"] (the first is the baseline)',
                         "campaign")
    if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
        raise check.fail("campaign.modes must be a list of mode names",
                         'write modes = ["system", "hugeheap"]', "campaign", "modes")
    return resolve_modes(modes, own,
                         lambda problem, fix: check.fail(problem, fix, "campaign", "modes"))


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
