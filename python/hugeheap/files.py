"""Files the harness writes whole: a reader, or a harness killed midway,
sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import HarnessError


def write_whole(path: Path, text: str) -> None:
    """Writes text to path; HarnessError naming the path if it cannot. No
    folder is made: a missing one is named (the campaign makes its own)."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text)
        os.replace(partial, path)
    except OSError as error:
        try:
            partial.unlink(missing_ok=True)
        except OSError:
            pass
        raise HarnessError(f"{path}: cannot write it ({why_not_writable(path, error)})") \
            from None


def why_not_writable(path: Path, error: OSError | None = None) -> str:
    """Why a file cannot be written at path, in a few words."""
    folder = path.parent
    if not folder.exists():
        return f"there is no folder {folder}; make it first"
    if not folder.is_dir():
        return f"{folder} is a file, not a folder"
    if path.is_dir():
        return "it is a folder"
    return error.strerror if error is not None and error.strerror else "not writable"


def check_writable(path: Path, option: str) -> None:
    """HarnessError now, before any work, if a file could not be written at
    path later: its folder is missing or is a file, or path is a folder."""
    if path.is_dir() or not path.parent.is_dir():
        raise HarnessError(f"{option} {path}: cannot write it ({why_not_writable(path)})")


def place_whole(source: Path, target: Path, staged: Path) -> None:
    """target becomes a file with source's bytes, whole or not at all: a
    hard link where one filesystem holds both, else a copy, made at staged
    (a name on target's filesystem that no one else uses) and renamed. A
    staged file left by a failure is removed; the OSError is the caller's
    to name."""
    try:
        try:
            os.link(source, staged)
        except OSError:
            shutil.copyfile(source, staged)
        os.replace(staged, target)
    except OSError:
        staged.unlink(missing_ok=True)
        raise
