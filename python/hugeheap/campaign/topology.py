"""Which cores parallel runs get: whole physical cores each (hyper-threading
siblings never split between runs), and never spread over two NUMA nodes
when one can hold the run, as BenchExec assigns them.

The machine is read by measure.machine; the assignment itself is a pure
function of a Topology, so that tests can hand it machines that are not this
one."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import HarnessError
from ..measure import machine
from ..measure.machine import Cpu


@dataclass
class Topology:
    cpus: list[Cpu]

    def physical_cores(self) -> list[tuple[int, int, list[int]]]:
        """(node, package, logical cpus) per physical core, in a stable order."""
        cores: dict[tuple[int, int, int], list[int]] = {}
        for cpu in self.cpus:
            cores.setdefault((cpu.node, cpu.package, cpu.core), []).append(cpu.number)
        return [(node, package, sorted(cpus))
                for (node, package, _), cpus in sorted(cores.items())]


def read_machine(allowed: set[int] | None = None) -> Topology:
    """This machine's CPUs that this process may use (or those of allowed)."""
    return Topology(machine.cpus(allowed))


def assign_cores(topology: Topology, jobs: int) -> list[list[int]]:
    """Splits the physical cores into `jobs` disjoint sets of logical CPUs, as
    equal as the machine allows, keeping each set within one NUMA node (and
    package) where the cores divide evenly. More jobs than physical cores is
    an error, not a slowdown."""
    cores = topology.physical_cores()
    if jobs < 1:
        raise HarnessError("--jobs must be at least 1")
    if jobs > len(cores):
        raise HarnessError(f"--jobs {jobs}: this machine has only {len(cores)} physical cores "
                           "available, and runs must not share one")
    per_job = len(cores) // jobs
    # Group cores by NUMA node, then fill jobs node by node so that a job
    # crosses nodes only when a node's cores do not divide evenly.
    by_node: dict[int, list[tuple[int, int, list[int]]]] = {}
    for core in cores:
        by_node.setdefault(core[0], []).append(core)
    assignment: list[list[int]] = []
    leftovers: list[tuple[int, int, list[int]]] = []
    for node in sorted(by_node):
        node_cores = by_node[node]
        while len(node_cores) >= per_job and len(assignment) < jobs:
            chosen, node_cores = node_cores[:per_job], node_cores[per_job:]
            assignment.append(sorted(cpu for _, _, cpus in chosen for cpu in cpus))
        leftovers.extend(node_cores)
    while len(assignment) < jobs:  # only with uneven nodes: take what is left
        chosen, leftovers = leftovers[:per_job], leftovers[per_job:]
        assignment.append(sorted(cpu for _, _, cpus in chosen for cpu in cpus))
    return assignment
