"""Compressed instances, as competitions ship them (`.cnf.xz`, `.wcnf.gz`,
`.aig.bz2`, `.lzma`): the format a file is in (by its suffix, as the tools
that read such files decide it), the instance's name without that suffix,
and reading or decompressing it with Python's own modules, so that no
decompressing program need be installed.

Which tools read which formats themselves: docs/HARNESS.md."""

from __future__ import annotations

import bz2
import gzip
import lzma
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TextIO, cast

from ..errors import HarnessError

FORMATS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".lzma": "lzma"}
# How each format's files start (lzma's old format has no magic number).
_MAGIC = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}


def compression_of(path: str | Path) -> str | None:
    """The format of a compressed file, by its suffix; None for a plain one."""
    return FORMATS.get(Path(path).suffix)


def plain_name(name: str) -> str:
    """The name of the instance a file holds: without a compression suffix."""
    path = Path(name)
    return name[:-len(path.suffix)] if path.suffix in FORMATS else name


# Each module's open reads its format, as bytes ("rb") or text ("rt").
_OPENERS: dict[str | None, Callable[[Path, str], Any]] = {
    "gzip": gzip.open, "bzip2": bz2.open, "xz": lzma.open, "lzma": lzma.open, None: open}


def open_binary(path: Path) -> IO[bytes]:
    """The instance's bytes, decompressed as they are read."""
    return cast(IO[bytes], _OPENERS[compression_of(path)](path, "rb"))


def open_text(path: Path, compression: str | None = None) -> TextIO:
    """The instance's text; compression: its format where its name does not
    say it (a file of the instance cache), else by its suffix."""
    return cast(TextIO, _OPENERS[compression or compression_of(path)](path, "rt"))


def format_by_content(path: Path) -> str | None:
    """The compression format a file is in by how it starts (not lzma's old
    format, which has no magic number); None for anything else."""
    with open(path, "rb") as f:
        head = f.read(6)
    return next((name for name, magic in _MAGIC.items() if head.startswith(magic)), None)


def format_problem(path: Path) -> str | None:
    """Why a compressed instance is not what its suffix says (it does not
    start as its format does), None when it starts well: damage further in
    shows when it is decompressed."""
    compression = compression_of(path)
    magic = _MAGIC.get(compression or "")
    if magic is None:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(len(magic))
    except OSError as error:
        return f"{path}: cannot read it ({error.strerror})"
    return None if head == magic else f"{path}: not a {compression} file"


def decompress(source: Path, target: Path) -> None:
    """source's content into target; HarnessError where it does not decompress."""
    try:
        with open_binary(source) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except OSError as error:
        target.unlink(missing_ok=True)
        if error.errno is None:  # the data, not the system
            raise HarnessError(f"{source}: damaged {compression_of(source)} data ({error})") \
                from None
        raise HarnessError(f"{source}: cannot decompress it into {target.parent} "
                           f"({error.strerror})") from None
    except (EOFError, lzma.LZMAError) as error:
        target.unlink(missing_ok=True)
        raise HarnessError(f"{source}: damaged {compression_of(source)} data ({error})") \
            from None
