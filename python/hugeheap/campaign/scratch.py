"""The scratch folders of a campaign's runs, and the removal of those whose
owner died.

Each run gets a folder of its own in the temporary directory: the tool starts
there, and an instance it cannot read compressed is decompressed there (a
gigabyte or more on a large set). The worker process that made the folder
removes it when the run ends; a worker that is killed cannot (Ctrl-C or
SIGTERM of a campaign ends its workers with SIGKILL, so does the kernel's OOM
killer, and so does Slurm a task's). So each folder's name says whose it is:

    hugeheap-run-PID-START-HOST-XXXXXXXX

the worker's pid, when that process started (clock ticks after boot, as
/proc/PID/stat gives it: a pid is reused, a pid and its start time are not)
and the host (a temporary directory may be shared). A folder of this host
whose process is gone, or is another process now, is an orphan:
remove_orphans deletes it. Campaigns call it when they start, when a worker
died, and when they end their workers. Folders named otherwise (by a
hugeheap older than this scheme) cannot be told apart and are left alone."""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..measure.machine import process_start_ticks, process_stat_fields

PREFIX = "hugeheap-run-"
# tempfile's random part has no '-': the host is everything before the last one.
_NAME = re.compile(rf"^{PREFIX}(?P<pid>\d+)-(?P<start>\d+)-(?P<host>.+)-[^-]+$")


def run_folder(directory: Path | None = None) -> tempfile.TemporaryDirectory[str]:
    """A new scratch folder for a run of this process, removed when the
    context ends; directory: where (default: the temporary directory)."""
    pid = os.getpid()
    return tempfile.TemporaryDirectory(
        prefix=f"{PREFIX}{pid}-{process_start_ticks(pid) or 0}-{socket.gethostname()}-",
        dir=directory)


def remove_orphans(directory: Path | None = None,
                   stat_fields: Callable[[int], list[str] | None] = process_stat_fields) -> int:
    """Removes the scratch folders in directory (default: the temporary
    directory) that this host's processes made and that outlived them;
    returns how many. Other users' folders are left (they are theirs to
    remove). stat_fields: a process's /proc/PID/stat (machine.py's reader)."""
    if stat_fields(os.getpid()) is None:
        return 0  # no /proc to tell a live process from a dead one: remove nothing
    where = directory or Path(tempfile.gettempdir())
    host = socket.gethostname()
    removed = 0
    for path in where.glob(f"{PREFIX}*"):
        name = _NAME.match(path.name)
        if name is None or name["host"] != host or not _is_own_folder(path):
            continue
        if _runs(stat_fields(int(name["pid"])), int(name["start"])):
            continue  # its process still runs: the folder is in use
        shutil.rmtree(path, ignore_errors=True)
        removed += not path.exists()
    return removed


def _runs(fields: list[str] | None, start: int) -> bool:
    """Whether /proc/PID/stat's fields are of the process that started then
    and that has not ended: a killed worker whose parent died too stays a
    zombie until someone reaps it, and its folder is an orphan already."""
    return fields is not None and fields[0] != "Z" and fields[19] == str(start)


def _is_own_folder(path: Path) -> bool:
    try:
        return path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
    except OSError:
        return False
