import pytest

from hugeheap.errors import HarnessError
from hugeheap.measure.units import parse_cpu_list, parse_duration, parse_names, parse_size


@pytest.mark.parametrize("text,seconds", [("90s", 90), ("15m", 900), ("1.5h", 5400),
                                          ("250ms", 0.25), ("30", 30), (" 2 s ", 2)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--cpu-limit") == pytest.approx(seconds)


@pytest.mark.parametrize("text,size", [("4GiB", 4 << 30), ("512MB", 512_000_000), ("1000", 1000),
                                       ("1.5MiB", 3 << 19), ("2kib", 2048)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text, "--mem-limit") == size


def test_cpu_lists() -> None:
    assert parse_cpu_list("0,1", "--cores") == [0, 1]
    assert parse_cpu_list("0-3,6", "--cores") == [0, 1, 2, 3, 6]
    # The kernel's format (cpuset.cpus, node cpulist), with its newline; empty is empty.
    assert parse_cpu_list("0-3,8,10-11\n", "cpulist") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpu_list("\n", "cpuset.cpus") == []


@pytest.mark.parametrize("bad", ["", "abc", "10x", "-5s", "0", "1e3"])
def test_bad_durations_name_the_option(bad: str) -> None:
    with pytest.raises(HarnessError, match="--wall-limit"):
        parse_duration(bad, "--wall-limit")


@pytest.mark.parametrize("bad", ["", "4 GiBs", "lots", "0", "-1MB"])
def test_bad_sizes_name_the_option(bad: str) -> None:
    with pytest.raises(HarnessError, match="--mem-limit"):
        parse_size(bad, "--mem-limit")


@pytest.mark.parametrize("bad", ["a", "3-1", "1,,2"])
def test_bad_cores_name_the_option(bad: str) -> None:
    with pytest.raises(HarnessError, match="--cores"):
        parse_cpu_list(bad, "--cores")


@pytest.mark.parametrize("text, names", [("minisat", ["minisat"]),
                                         (" b , a,,c ", ["b", "a", "c"]), (",", [])])
def test_names_keep_their_order_without_blanks(text: str, names: list[str]) -> None:
    assert parse_names(text) == names
