"""bench/rounds.py, the shuffled rounds the harness-overhead scripts measure
in: every configuration once per round, in an order that changes from round
to round and that a seed repeats, with samples kept in round order."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rounds import run_rounds


def recording(calls: list[tuple[str, int]]) -> dict[str, Callable[[int], float]]:
    """Configurations that note each call (name, round) and return a sample
    that says which round and configuration it came from."""
    def configuration(name: str, value: float) -> Callable[[int], float]:
        def measure(index: int) -> float:
            calls.append((name, index))
            return value + index
        return measure
    return {name: configuration(name, value)
            for name, value in (("a", 100.0), ("b", 200.0), ("c", 300.0), ("d", 400.0))}


def test_every_configuration_runs_once_per_round_in_shuffled_orders() -> None:
    calls: list[tuple[str, int]] = []
    measured = run_rounds(recording(calls), 12, seed=7)
    assert [index for _, index in calls] == [i for i in range(12) for _ in range(4)]
    assert [name for name, _ in calls] == [name for order in measured.orders for name in order]
    assert all(sorted(order) == ["a", "b", "c", "d"] for order in measured.orders)
    # Four configurations have 24 orders: twelve rounds in one order would be a fixed order.
    assert len({tuple(order) for order in measured.orders}) > 1
    assert measured.samples["b"] == [200.0 + i for i in range(12)]  # round order, not call order
    assert measured.median("c") == pytest.approx(305.5)
    assert measured.medians()["a"] == pytest.approx(105.5)


def test_a_seed_repeats_its_orders_and_another_seed_gives_others() -> None:
    def orders(seed: int) -> list[list[str]]:
        return run_rounds(recording([]), 8, seed=seed).orders
    assert orders(3) == orders(3)
    assert orders(3) != orders(4)


def test_nothing_to_measure_is_refused() -> None:
    with pytest.raises(ValueError, match="no configurations"):
        run_rounds({}, 3)
    with pytest.raises(ValueError, match="0 rounds"):
        run_rounds({"a": lambda index: 1.0}, 0)
