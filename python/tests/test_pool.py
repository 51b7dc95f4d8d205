"""`hugeheap pool`: the 2 MiB hugetlb pool read from fixture machines (a fake
/sys/kernel/mm/hugepages tree, a fake /proc/meminfo), its errors on them,
and, as root on a kernel with hugetlb, a small real pool reserved, shown and
released through the command; the pool and its advice in `hugeheap doctor`.
Every test that changes the real pool puts nr_hugepages back, failed or not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hugeheap_cli import SETPRIV, cli, cli_as_nobody

from hugeheap.errors import HarnessError
from hugeheap.measure import firsttouch, hugetlb, machine

MIB = 2**20
POOL_FILES = ("nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages")


def fake_hugepages(tmp_path: Path, counts: tuple[int, int, int, int] = (5, 3, 1, 0)) -> Path:
    """A /sys/kernel/mm/hugepages with a 2 MiB pool of these counts (total,
    free, reserved, surplus) and a 1 GiB pool beside it that must not count."""
    root = tmp_path / "hugepages"
    for folder, values in (("hugepages-2048kB", counts), ("hugepages-1048576kB", (9, 9, 9, 9))):
        (root / folder).mkdir(parents=True)
        for name, value in zip(POOL_FILES, values, strict=True):
            (root / folder / name).write_text(f"{value}\n")
    return root


def fake_meminfo(tmp_path: Path, available_kb: int = 6_000_000,
                 page_kb: int = 2048) -> Path:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:        8000000 kB\nMemAvailable:    {available_kb} kB\n"
                       "HugePages_Total:       7\nHugePages_Free:        6\n"
                       "HugePages_Rsvd:        2\nHugePages_Surp:        1\n"
                       f"Hugepagesize:       {page_kb} kB\n")
    return meminfo


def pool_pages(root: Path) -> int:
    return int((root / "hugepages-2048kB" / "nr_hugepages").read_text())


# ------------------------------------------------ the pool read from fixtures

def test_the_pool_is_read_from_sysfs(tmp_path: Path) -> None:
    pool = machine.hugetlb_pool(fake_hugepages(tmp_path), fake_meminfo(tmp_path))
    assert pool == machine.HugetlbPool(total=5, free=3, reserved=1, surplus=0)
    assert pool.available == 2  # free, less the pages promised to mappings


def test_without_sysfs_the_pool_is_read_from_meminfo(tmp_path: Path) -> None:
    absent = tmp_path / "no-hugepages"
    assert machine.hugetlb_pool(absent, fake_meminfo(tmp_path)) == machine.HugetlbPool(7, 6, 2, 1)
    # A sysfs figure that cannot be read is no figure: meminfo's count.
    root = fake_hugepages(tmp_path)
    (root / "hugepages-2048kB" / "free_hugepages").write_text("many\n")
    assert machine.hugetlb_pool(root, fake_meminfo(tmp_path)).total == 7  # type: ignore[union-attr]
    # meminfo counts the default size's pool: of 1 GiB pages, it says nothing of 2 MiB ones.
    other = tmp_path / "other"
    other.mkdir()
    assert machine.hugetlb_pool(absent, fake_meminfo(other, page_kb=1048576)) is None
    assert machine.hugetlb_pool(absent, tmp_path / "no-meminfo") is None


def test_status_on_a_fixture_machine(tmp_path: Path) -> None:
    root, meminfo, state = fake_hugepages(tmp_path), fake_meminfo(tmp_path), tmp_path / "s.json"
    found = hugetlb.status(root, meminfo, state)
    assert (found["supported"], found["total"], found["free"], found["reserved"],
            found["surplus"], found["available"]) == (True, 5, 3, 1, 0, 2)
    assert found["hugeheap"] is None and found["problem"] is None
    state.write_text(json.dumps({"before_pages": 3, "added_pages": 2, "reserved_at": "then",
                                 "write_ms": 4.1, "first_touch_ms": 0.25,
                                 "measured_pages": 2}))
    assert hugetlb.status(root, meminfo, state)["hugeheap"]["first_touch_ms"] == 0.25
    # A record that is not hugeheap's is named, not raised: doctor shows it.
    state.write_text('{"before_pages": "three"}')
    assert "not hugeheap's record" in hugetlb.status(root, meminfo, state)["problem"]
    with pytest.raises(HarnessError, match="not hugeheap's record"):
        hugetlb.reserve(2 * MIB, root, meminfo, state)
    assert pool_pages(root) == 5


# ---------------------------------------------- errors, before or after asking

def test_a_kernel_without_hugetlb_is_named(tmp_path: Path) -> None:
    root = tmp_path / "hugepages"
    (root / "hugepages-1048576kB").mkdir(parents=True)  # another size only
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable: 6000000 kB\n")
    for attempt in (lambda: hugetlb.reserve(4 * MIB, root, meminfo, tmp_path / "s.json"),
                    lambda: hugetlb.release(root, meminfo, tmp_path / "s.json")):
        (tmp_path / "s.json").write_text(json.dumps(
            {"before_pages": 0, "added_pages": 2, "reserved_at": "then"}))
        with pytest.raises(HarnessError) as raised:
            attempt()
        assert "this kernel has no pool of 2 MiB huge pages" in str(raised.value)
        assert "\n" not in str(raised.value)
    assert hugetlb.status(root, meminfo, tmp_path / "none.json")["supported"] is False


def test_a_kernel_that_grants_fewer_pages_gets_them_back(tmp_path: Path) -> None:
    root, meminfo, state = fake_hugepages(tmp_path), fake_meminfo(tmp_path), tmp_path / "s.json"
    asked = []

    def kernel_granting_at_most_6(pages: int, pool_dir: Path) -> int:
        """A kernel whose free memory holds one more 2 MiB piece than the 5 it has."""
        asked.append(pages)
        return hugetlb.set_pool_pages(min(pages, 6), pool_dir)

    with pytest.raises(HarnessError) as raised:
        hugetlb.reserve(6 * MIB, root, meminfo, state, kernel_granting_at_most_6)
    message = str(raised.value)
    assert "the kernel granted only 1 of the 3 pages of 2 MiB asked" in message
    assert "hugeheap gave those back" in message and "compact_memory" in message
    assert asked == [8, 5] and pool_pages(root) == 5  # back to what it was
    assert not state.exists()


def test_more_than_the_memory_available_is_refused(tmp_path: Path) -> None:
    root, state = fake_hugepages(tmp_path), tmp_path / "s.json"
    with pytest.raises(HarnessError, match=r"1.0 GiB is more than the memory available now "
                                           r"\(98 MiB\); ask for less"):
        hugetlb.reserve(2**30, root, fake_meminfo(tmp_path, available_kb=100_000), state)
    assert pool_pages(root) == 5 and not state.exists()


def test_a_size_that_is_no_size() -> None:
    done = cli("pool", "reserve", "lots")
    assert done.returncode == 2
    assert done.stderr == ("hugeheap: pool reserve: 'lots' is not a size (examples: 4GiB, "
                           "512MB, 1000000)\n")


def test_doctor_advises_a_pool_where_fresh_huge_pages_cost_more() -> None:
    lazy = {"fresh_huge_ms": 5.62, "recycled_huge_ms": 0.15, "small_pages_ms": 1.06,
            "huge_pages_backed": True}
    empty = {"supported": True, "available": 0}
    said = hugetlb.advice(lazy, empty)
    assert said == ("a fresh huge page costs 5.62 ms here against 1.06 ms for 512 small pages, "
                    "and no huge-page pool is free: reserve one (`sudo hugeheap pool reserve "
                    "2GiB`) and run with HUGEHEAP_THP=hugetlb")
    assert hugetlb.advice(lazy, {"supported": True, "available": 3}) is None  # a pool is free
    assert hugetlb.advice(lazy, {"supported": False, "available": None}) is None
    assert hugetlb.advice({**lazy, "fresh_huge_ms": 0.5}, empty) is None  # as on bare metal
    assert hugetlb.advice({**lazy, "huge_pages_backed": False}, empty) is None  # THP gave none
    assert hugetlb.advice({"note": "not measured"}, empty) is None


# --------------------------------------------------------- the real pool

def real_pages() -> int:
    return int((machine.hugetlb_pool_dir() / "nr_hugepages").read_text())


def test_reserve_status_release_of_a_real_pool(real_pool: int) -> None:
    reserved = cli("pool", "reserve", "4MiB")
    assert reserved.returncode == 0, reserved.stderr
    assert reserved.stdout.startswith("reserved 2 pages of 2 MiB (4 MiB); wrote the ")
    assert real_pages() == real_pool + 2
    record = json.loads(hugetlb.STATE_FILE.read_text())
    assert (record["before_pages"], record["added_pages"]) == (real_pool, 2)
    assert record["write_ms"] > 0 and record["first_touch_ms"] > 0  # every free page written
    assert record["measured_pages"] >= 2

    shown = cli("pool", "status", "--json")
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    assert status["total"] == real_pool + 2 and status["free"] >= 2
    assert status["hugeheap"] == record
    text = cli("pool", "status").stdout
    assert f"{record['first_touch_ms']:.3f} ms per 2 MiB for a new process" in text
    if SETPRIV is not None:  # anyone may look
        seen = cli_as_nobody("pool", "status", "--json")
        assert seen.returncode == 0, seen.stderr
        assert json.loads(seen.stdout)["hugeheap"] == record

    doctor = json.loads(cli("doctor", "--json").stdout)["pool"]
    assert doctor["total"] == real_pool + 2 and doctor["advice"] is None  # a pool is free

    released = cli("pool", "release")
    assert released.returncode == 0, released.stderr
    assert released.stdout.startswith(f"gave back 2 pages: the pool went from {real_pool + 2} "
                                      f"to {real_pool} pages")
    assert real_pages() == real_pool and not hugetlb.STATE_FILE.exists()
    again = cli("pool", "release")
    assert again.returncode == 0
    assert again.stdout.startswith("nothing reserved by hugeheap (no ")


HOLDER = f"""
import mmap, sys
pages = mmap.mmap(-1, 2 * 2**20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | {
    firsttouch.MAP_HUGETLB})
