"""The readers of measure/machine.py that /proc feeds while a run goes on,
each handed a machine that is not this one: fixture files as Linux writes
them, then missing and malformed ones."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from hugeheap.measure import machine


def test_cpu_time_of_a_process(tmp_path: Path) -> None:
    hz = os.sysconf("SC_CLK_TCK")
    process = tmp_path / "4242"
    process.mkdir()
    # The command's name holds a parenthesis and spaces: the figures are
    # counted from the last one. utime, stime, cutime, cstime are the 14th
    # to 17th fields.
    (process / "stat").write_text(
        f"4242 (a (b) c) R 1 4242 4242 0 -1 4194304 120 0 0 0 "
        f"{hz} {2 * hz} {3 * hz} {4 * hz} 20 0 1 0 5000 1000000 200\n")
    assert machine.process_cpu_seconds(4242, tmp_path) == 10.0
    assert machine.process_cpu_seconds(7, tmp_path) == 0.0  # gone
    (process / "stat").write_text("4242 (short) R 1 4242\n")
    assert machine.process_cpu_seconds(4242, tmp_path) == 0.0
    (process / "stat").write_text("4242 (x) R 1 2 3 4 5 6 7 8 9 10 eleven 12 13 14\n")
    assert machine.process_cpu_seconds(4242, tmp_path) == 0.0
    (process / "stat").write_text("no parenthesis at all")
    assert machine.process_cpu_seconds(4242, tmp_path) == 0.0


SMAPS = """\
55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0                          [heap]
Size:                132 kB
AnonHugePages:         0 kB
VmFlags: rd wr mr mw me ac
7f0000000000-7f0000800000 rw-p 00000000 00:00 0
Size:               8192 kB
Rss:                4096 kB
AnonHugePages:      4096 kB
VmFlags: rd wr mr mw me ac hg
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
AnonHugePages:         0 kB
"""


def test_huge_pages_of_a_mapping(tmp_path: Path) -> None:
    smaps = tmp_path / "smaps"
    smaps.write_text(SMAPS)
    assert machine.anon_huge_bytes(0x7F0000200000, smaps) == 4096 * 1024
    assert machine.anon_huge_bytes(0x55D0C0000000, smaps) == 0
    assert machine.anon_huge_bytes(0x7F0000800000, smaps) == 0  # the end is outside
    assert machine.anon_huge_bytes(0x1000, smaps) == 0  # no such mapping
    assert machine.anon_huge_bytes(0x7F0000200000, tmp_path / "absent") == 0


@pytest.mark.parametrize("damaged", [
    SMAPS.replace("7f0000000000-", "7f000000000g-"),  # a range that is no number
    SMAPS.replace("AnonHugePages:      4096 kB", "AnonHugePages:"),  # no figure
    SMAPS.replace("AnonHugePages:      4096 kB", "AnonHugePages: many kB"),
])
def test_a_malformed_smaps_is_an_error(tmp_path: Path, damaged: str) -> None:
    smaps = tmp_path / "smaps"
    smaps.write_text(damaged)
    with pytest.raises(ValueError):
        machine.anon_huge_bytes(0x7F0000200000, smaps)


def test_a_process_start_time_is_read_past_a_name_with_spaces(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    later = " ".join(str(n) for n in range(4, 52))  # fields 4 to 51 of proc(5); 22 reads 22
    (tmp_path / "42" / "stat").write_text(f"42 (a) odd (name)) S {later}\n")
    assert machine.process_stat_fields(42, tmp_path)[0] == "S"
    assert machine.process_start_ticks(42, tmp_path) == 22
    (tmp_path / "43").mkdir()
    (tmp_path / "43" / "stat").write_text("43 (cut short) S 1 2\n")
    assert machine.process_start_ticks(43, tmp_path) is None
    assert machine.process_start_ticks(44, tmp_path) is None  # no such process
    assert machine.process_start_ticks(os.getpid()) is not None


def test_a_library_built_from_another_revision_is_named_by_it(tmp_path: Path) -> None:
    """`make before` builds an older revision inside the checkout: the
    checkout's HEAD says nothing of that library, the REVISION file the
    build leaves beside its lib/ folder does."""
    from hugeheap.campaign.versions import BUILT_REVISION, hugeheap_revision

    library = tmp_path / "before" / "lib" / "libhugeheap.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    assert "not built in a git checkout" in hugeheap_revision(str(library))
    (tmp_path / "before" / BUILT_REVISION).write_text("c062d79, built by make before\n")
    assert hugeheap_revision(str(library)).endswith("(c062d79, built by make before)")


def test_the_build_names_the_commit_it_linked_the_library_from() -> None:
    """The checkout's HEAD moves on after a build (a commit of docs while a
    campaign runs): the build writes the commit it linked the library from
    beside lib/, and the label is that commit."""
    from hugeheap.campaign.versions import BUILT_REVISION, hugeheap_revision
    from hugeheap.measure.allocators import REPO_ROOT

    library = REPO_ROOT / "build" / "lib" / "libhugeheap.so"
    if not library.exists() or not (REPO_ROOT / ".git").exists():
        pytest.skip("no library built in a git checkout (make build)")
    built = (library.resolve().parent.parent / BUILT_REVISION).read_text().strip()
    commit = built.removesuffix("-dirty")
    assert subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", f"{commit}^{{commit}}"],
                          capture_output=True).returncode == 0, built
    assert hugeheap_revision(str(library)).endswith(f"({built})")
