"""The runner on cgroup v2 for real, and the allocator under THP `always` and
`never`: this machine has cgroup v1 and THP `madvise`, so a small virtual
machine (cgroup_vm.py: Debian's kernel, the unified hierarchy with the
memory, cpu, cpuset, io and pids controllers) boots once and runs, inside:

- the runner's tests that depend on what cgroup v2 does (CGROUP_V2_TESTS:
  CPU time of every process, also of one that left the group, memory peak
  and limit, the CPU limit over every process, the pids limit, escaped
  processes ended, nothing left behind, CgroupV2 itself), as root in the
  root group, with the pages of the hugetlb pool a run holds in its peak
  and under its limit (ROOT_ONLY_TESTS: v2 keeps no hugetlb peak);
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

Each part is a test of its own here, reading what the machine wrote
(cgroup_v2_machine.py: the script it runs); the machine boots in the
background as the session starts and these tests run last. The machine
skips only where it cannot boot at all (no qemu, no static busybox);
its kernel is fetched once with `apt-get download` into build/vm/, and where
that fails (no network) the tests fail and say so."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cgroup_v2_machine import CGROUP_V2_TESTS, ROOT_ONLY_TESTS, THP_CHECKS, BackgroundMachine
from cgroup_vm import Boot

CONTROLLERS = {"cpu", "cpuset", "io", "memory", "pids"}


@pytest.fixture(scope="module")
def machine(cgroup_v2_machine: BackgroundMachine | None) -> Boot:
    """The machine's one boot, started in the background when the session
    began (conftest.py); skips only where it cannot be booted at all (no
    qemu, no static busybox)."""
    assert cgroup_v2_machine is not None, "conftest.py starts it for this file's tests"
    outcome = cgroup_v2_machine.outcome()
    if outcome.skip:
        pytest.skip(outcome.skip)
    if outcome.failure or outcome.boot is None:
        pytest.fail(outcome.failure or "the machine did not boot", pytrace=False)
    out = outcome.boot.out
    phases = (out / "times").read_text() if (out / "times").exists() else ""
    print(f"\ncgroup v2 machine: {outcome.boot.accel}, {outcome.seconds:.0f} s; "
          f"seconds since its boot: {' '.join(phases.split())}")
    assert (out / "script.rc").exists(), f"the script did not finish; console:\n" \
                                         f"{outcome.boot.console[-3000:]}"
    return outcome.boot


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


def ran_every_cgroup_v2_test(names: set[str], also: list[str] | None = None) -> None:
    wanted = {test.rsplit("::", 1)[1] for test in CGROUP_V2_TESTS + (also or [])}
    assert names == wanted, sorted(names ^ wanted)


def test_runner_as_root_on_cgroup_v2(machine: Boot) -> None:
    ran_every_cgroup_v2_test(passed_every_test(
        machine.out / "root.xml", machine.out / "root.log", machine.out / "root.rc"),
        ROOT_ONLY_TESTS)
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