pages[0] = 1
print("holding", flush=True)
sys.stdin.read()
"""


def test_release_says_how_many_pages_stay_in_use(real_pool: int) -> None:
    assert cli("pool", "reserve", "4MiB").returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        released = cli("pool", "release")
        assert released.returncode == 0, released.stderr
        assert "\n1 of them are in use by running processes: surplus pages now" in \
            released.stdout
        pool = machine.hugetlb_pool()
        assert pool is not None and pool.total == real_pool + 1 and pool.surplus >= 1
        assert not hugetlb.STATE_FILE.exists()
    finally:
        holder.communicate("", timeout=30)
    assert real_pages() == real_pool  # the kernel freed the surplus page with its process


def test_reserve_needs_root(real_pool: int) -> None:
    if SETPRIV is None:
        pytest.skip("no setpriv (util-linux) to run the command as another user")
    done = cli_as_nobody("pool", "reserve", "4MiB")
    assert done.returncode == 2
    assert done.stderr == ("hugeheap: pool reserve: needs root (it writes "
                           f"{machine.hugetlb_pool_dir() / 'nr_hugepages'}); run it with "
                           "sudo\n")
    assert real_pages() == real_pool and not hugetlb.STATE_FILE.exists()
    nothing = cli_as_nobody("pool", "release")  # nothing reserved: nothing to refuse
    assert nothing.returncode == 0 and nothing.stdout.startswith("nothing reserved by hugeheap")
