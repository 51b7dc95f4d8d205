"""Allocator modes: what each puts into the environment of the measured tool
(never into the harness's own process), and which package provides it."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from .errors import HarnessError
from .machine import glibc_version

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
LIBRARY_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib"]
MODES = ["system", "glibc-thp", "hugeheap", "hugeheap-nothp", "mimalloc", "jemalloc", "tcmalloc"]


@dataclass
class AllocatorMode:
    name: str
    env: dict[str, str] = field(default_factory=dict)
    library: str | None = None
    missing: str | None = None  # why it cannot be used here, naming the fix


def find_library(pattern: str) -> str | None:
    for directory in LIBRARY_DIRS:
        hits = sorted(glob.glob(os.path.join(directory, pattern)))
        if hits:
            return hits[0]
    return None


def hugeheap_library() -> str | None:
    """HUGEHEAP_LIBRARY, else the build in this checkout, else an installed copy."""
    explicit = os.environ.get("HUGEHEAP_LIBRARY")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    built = REPO_ROOT / "build" / "lib" / "libhugeheap.so"
    if built.is_file():
        return str(built)
    return find_library("libhugeheap.so")


_PEERS = {
    "mimalloc": ("libmimalloc.so.2*", "libmimalloc2.0", {}),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2",
                 {"MALLOC_CONF": "thp:always,metadata_thp:always"}),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", {}),
}


def resolve(name: str, library_override: str | None = None) -> AllocatorMode:
    """The mode with its environment, or with `missing` saying what is wrong.
    library_override: the libhugeheap.so to use instead of the one found."""
    if name == "system":
        return AllocatorMode(name)
    if name == "glibc-thp":
        version = glibc_version()
        mode = AllocatorMode(name, {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"})
        if version is None or version < (2, 35):
            found = "no glibc" if version is None else f"glibc {version[0]}.{version[1]}"
            mode.missing = (f"glibc.malloc.hugetlb needs glibc 2.35 or newer; "
                            f"this machine has {found}")
        return mode
    if name in ("hugeheap", "hugeheap-nothp"):
        library = library_override or hugeheap_library()
        if library is not None and not Path(library).is_file():
            library = None
        env = {"LD_PRELOAD": library or ""}
        if name == "hugeheap-nothp":
            env["HUGEHEAP_THP"] = "off"
        mode = AllocatorMode(name, env, library)
        if library is None:
            mode.missing = ("libhugeheap.so not found: run `make` in the hugeheap checkout, "
                            "or set HUGEHEAP_LIBRARY to its path")
        return mode
    if name in _PEERS:
        pattern, package, extra = _PEERS[name]
        library = find_library(pattern)
        if library is None:
            return AllocatorMode(name, missing=f"{name} is not installed (Debian package "
                                                f"{package}: apt-get install {package})")
        return AllocatorMode(name, {"LD_PRELOAD": library, **extra}, library)
    raise HarnessError(f"unknown allocator mode '{name}' (known: {', '.join(MODES)})")


def require(name: str) -> AllocatorMode:
    mode = resolve(name)
    if mode.missing:
        raise HarnessError(f"--alloc {name}: {mode.missing}")
    return mode
