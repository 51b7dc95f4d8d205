from __future__ import annotations

import pytest

from hugeheap.measure.cgroups import create_run_group


@pytest.fixture(scope="session")
def cgroups_usable() -> str:
    """The cgroup version runs get here; skips (saying why) where none can be made."""
    group, reasons = create_run_group()
    if group is None:
        pytest.skip("no cgroup can be made here: " + "; ".join(reasons))
    group.remove()
    return group.version
