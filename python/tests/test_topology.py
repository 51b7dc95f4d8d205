import pytest

from hugeheap.campaign.topology import Topology, assign_cores, read_machine
from hugeheap.errors import HarnessError
from hugeheap.measure.machine import Cpu


def one_socket_two_cores() -> Topology:
    return Topology([Cpu(0, 0, 0, 0), Cpu(1, 0, 1, 0)])


def two_sockets_with_hyperthreading() -> Topology:
    # Linux numbering: first threads of all cores, then their siblings.
    cpus = []
    for thread in range(2):
        for package in range(2):
            for core in range(2):
                cpus.append(Cpu(thread * 4 + package * 2 + core, package, core, package))
    return Topology(cpus)


def uneven_nodes() -> Topology:
    return Topology([Cpu(0, 0, 0, 0), Cpu(1, 0, 1, 0), Cpu(2, 0, 2, 0), Cpu(3, 1, 0, 1)])


def test_one_socket_two_cores() -> None:
    assert assign_cores(one_socket_two_cores(), 1) == [[0, 1]]
    assert assign_cores(one_socket_two_cores(), 2) == [[0], [1]]


def test_more_jobs_than_cores_is_an_error() -> None:
    with pytest.raises(HarnessError, match="only 2 physical cores"):
        assign_cores(one_socket_two_cores(), 3)
    with pytest.raises(HarnessError, match="only 4 physical cores"):
        assign_cores(two_sockets_with_hyperthreading(), 5)


def test_hyperthreading_siblings_stay_together_and_sockets_apart() -> None:
    topology = two_sockets_with_hyperthreading()
    assert assign_cores(topology, 2) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    assert assign_cores(topology, 4) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert assign_cores(topology, 3) == [[0, 4], [1, 5], [2, 6]]


def test_uneven_nodes() -> None:
    topology = uneven_nodes()
    assert assign_cores(topology, 4) == [[0], [1], [2], [3]]
    two = assign_cores(topology, 2)
    assert two[0] == [0, 1]  # a whole node's share first
    assert sorted(two[1]) == [2, 3]  # the rest only as a last resort spans nodes
    assert assign_cores(topology, 1) == [[0, 1, 2, 3]]  # one job: the whole machine


def test_jobs_never_share_a_cpu() -> None:
    for topology in (one_socket_two_cores(), two_sockets_with_hyperthreading(), uneven_nodes()):
        for jobs in range(1, len(topology.physical_cores()) + 1):
            sets = assign_cores(topology, jobs)
            flat = [cpu for s in sets for cpu in s]
            assert len(sets) == jobs and len(flat) == len(set(flat))


def test_this_machine() -> None:
    topology = read_machine()
    assert topology.cpus
    assert assign_cores(topology, 1)
