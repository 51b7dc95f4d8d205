"""Allocator modes: what each puts into the environment of the measured tool
(never into the harness's own process), and which package provides it.

A mode is resolved once (by the command line or the suite) and then carried
with every run: the library a campaign records the checksum of is the
library its runs preload."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import HarnessError
from . import machine

REPO_ROOT = Path(__file__).resolve().parents[3]  # the checkout, when running from one
PACKAGED_LIBRARY = Path(__file__).resolve().parents[1] / "lib" / "libhugeheap.so"  # a wheel's
LIBRARY_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                "/usr/local/lib"]
MODES = ["system", "glibc-thp", "hugeheap", "hugeheap-nothp", "hugeheap-pool", "mimalloc",
         "jemalloc", "tcmalloc"]
_HUGEHEAP = {"hugeheap": None, "hugeheap-nothp": "off", "hugeheap-pool": "hugetlb"}  # HUGEHEAP_THP
_PRELOADING = {*_HUGEHEAP, "mimalloc", "jemalloc", "tcmalloc"}


@dataclass(frozen=True)
class AllocatorMode:
    name: str  # as campaigns and reports call it
    like: str  # the built-in mode it is (its own name for a built-in one)
    env: dict[str, str] = field(default_factory=dict)
    library: str | None = None  # the preloaded library, absolute
    missing: str | None = None  # why it cannot be used here, naming the fix

    @property
    def is_hugeheap(self) -> bool:
        """A mode of the library itself (any build of it, any HUGEHEAP_THP)."""
        return self.like in _HUGEHEAP


def find_library(pattern: str) -> str | None:
    for directory in LIBRARY_DIRS:
        hits = sorted(glob.glob(os.path.join(directory, pattern)))
        if hits:
            return hits[0]
    return None


def hugeheap_library() -> str | None:
    """HUGEHEAP_LIBRARY, else the one this package was installed with (pip
    install, a wheel), else the build in this checkout, else an installed
    copy (make install)."""
    explicit = os.environ.get("HUGEHEAP_LIBRARY")
    if explicit:
        return str(Path(explicit).resolve()) if Path(explicit).is_file() else None
    for candidate in (PACKAGED_LIBRARY, REPO_ROOT / "build" / "lib" / "libhugeheap.so"):
        if candidate.is_file():
            return str(candidate)
    return find_library("libhugeheap.so")


_PEERS = {
    "mimalloc": ("libmimalloc.so.2*", "libmimalloc2.0", {}),
    "jemalloc": ("libjemalloc.so.2", "libjemalloc2",
                 {"MALLOC_CONF": "thp:always,metadata_thp:always"}),
    "tcmalloc": ("libtcmalloc_minimal.so.4", "libtcmalloc-minimal4", {}),
}


def resolve(name: str) -> AllocatorMode:
    """A built-in mode with its environment, or with `missing` saying what is
    wrong; HarnessError for a name that is no mode."""
    if name == "system":
        return AllocatorMode(name, name)
    if name == "glibc-thp":
        version = machine.glibc_version()
        missing = None
        if version is None or version < (2, 35):
            found = "no glibc" if version is None else f"glibc {version[0]}.{version[1]}"
            missing = f"glibc.malloc.hugetlb needs glibc 2.35 or newer; this machine has {found}"
        return AllocatorMode(name, name, {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"},
                             missing=missing)
    if name in _HUGEHEAP:
        library = hugeheap_library()
        env = {"LD_PRELOAD": library or ""}
        thp = _HUGEHEAP[name]
        if thp is not None:
            env["HUGEHEAP_THP"] = thp
        missing = None if library else ("libhugeheap.so not found: install hugeheap with pip "
                                        "(it builds the library), run `make` in its checkout, "
                                        "or set HUGEHEAP_LIBRARY to the library's path")
        if missing is None and thp == "hugetlb":
            missing = pool_missing(machine.hugetlb_pool())
        return AllocatorMode(name, name, env, library, missing)
    if name in _PEERS:
        pattern, package, extra = _PEERS[name]
        library = find_library(pattern)
        if library is None:
            return AllocatorMode(name, name, missing=f"{name} is not installed (Debian package "
                                                      f"{package}: apt-get install {package})")
        return AllocatorMode(name, name, {"LD_PRELOAD": library, **extra}, library)
    raise HarnessError(f"unknown allocator mode '{name}' (known: {', '.join(MODES)})")


def pool_missing(pool: machine.HugetlbPool | None) -> str | None:
    """Why a mode that maps from the pool of 2 MiB pages cannot run here:
    the kernel has no such pool, or no page of it is reserved (the library
    would fall back to transparent huge pages on every run, and the mode
    would measure `hugeheap` again). None where the pool has pages."""
    if pool is None:
        return ("this kernel has no pool of 2 MiB huge pages (built without hugetlb support); "
                "use a kernel with CONFIG_HUGETLBFS, or the mode hugeheap")
    if pool.total == 0:
        return ("no pool of 2 MiB huge pages is reserved here (nr_hugepages is 0); reserve "
                "one as root: `sudo hugeheap pool reserve SIZE` (e.g. 2GiB)")
    return None


def derive(name: str, like: str, library: Path | None = None,
           environment: dict[str, str] | None = None) -> AllocatorMode:
    """A mode of one's own: a built-in one (`like`) with another library (a
    build of hugeheap to compare with, say) and more environment. HarnessError
    for a library that is not there or a mode that preloads none."""
    base = resolve(like)
    env = dict(base.env)
    found = base.library
    missing = base.missing
    if library is not None:
        if like not in _PRELOADING:
            raise HarnessError(f"mode '{like}' preloads no library, so it takes no 'library'")
        if not library.is_file():
            raise HarnessError(f"the library {library} is not there")
        found = str(library.resolve())
        env["LD_PRELOAD"] = found
        missing = None
    env.update(environment or {})
    return replace(base, name=name, env=env, library=found, missing=missing)


def require(name: str) -> AllocatorMode:
    """The built-in mode, or HarnessError saying why it cannot run here."""
    mode = resolve(name)
    if mode.missing:
        raise HarnessError(f"--alloc {name}: {mode.missing}")
    return mode
