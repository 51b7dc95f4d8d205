"""Files the harness writes whole: a reader, or a harness killed midway,
sees the old file or the new one, never half of one."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import HarnessError


def write_whole(path: Path, text: str) -> None:
    """Writes text to path (making its directory); HarnessError naming the
    path if it cannot."""
    partial = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(text)
        os.replace(partial, path)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise HarnessError(f"{path}: cannot write it ({error.strerror})") from None
