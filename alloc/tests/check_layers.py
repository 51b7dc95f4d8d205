#!/usr/bin/env python3
"""Keeps the layering of alloc/src: a file includes (with #include "...")
only headers of its own layer or of a layer below it, and every file of
alloc/src belongs to a layer. docs/DESIGN.md ("The files") says what each
layer is for; this list is the one the build checks.

    python3 alloc/tests/check_layers.py [SRC_DIR]

Exits 0 and prints one line when the layering holds, else 1 and one line
per file out of place."""

from __future__ import annotations

import re
import sys
from pathlib import Path

# Bottom to top. A file may include headers of its own layer and the ones
# before it.
LAYERS: list[tuple[str, list[str]]] = [
    ("types", ["types.h", "pthread_compat.h"]),
    ("declarations", ["internal.h"]),
    ("process state", ["state.c"]),
    ("system", ["os.c", "lock.c", "config.c", "granule.c", "meta.c", "stops.c", "counters.c"]),
    ("kinds", ["kind.h", "kind.c"]),
    ("memory", ["range.c", "pages.c", "release.c", "policy.c", "usage.c", "medium.c", "growth.c",
                "large.c", "pointer_kind.h"]),
    ("heaps", ["page_pop.h", "heap.c", "heap_life.c"]),
    ("process and API", ["init.c", "fastpath.h", "malloc_api.c", "cxx_api.c", "arena.c", "pool.c", "stats_report.c"]),
]
# The public header (alloc/include): below every layer.
PUBLIC = {"hugeheap.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def layer_of() -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, (_, files) in enumerate(LAYERS):
        for name in files:
            ranks[name] = rank
    return ranks


def problems(src: Path) -> list[str]:
    ranks = layer_of()
    found: list[str] = []
    present = sorted(p.name for p in src.iterdir() if p.suffix in (".c", ".h"))
    for name in sorted(set(ranks) - set(present)):
        found.append(f"{name}: listed in a layer but not in {src}: remove it from LAYERS")
    for name in present:
        if name not in ranks:
            found.append(f"{name}: in no layer: add it to LAYERS in {Path(__file__).name} "
                         "and to docs/DESIGN.md")
            continue
        rank = ranks[name]
        for included in INCLUDE.findall((src / name).read_text()):
            if included in PUBLIC:
                continue
            if included not in ranks:
                found.append(f"{name}: includes {included}, which is in no layer")
            elif ranks[included] > rank:
                found.append(f"{name} ({LAYERS[rank][0]}) includes {included} "
                             f"({LAYERS[ranks[included]][0]}), a layer above it")
    return found


def main(argv: list[str]) -> int:
    src = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "src"
    found = problems(src)
    for line in found:
        print(line)
    if found:
        return 1
    files = sum(len(names) for _, names in LAYERS)
    print(f"alloc/src layering holds: {files} files in {len(LAYERS)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
