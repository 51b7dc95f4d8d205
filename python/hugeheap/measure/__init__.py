"""The measure wing: one run, measured as BenchExec measures it (a fresh
cgroup, CPU time of every process, the group's memory peak, kernel-enforced
limits), with the allocator injected into the tool alone; the machine's
facts; `hugeheap run` and `hugeheap doctor`. It imports no other wing."""
