"""The tool's environment, built rather than inherited: the harness's own
without any variable that chooses or configures an allocator (the shell's
LD_PRELOAD, GLIBC_TUNABLES, MALLOC_*, ...), so that every mode, the baseline
first, gets exactly what it sets; and the record of what was done to it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .allocators import AllocatorMode

# Variables that choose or configure a program's allocator. The tool's
# environment starts without them, whatever the shell set; a mode, the
# suite or --env sets them again where wanted.
ALLOCATOR_VARIABLES = frozenset({"LD_PRELOAD", "LD_AUDIT", "GLIBC_TUNABLES", "GLIBC_THP_ALWAYS",
                                 "JE_MALLOC_CONF", "_RJEM_MALLOC_CONF"})
ALLOCATOR_PREFIXES = ("MALLOC_", "HUGEHEAP_", "MIMALLOC_", "TCMALLOC_", "JEMALLOC_")


def is_allocator_variable(name: str) -> bool:
    return name in ALLOCATOR_VARIABLES or name.startswith(ALLOCATOR_PREFIXES)


def tool_environment(own: Mapping[str, str], extra: Mapping[str, str],
                     alloc: AllocatorMode) -> tuple[dict[str, str], dict[str, Any]]:
    """The tool's environment: own (the harness's) without its allocator
    variables, then extra (--env, the suite's), then the mode's; and the
    record of it against own: {"set": what the tool got that own has not
    (or not so), "withheld": names of own's variables it did not get}."""
    env = {name: value for name, value in own.items() if not is_allocator_variable(name)}
    env.update(extra)
    env.update(alloc.env)
    return env, {"set": {k: v for k, v in sorted(env.items()) if own.get(k) != v},
                 "withheld": sorted(k for k in own if k not in env)}
