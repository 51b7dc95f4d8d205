"""The `hugeheap` command as the tests call it: in a process of its own, with
this interpreter (so the checkout's package, not an installed one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

CLI = [sys.executable, "-m", "hugeheap.cli"]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
        cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=cwd)


# The command as user and group 65534 (nobody), by util-linux's setpriv (None
# where it is missing). The process keeps one capability, to read and search
# every folder, so that an interpreter in a folder closed to others (a pyenv
# under /root) can start: it may write nothing that is root's.
SETPRIV = shutil.which("setpriv")
AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=-all,+dac_read_search", "--ambient-caps=+dac_read_search"]


def cli_as_nobody(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command run by an unprivileged user; needs root and SETPRIV to start."""
    assert SETPRIV is not None, "no setpriv here"
    return subprocess.run([SETPRIV, *AS_NOBODY, *CLI, *args], capture_output=True, text=True,
                          timeout=timeout)
