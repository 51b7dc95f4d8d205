"""Finding the program a command runs, in one place: the command of `hugeheap
run` and `hugeheap compare` (measure/runner.py) and the tools and generators
of a suite (campaign/suite_commands.py, suite_instances.py).

A program with a slash in its name is the file there; one without is looked
for in PATH, as a shell would. Where there is none to run, the error says
which of four things is wrong (not installed, in PATH but not executable, not
there, not executable) and the fix. The PATH searched is taken from an
environment given as an argument (the harness's own by default), so that
tests can hand it another."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from ..errors import HarnessError


class ProgramNotFound(HarnessError):
    """A program that cannot be run: why (a phrase that names it) and the
    fix, kept apart so that a caller can add its own way out (a suite's
    optional tool)."""

    def __init__(self, why: str, fix: str) -> None:
        super().__init__(f"{why}; {fix}")
        self.why, self.fix = why, fix


def find_program(program: str, directory: Path | None = None,
                 environ: Mapping[str, str] = os.environ) -> str:
    """The executable file `program` names: with a slash, the file there,
    relative to `directory` (a suite's folder), and then absolute with its
    links resolved, since each run starts in a folder of its own; without
    `directory`, relative to the current folder and as written (the command
    line's own word). Without a slash, the first in environ's PATH.
    ProgramNotFound where there is none to run."""
    search_path = environ.get("PATH", os.defpath)
    if "/" in program:
        candidate = Path(directory or Path.cwd(), program)
        if not candidate.is_file():
            raise ProgramNotFound(f"'{program}' does not exist ({candidate})", "fix the path")
        if not os.access(candidate, os.X_OK):
            raise ProgramNotFound(f"'{program}' is not executable ({candidate})",
                                  "make it executable (chmod +x)")
        return str(candidate.resolve()) if directory is not None else program
    found = shutil.which(program, path=search_path)
    if found is not None:
        return found
    for folder in search_path.split(os.pathsep):
        if folder and (Path(folder) / program).is_file():
            raise ProgramNotFound(f"'{program}' in PATH is not executable "
                                  f"({Path(folder) / program})", "make it executable (chmod +x)")
    raise ProgramNotFound(f"'{program}' is not installed (not found in PATH)",
                          f"build or install it (Debian: apt-get install {program}), or give "
                          "its path")
