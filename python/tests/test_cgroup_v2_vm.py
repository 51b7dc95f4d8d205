"""The runner on cgroup v2 for real, and the allocator under THP `always` and
`never`: this machine has cgroup v1 and THP `madvise`, so a small virtual
machine (cgroup_vm.py: Debian's kernel, the unified hierarchy with the
memory, cpu, cpuset, io and pids controllers) boots once and runs, inside:

- the runner's tests that depend on what cgroup v2 does (CGROUP_V2_TESTS:
  CPU time of every process, also of one that left the group, memory peak
  and limit, the CPU limit over every process, the pids limit, escaped
  processes ended, nothing left behind, CgroupV2 itself), as root in the
  root group;
- the same as an unprivileged user in a subtree delegated to it the way
  systemd's Delegate=yes delegates one (the controllers enabled above it;
  the group and its cgroup.procs, cgroup.subtree_control and cgroup.threads
  owned by the user; the command alone in it): what `systemd-run --user
  --scope -p Delegate=yes hugeheap ...` gives a user on a systemd machine.
  systemd itself does not run in the machine (its /init is a shell script);
- the allocator's preload checks of huge-page coverage, small heaps, THP off
  and statistics with THP `always`, and those that say something with THP
  `never` (THP off cannot be told from on there).

Cut for time: where KVM cannot boot it (here: nested KVM hangs), qemu
emulates the machine (TCG), about 20 times slower than this machine for
Python's work and slower still for its imports over 9p. So only those
tests run inside; the rest of test_run.py (the CLI's JSON and doctor, the
tool's scrubbed environment, exit codes, the wall limit, an interrupted
harness, running without pidfd_open) asks nothing of cgroup v2 that these
do not, starts the CLI (10 to 25 s each there) and runs on the host.

Each part is a test of its own here, reading what the machine wrote. The
machine skips only where it cannot boot at all (no qemu, no static busybox);
its kernel is fetched once with `apt-get download` into build/vm/, and where
that fails (no network) the tests fail and say so."""

from __future__ import annotations

import os
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from cgroup_vm import USER_ID, Boot, CgroupVM, shares_for, unavailable

from hugeheap.measure.allocators import REPO_ROOT

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
THP_CHECKS = {"always": ("thp-coverage", "small-heap", "thp-off", "stats"),
              "never": ("thp-coverage", "small-heap", "stats")}
CONTROLLERS = {"cpu", "cpuset", "io", "memory", "pids"}
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
$pytest --junitxml=/out/root.xml > /out/root.log 2>&1
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


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Boot]:
    """One boot of the machine, running every part; skips only where it
    cannot be booted at all (no qemu, no static busybox)."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    for needed in (PYTHON, REPO_ROOT / "build" / "lib" / "libhugeheap.so",
                   REPO_ROOT / "build" / "bin" / "alloc_probe"):
        assert needed.exists(), f"{needed} is missing: `make` builds it"
    vm = CgroupVM()
    try:
        vm.prepare()
    except RuntimeError as error:
        pytest.fail(f"the cgroup v2 machine cannot be made: {error}", pytrace=False)
    out = tmp_path_factory.mktemp("vm") / "out"
    (out / "user").mkdir(parents=True)
    (out / "user").chmod(0o777)  # written by the unprivileged user
    thp_checks = "\n".join(THP_CHECK.format(mode=mode, checks=" ".join(checks), python=PYTHON)
                           for mode, checks in THP_CHECKS.items())
    script = SCRIPT.format(repo=REPO_ROOT, python=PYTHON, tests=" ".join(CGROUP_V2_TESTS),
                           uid=USER_ID, thp_checks=thp_checks, slowdown=TCG_SLOWDOWN)
    started = time.monotonic()
    boot = vm.boot(script, out, shares_for(PYTHON))
    phases = (out / "times").read_text() if (out / "times").exists() else ""
    print(f"\ncgroup v2 machine: {boot.accel}, {time.monotonic() - started:.0f} s; "
          f"seconds since its boot: {' '.join(phases.split())}")
    assert (out / "script.rc").exists(), f"the script did not finish; console:\n" \
                                         f"{boot.console[-3000:]}"
    yield boot
    if os.environ.get("HUGEHEAP_KEEP_VM_OUT") is None:
        shutil.rmtree(out.parent, ignore_errors=True)


def passed_every_test(xml: Path, log: Path, rc: Path) -> set[str]:
    """The names of the tests a junit file lists; asserts that pytest
    succeeded and skipped none (a skip would hide what the machine is for)."""
    assert rc.read_text().strip() == "0", log.read_text()[-6000:]
    suite = ET.parse(xml).getroot().find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    skipped = [f"{case.get('name')}: {skip.get('message')}" for case in cases
               for skip in case.findall("skipped")]
    assert skipped == [], skipped
    return {str(case.get("name")) for case in cases}


def ran_every_cgroup_v2_test(names: set[str]) -> None:
    wanted = {test.rsplit("::", 1)[1] for test in CGROUP_V2_TESTS}
    assert names == wanted, sorted(names ^ wanted)


def test_runner_as_root_on_cgroup_v2(machine: Boot) -> None:
    ran_every_cgroup_v2_test(passed_every_test(
        machine.out / "root.xml", machine.out / "root.log", machine.out / "root.rc"))
    assert (machine.out / "root.left").read_text() == "", "cgroups left behind"


def test_runner_as_a_user_in_a_delegated_subtree(machine: Boot) -> None:
    ran_every_cgroup_v2_test(passed_every_test(
        machine.out / "user" / "user.xml", machine.out / "user" / "user.log",
        machine.out / "user.rc"))
    # What stays: the leaf the harness moved itself into, empty; no run's group.
    left = (machine.out / "user.left").read_text().splitlines()
    assert len(left) == 1, left
    assert "/delegated/hugeheap-harness-" in left[0] and left[0].endswith(": 0 processes"), left


# Under `never` the allocator must leave THP off (the kernel would still
# make huge pages of what it collapses by MADV_COLLAPSE); under `always` a
# small heap must stay in 4 KiB pages (advised MADV_NOHUGEPAGE, its page
# descriptors too: their first write made a 2 MiB huge page once).
THP_CASES = [(mode, check) for mode, checks in THP_CHECKS.items() for check in checks]


@pytest.mark.parametrize("mode,check", THP_CASES)
def test_allocator_under_thp(machine: Boot, mode: str, check: str) -> None:
    rc = (machine.out / f"thp-{mode}-{check}.rc").read_text().strip()
    log = (machine.out / f"thp-{mode}-{check}.log").read_text()
    assert rc == "0", log


def test_the_machine_had_what_it_is_for(machine: Boot) -> None:
    assert "hugeheap-vm: booted" in machine.console
    assert "cannot" not in machine.console, machine.console[-3000:]
    controllers = set((machine.out / "controllers").read_text().split())
    assert CONTROLLERS <= controllers, controllers
