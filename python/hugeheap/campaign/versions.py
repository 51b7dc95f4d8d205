"""Versions of what a campaign measures with: the tools and allocator
libraries (from the Debian package that installed them, where one did), and
the machine they ran on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from .. import __version__
from ..measure import firsttouch, machine
from ..measure.allocators import REPO_ROOT
from ..measure.cgroups import usable_version
from .suite import Suite


def debian_package(path: str) -> dict[str, Any] | None:
    """{package, version} of the Debian package that installed path."""
    candidates = [path, os.path.realpath(path)]
    for candidate in dict.fromkeys(candidates):
        try:
            owner = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True,
                                   text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if owner.returncode != 0 or ":" not in owner.stdout:
            continue
        package = owner.stdout.split(":", 1)[0].split(",")[0].strip()
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                                 capture_output=True, text=True, timeout=10)
        return {"package": package, "version": version.stdout.strip() or "unknown"}
    return None


BUILT_REVISION = "REVISION"  # beside lib/: the commit the build linked the library from


def hugeheap_revision(library: str | None = None) -> str:
    """The commit the library was built from: the one its build wrote beside
    its lib/ folder (the CMake build's, or `make before`'s for an older
    revision built inside this checkout, whose own HEAD says nothing of it),
    else the commit of the checkout the library lies in (this one by
    default), where it is one."""
    if library:
        built = Path(library).resolve().parent.parent / BUILT_REVISION
        try:
            return f"{__version__} ({built.read_text().strip()})"
        except OSError:
            pass
    checkout = _checkout_of(Path(library)) if library else REPO_ROOT
    if checkout is None:
        return f"{__version__} (not built in a git checkout)"
    try:
        done = subprocess.run(["git", "-C", str(checkout), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return __version__
    return f"{__version__} ({done.stdout.strip()})" if done.returncode == 0 else __version__


def _checkout_of(path: Path) -> Path | None:
    """The git checkout a file lies in, if any."""
    for directory in path.resolve().parents:
        if (directory / ".git").exists():
            return directory
    return None


def describe_campaign_machine(suite: Suite) -> dict[str, Any]:
    """The machine (measure.machine's facts) with the versions of what the
    suite measures (its allocator libraries and tools) and what memory costs
    on it now (first touch of huge and small pages)."""
    info: dict[str, Any] = dict(machine.describe())
    info["first_touch"] = firsttouch.measure().as_record()
    info["thp"] = machine.thp_settings()
    info["cgroups"], reasons = usable_version()
    if info["cgroups"] is None:
        info["cgroups_problem"] = "; ".join(reasons)
    allocators: dict[str, Any] = {}
    for mode in suite.modes:
        entry: dict[str, Any] = {"like": mode.like, "library": mode.library,
                                 "environment": mode.env}
        package = debian_package(mode.library) if mode.library else None
        if package:
            entry.update(package)
        elif mode.is_hugeheap:
            entry["version"] = hugeheap_revision(mode.library)
        elif mode.library:
            entry["version"] = "not from a package"
        else:
            libc = machine.loaded_libc()
            entry.update((debian_package(libc) if libc else None)
                         or {"version": info.get("glibc")})
        allocators[mode.name] = entry
    info["allocators"] = allocators
    info["tools"] = {tool.name: {"program": tool.program, "command": " ".join(tool.argv),
                                 **(debian_package(tool.program)
                                    or {"version": "not from a Debian package"}),
                                 # the tool's own word, where its tool-info module reads it
                                 **({"version": tool.version} if tool.version else {})}
                     for tool in suite.tools}
    info["skipped_tools"] = dict(suite.skipped_tools)
    return info
