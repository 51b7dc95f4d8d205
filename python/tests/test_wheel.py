"""The wheel `make wheel` builds (what `pip install .` of this checkout
installs) in a fresh virtual environment: its `hugeheap` command preloads the
libhugeheap that came in the wheel, with nothing of the checkout in sight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hugeheap.measure.allocators import REPO_ROOT

WHEELS = REPO_ROOT / "build" / "wheel"


def test_the_wheel_installs_and_preloads_its_own_library(tmp_path: Path) -> None:
    wheels = sorted(WHEELS.glob("hugeheap-*.whl"))
    assert wheels, f"no wheel in {WHEELS}: `make wheel` builds it (`make test` does first)"
    fresh = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True)
    installed = subprocess.run([str(fresh / "bin" / "pip"), "install", "-q", str(wheels[-1])],
                               capture_output=True, text=True, timeout=900)
    assert installed.returncode == 0, installed.stderr[-2000:]
    env = {k: v for k, v in os.environ.items()
           if k not in ("HUGEHEAP_LIBRARY", "PYTHONPATH", "VIRTUAL_ENV")}
    maps = tmp_path / "maps"
    done = subprocess.run([str(fresh / "bin" / "hugeheap"), "run", "--alloc", "hugeheap",
                           "--json", "--output", str(maps), "--", "cat", "/proc/self/maps"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    library = json.loads(done.stdout)["alloc_library"]
    assert Path(library).is_relative_to(fresh) and library.endswith("hugeheap/lib/"
                                                                       "libhugeheap.so")
    assert library in maps.read_text()  # preloaded into the tool
    assert str(REPO_ROOT) not in library
