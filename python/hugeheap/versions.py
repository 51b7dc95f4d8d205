"""Versions of what a campaign measures with: the tools and allocator
libraries (from the Debian package that installed them, where one did), and
the machine they ran on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from . import __version__, machine
from .allocators import REPO_ROOT, resolve
from .cgroups import usable_version
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


def hugeheap_revision() -> str:
    """This checkout's commit, where it is one."""
    try:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return __version__
    return f"{__version__} ({done.stdout.strip()})" if done.returncode == 0 else __version__


def describe_campaign_machine(suite: Suite) -> dict[str, Any]:
    info: dict[str, Any] = dict(machine.describe())
    info["thp"] = machine.thp_settings()
    info["cgroups"], reasons = usable_version()
    if info["cgroups"] is None:
        info["cgroups_problem"] = "; ".join(reasons)
    allocators: dict[str, Any] = {}
    for name in suite.modes:
        mode = resolve(name)
        entry: dict[str, Any] = {"library": mode.library, "environment": mode.env}
        if name.startswith("hugeheap"):
            entry["version"] = hugeheap_revision()
        elif mode.library:
            entry.update(debian_package(mode.library) or {"version": "not from a package"})
        else:
            libc = _loaded_libc()
            entry.update((debian_package(libc) if libc else None)
                         or {"version": info.get("glibc")})
        allocators[name] = entry
    info["allocators"] = allocators
    info["tools"] = {tool.name: {"program": tool.program, "command": " ".join(tool.argv),
                                 **(debian_package(tool.program)
                                    or {"version": "not from a Debian package"})}
                     for tool in suite.tools}
    info["skipped_tools"] = dict(suite.skipped_tools)
    info["memory_bytes"] = _memory_total()
    return info


def _loaded_libc() -> str | None:
    """The C library this process (and so the system allocator) came from."""
    try:
        for line in Path("/proc/self/maps").read_text().splitlines():
            path = line.split()[-1]
            if path.endswith("/libc.so.6"):
                return path
    except OSError:
        pass
    return None


def _memory_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None
