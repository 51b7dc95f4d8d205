from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest
from cgroup_v2_machine import TEST_FILE, BackgroundMachine

from hugeheap.measure import firsttouch, hugetlb, machine
from hugeheap.measure.cgroups import create_run_group
from slurm_cluster import LocalSlurm, unavailable

# Set where the tests must see a cgroup version (the cgroup v2 machine of
# test_cgroup_v2_vm.py): a test that would skip for want of cgroups fails.
EXPECTED_CGROUP = os.environ.get("HUGEHEAP_EXPECT_CGROUP")


@pytest.fixture(scope="session")
def cgroups_usable() -> str:
    """The cgroup version runs get here; skips (saying why) where none can be made."""
    group, reasons = create_run_group()
    if group is None:
        if EXPECTED_CGROUP:
            pytest.fail(f"cgroup {EXPECTED_CGROUP} expected, none can be made: "
                        + "; ".join(reasons))
        pytest.skip("no cgroup can be made here: " + "; ".join(reasons))
    group.remove()
    if EXPECTED_CGROUP:
        assert group.version == EXPECTED_CGROUP, f"cgroup {group.version} made"
    return group.version


@pytest.fixture(scope="session")
def slurm() -> Iterator[LocalSlurm]:
    """A real Slurm cluster of this one machine, for the whole session; the
    hugeheap commands the tests start reach it through SLURM_CONF. Skips,
    saying why, without root or without Slurm and munge installed."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    cluster = LocalSlurm()
    cluster.start()
    before = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)
    try:
        yield cluster
    finally:
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before
        cluster.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The cgroup v2 machine's tests last: it boots in the background while
    the others run (cgroup_v2_machine)."""
    items.sort(key=lambda item: item.path.name == TEST_FILE)


@pytest.fixture(scope="session", autouse=True)
def cgroup_v2_machine(request: pytest.FixtureRequest,
                      tmp_path_factory: pytest.TempPathFactory
                      ) -> Iterator[BackgroundMachine | None]:
    """The cgroup v2 machine, started with the session's first test where
    its tests are to run; killed if still running when the session ends."""
    if not any(item.path.name == TEST_FILE for item in request.session.items):
        yield None
        return
    out = tmp_path_factory.mktemp("vm") / "out"
    background = BackgroundMachine(out)
    background.start()
    try:
        yield background
    finally:
        background.stop()
        if os.environ.get("HUGEHEAP_KEEP_VM_OUT") is None:
            shutil.rmtree(out.parent, ignore_errors=True)


def real_pool_unavailable() -> str | None:
    """Why the real pool cannot be tried here, or None."""
    if os.geteuid() != 0:
        return "changing the hugetlb pool needs root"
    if machine.hugetlb_pool() is None or not machine.hugetlb_pool_dir().is_dir():
        return "this kernel has no 2 MiB hugetlb pool"
    if firsttouch.MAP_HUGETLB is None:
        return "MAP_HUGETLB's value is not known on this architecture"
    if hugetlb.STATE_FILE.exists():
        return f"{hugetlb.STATE_FILE} holds a pool hugeheap reserved for someone: left alone"
    return None


@pytest.fixture
def real_pool() -> Iterator[int]:
    """nr_hugepages as it was, put back (and hugeheap's record removed)
    after the test whatever happened; a release that could not undo what a
    reserve changed (the hugetlb hierarchy) fails the test's teardown, so
    the tests after it do not run on a machine left changed unsaid."""
    reason = real_pool_unavailable()
    if reason:
        pytest.skip(reason)
    count_file = machine.hugetlb_pool_dir() / "nr_hugepages"
    before = int(count_file.read_text())
    problem = None
    try:
        yield before
    finally:
        try:
            if hugetlb.STATE_FILE.exists():
                # the pages and the hugetlb hierarchy a reserve made
                problem = hugetlb.release().problem
        finally:
            count_file.write_text(f"{before}\n")
            hugetlb.STATE_FILE.unlink(missing_ok=True)
    if problem:
        pytest.fail(f"pool release left the machine changed: {problem}")



@pytest.fixture
def grow_pool(real_pool: int) -> Callable[[int], None]:
    """grow_pool(pages): that many more pages in the real pool than it had
    (real_pool puts the count back); skips where the kernel grants fewer
    (memory fragmented)."""
    def grow(pages: int) -> None:
        count_file = machine.hugetlb_pool_dir() / "nr_hugepages"
        count_file.write_text(f"{real_pool + pages}\n")
        if int(count_file.read_text()) < real_pool + pages:
            pytest.skip("the kernel granted fewer pool pages than asked (memory fragmented)")
    return grow
