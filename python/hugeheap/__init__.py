"""hugeheap: measure reasoners the way BenchExec does, with the allocator
injected into the measured tool alone."""

__version__ = "0.1.0"
