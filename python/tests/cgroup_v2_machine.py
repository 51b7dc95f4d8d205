"""The run of the cgroup v2 machine that test_cgroup_v2_vm.py reads: what it
runs inside (the script), and its start in the background as soon as the
session's tests are known, so that the emulated machine (one core of TCG for
about two minutes) runs beside the other tests instead of before its own.
conftest.py starts it and orders its tests last; the tests wait for it."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cgroup_vm import USER_ID, Boot, CgroupVM, shares_for, unavailable

from hugeheap.measure.allocators import REPO_ROOT

TEST_FILE = "test_cgroup_v2_vm.py"
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
CGROUP_V2_TESTS = [f"python/tests/test_run.py::{name}" for name in (
    "test_cpu_time_of_children_nobody_waited_for",
    "test_cpu_time_of_a_process_that_left_the_group_is_cross_checked",
    "test_memory_limit_ends_in_memout",
    "test_cpu_limit_counts_every_process",
    "test_fork_storm_is_contained",
    "test_detached_grandchildren_are_gone",
    "test_an_exception_while_supervising_leaves_nothing_behind",
)] + ["python/tests/test_cgroup_v2.py::test_real_v2_group_measures_and_kills"]
# As root only (a user cannot reserve pool pages): a run's pages of the
# hugetlb pool in its peak and under its limit, where v2 keeps no peak.
ROOT_ONLY_TESTS = [
    "python/tests/test_pool_mode.py::test_pool_pages_a_run_holds_are_in_its_peak_and_under_its_limit"]
THP_CHECKS = {"always": ("thp-coverage", "small-heap", "thp-off", "stats"),
              "never": ("thp-coverage", "small-heap", "stats")}
# How many times longer Python's work takes under TCG than on this machine
# (sum(range(10**7)): 0.27 s here, 5.9 s there), for the tests' timing bounds.
TCG_SLOWDOWN = 20

SCRIPT = """\
set -u
cd {repo}
cgroups=/sys/fs/cgroup
cat $cgroups/cgroup.controllers > /out/controllers
slowdown=1
grep -q "QEMU TCG" /proc/cpuinfo && slowdown={slowdown}  # emulated: timing bounds widen
export PYTHONDONTWRITEBYTECODE=1 HUGEHEAP_EXPECT_CGROUP=v2 HUGEHEAP_TEST_SLOWDOWN=$slowdown
pytest="{python} -m pytest -p no:cacheprovider -q -rs {tests}"
seconds() {{ cut -d' ' -f1 /proc/uptime; }}

# As root, in the root group.
echo "root $(seconds)" >> /out/times
$pytest {root_tests} --junitxml=/out/root.xml > /out/root.log 2>&1
echo $? > /out/root.rc
find $cgroups -mindepth 1 -name 'hugeheap*' > /out/root.left

# As user {uid}, in a subtree delegated to it as systemd's Delegate=yes does.
echo "user $(seconds)" >> /out/times
echo "+cpu +cpuset +io +memory +pids" > $cgroups/cgroup.subtree_control
mkdir $cgroups/delegated
chown {uid}:{uid} $cgroups/delegated $cgroups/delegated/cgroup.procs \\
    $cgroups/delegated/cgroup.subtree_control $cgroups/delegated/cgroup.threads
mkdir -p /tmp/hh && chown {uid}:{uid} /tmp/hh
as_user="/usr/bin/setpriv --reuid={uid} --regid={uid} --clear-groups /usr/bin/env HOME=/tmp/hh"
sh -c "echo \\$\\$ > $cgroups/delegated/cgroup.procs && \\
    exec $as_user $pytest --junitxml=/out/user/user.xml" > /out/user/user.log 2>&1
echo $? > /out/user.rc
for group in $(find $cgroups -mindepth 1 -name 'hugeheap*'); do
    echo "$group: $(cat $group/cgroup.procs | wc -w) processes"
done > /out/user.left

# The allocator's preload checks under THP always and never.
{thp_checks}
echo "end $(seconds)" >> /out/times
"""

THP_CHECK = """\
echo "thp-{mode} $(seconds)" >> /out/times
echo {mode} > /sys/kernel/mm/transparent_hugepage/enabled
for check in {checks}; do
    {python} alloc/tests/preload_checks.py $check --lib build/lib/libhugeheap.so \\
        --probe build/bin/alloc_probe > /out/thp-{mode}-$check.log 2>&1
    echo $? > /out/thp-{mode}-$check.rc
done"""


@dataclass
class Outcome:
    """How the machine's run ended: its boot, or why there was none
    (skip: it cannot boot here at all; failure: it should have and did not)."""
    boot: Boot | None = None
    skip: str | None = None
    failure: str | None = None
    seconds: float = 0.0


class BackgroundMachine:
    """One boot of the machine running every part, on a thread of its own."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self._stop = threading.Event()
        self._outcome = Outcome()
        self._thread = threading.Thread(target=self._run, name="cgroup-v2-machine", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def outcome(self) -> Outcome:
        """Waits for the machine to power off."""
        self._thread.join()
        return self._outcome

    def stop(self) -> None:
        """Kills a machine still running (the session is over) and waits."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            self._outcome = self._boot()
        except Exception as error:  # reported by the tests, on the main thread
            self._outcome = Outcome(failure=f"{type(error).__name__}: {error}")
        self._outcome.seconds = time.monotonic() - started

    def _boot(self) -> Outcome:
        reason = unavailable()
        if reason:
            return Outcome(skip=reason)
        for needed in (PYTHON, REPO_ROOT / "build" / "lib" / "libhugeheap.so",
                       REPO_ROOT / "build" / "bin" / "alloc_probe"):
            if not needed.exists():
                return Outcome(failure=f"{needed} is missing: `make` builds it")
        vm = CgroupVM()
        try:
            vm.prepare()
        except RuntimeError as error:
            return Outcome(failure=f"the cgroup v2 machine cannot be made: {error}")
        (self.out / "user").mkdir(parents=True)
        (self.out / "user").chmod(0o777)  # written by the unprivileged user
        thp_checks = "\n".join(THP_CHECK.format(mode=mode, checks=" ".join(checks),
                                                python=PYTHON)
                               for mode, checks in THP_CHECKS.items())
        script = SCRIPT.format(repo=REPO_ROOT, python=PYTHON, tests=" ".join(CGROUP_V2_TESTS),
                               root_tests=" ".join(ROOT_ONLY_TESTS), uid=USER_ID,
                               thp_checks=thp_checks, slowdown=TCG_SLOWDOWN)
        return Outcome(boot=vm.boot(script, self.out, shares_for(PYTHON), stop=self._stop))
