#!/usr/bin/env python3
"""Keeps the layering of alloc/src, where code includes and where it calls.

- Includes: a file includes (with #include "...") only headers of its own
  layer or of a layer below it, and every file of alloc/src belongs to a
  layer.
- Calls: given the library's object files, `nm` says which symbols each
  defines and which it uses; a file may use (call, read or write) only what
  a file of its own layer or of a layer below defines.  The inline code of a
  header is compiled into the files that include it, so its calls are
  checked there too, and once more by name in the header's own text.  The
  few loops the allocator needs are named in ALLOWED_LOOPS with their reason;
  any other call up a layer fails.

docs/DESIGN.md ("The files") says what each layer is for; this list is the
one the build checks.

    python3 alloc/tests/check_layers.py [SRC_DIR] [--nm NM] [--objects OBJ...]
                                        [--nm-output FILE]

--objects: the object files of one build of the library (ctest passes
hugeheap_named's); --nm-output: the output of `nm -A` over them, read from a
file instead (the self-test feeds it a made-up one).  Without either only
the includes are checked.  Exits 0 and prints one line when the layering
holds, else 1 and one line per use out of place."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

# Bottom to top. A file may include headers of, and use symbols defined by,
# its own layer and the ones before it.
LAYERS: list[tuple[str, list[str]]] = [
    ("types", ["types.h", "pthread_compat.h"]),
    ("declarations", ["internal.h"]),
    ("process state", ["state.c"]),
    ("system", ["os.c", "lock.c", "config.c", "stops.c", "granule.c", "meta.c", "counters.c"]),
    ("kinds", ["kind.h", "kind.c"]),
    ("memory", ["range.c", "pages.c", "release.c", "policy.c", "usage.c", "medium.c", "growth.c",
                "large.c", "api_memory.c", "glibc_heap.c", "pointer_kind.h"]),
    ("heaps", ["block_page.h", "page_pop.h", "heap.c", "heap_life.c"]),
    ("process and API", ["init.c", "fastpath.h", "malloc_api.c", "cxx_api.c", "arena.c", "pool.c",
                         "stats_report.c"]),
]
# The public header (alloc/include): below every layer.
PUBLIC = {"hugeheap.h"}

# The calls up a layer the allocator is built on, each a callback from below
# to a top that the bottom cannot do without (as mimalloc's internal.h names
# its callbacks): (caller file, symbol, why).
ALLOWED_LOOPS: list[tuple[str, str, str]] = [
    ("counters.c", "_hh_stats_peak_reached_locked",
     "the memory held reached a new peak: the report's breakdown of it (which walks every "
     "layer) is taken at that moment, since afterwards the peak is gone"),
    ("heap_life.c", "_hh_init",
     "a thread's first heap may be the process's first allocation (malloc's fast path runs "
     "on the empty heap until then): start-up runs from there"),
    ("heap_life.c", "_hh_late_init",
     "the first heap made is the moment to register the fork handlers and the thread key, "
     "which may allocate and so cannot run inside the first malloc's start-up"),
]

# internal.h declares every file's functions; its names are not uses (what
# its inline helpers use is checked in the objects that use them).
DECLARATIONS = {"internal.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
INTERNAL_NAME = re.compile(r"\b_hh_\w+\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
# nm -A: "path/name.c.o:0000000000000010 T symbol" or "path/name.c.o:  U symbol".
NM_LINE = re.compile(r"^(?:.*/)?([^/:]+?)\.o:\s*(?:[0-9a-fA-F]+\s+)?([A-Za-z?])\s+(\S+)$")


def layer_of() -> dict[str, int]:
    ranks: dict[str, int] = {}
    for rank, (_, files) in enumerate(LAYERS):
        for name in files:
            ranks[name] = rank
    return ranks


def describe(name: str, ranks: dict[str, int]) -> str:
    return f"{name} ({LAYERS[ranks[name]][0]})"


def include_problems(src: Path) -> list[str]:
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
        for included in INCLUDE.findall((src / name).read_text()):
            if included in PUBLIC:
                continue
            if included not in ranks:
                found.append(f"{name}: includes {included}, which is in no layer")
            elif ranks[included] > ranks[name]:
                found.append(f"{describe(name, ranks)} includes {describe(included, ranks)}, "
                             "a layer above it")
    return found


def parse_nm(lines: list[str]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Which file defines each global symbol, and which symbols each file
    uses but does not define.  Local symbols (statics) stay in their file."""
    defined: dict[str, str] = {}
    used: dict[str, set[str]] = {}
    for line in lines:
        match = NM_LINE.match(line.strip())
        if match is None:
            continue
        source, kind, symbol = match.groups()
        if kind == "U":
            used.setdefault(source, set()).add(symbol)
        elif kind.isupper():
            defined[symbol] = source
    return defined, used


def call_problems(nm_lines: list[str], src: Path | None,
                  loops: list[tuple[str, str, str]] = ALLOWED_LOOPS) -> list[str]:
    ranks = layer_of()
    defined, used = parse_nm(nm_lines)
    allowed = {(caller, symbol) for caller, symbol, _ in loops}
    uses = [(user, symbol) for user, symbols in used.items() for symbol in symbols]
    if src is not None:  # the names a header's text uses, its inline code's calls among them
        for header in sorted(src.glob("*.h")):
            if header.name in DECLARATIONS:
                continue
            text = COMMENT.sub("", header.read_text())
            uses += [(header.name, symbol) for symbol in set(INTERNAL_NAME.findall(text))]
    found: set[str] = set()
    for user, symbol in uses:
        owner = defined.get(symbol)
        if owner is None or owner == user or (user, symbol) in allowed:
            continue
        if user not in ranks or owner not in ranks:
            found.add(f"{user} uses {symbol} of {owner}: a file in no layer")
        elif ranks[owner] > ranks[user]:
            found.add(f"{describe(user, ranks)} uses {symbol} of {describe(owner, ranks)}, "
                      "a layer above it (move it, or name the loop in ALLOWED_LOOPS)")
    for caller, symbol, _ in loops:
        if symbol not in used.get(caller, set()):
            found.add(f"ALLOWED_LOOPS names {caller} -> {symbol}, which is no longer there: "
                      "remove it")
    return sorted(found)


def nm_of(nm: str, objects: list[str]) -> list[str]:
    result = subprocess.run([nm, "-A", *objects], check=True, capture_output=True, text=True)
    return result.stdout.splitlines()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", nargs="?",
                        default=str(Path(__file__).resolve().parents[1] / "src"))
    parser.add_argument("--nm", default="nm")
    # CMake passes $<TARGET_OBJECTS:...> as one ;-separated argument.
    parser.add_argument("--objects", nargs="*", default=[])
    parser.add_argument("--nm-output", type=Path)
    args = parser.parse_args(argv[1:])
    src = Path(args.src)
    found = include_problems(src)
    objects = [o for arg in args.objects for o in arg.split(";") if o]
    nm_lines: list[str] = []
    if args.nm_output is not None:
        nm_lines = args.nm_output.read_text().splitlines()
    elif objects:
        nm_lines = nm_of(args.nm, objects)
    if nm_lines:
        found += call_problems(nm_lines, src)
    for line in found:
        print(line)
    if found:
        return 1
    files = sum(len(names) for _, names in LAYERS)
    checked = "includes and calls" if nm_lines else "includes"
    print(f"alloc/src layering holds ({checked}): {files} files in {len(LAYERS)} layers, "
          f"{len(ALLOWED_LOOPS)} loops named")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
