"""The `hugeheap` command as the tests call it: in a process of its own, with
this interpreter (so the checkout's package, not an installed one)."""

from __future__ import annotations

import os
import subprocess
import sys

CLI = [sys.executable, "-m", "hugeheap.cli"]


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120,
        cwd: str | os.PathLike[str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=cwd)
