"""Named configurations measured in rounds, each round running every
configuration once in an order shuffled afresh (seeded, so that a run of a
script can be repeated order for order): drift of the machine, a cache
warmed by whoever ran before, a neighbour's load, hits every configuration
alike instead of always the one that runs first. The harness-overhead
scripts beside this one (harness_overhead.py, campaign_overhead.py,
slurm_overhead.py) measure through it.

A campaign shuffles the modes of a block the same way (campaign/plan.py, a
random.Random per block seeded with a string); the orders here are seeded
"SEED/ROUND" likewise."""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Rounds:
    """What run_rounds measured: per configuration its samples in round
    order (so that sample i of two configurations come from the same round),
    and the order each round ran them in."""
    samples: dict[str, list[float]]
    orders: list[list[str]]

    def median(self, name: str) -> float:
        return statistics.median(self.samples[name])

    def medians(self) -> dict[str, float]:
        return {name: statistics.median(values) for name, values in self.samples.items()}


def run_rounds(configurations: Mapping[str, Callable[[int], float]], rounds: int,
               seed: int | str = 1) -> Rounds:
    """Call every configuration once per round, the round's index its
    argument (to name its scratch files), in an order shuffled per round;
    each call returns its sample (seconds, say). ValueError if there is no
    configuration or fewer than one round."""
    if not configurations:
        raise ValueError("run_rounds: no configurations to measure; name at least one")
    if rounds < 1:
        raise ValueError(f"run_rounds: {rounds} rounds; ask for 1 or more")
    samples: dict[str, list[float]] = {name: [] for name in configurations}
    orders = []
    for index in range(rounds):
        order = list(configurations)
        random.Random(f"{seed}/{index}").shuffle(order)
        for name in order:
            samples[name].append(configurations[name](index))
        orders.append(order)
    return Rounds(samples, orders)
