"""When a run's steal time is worth a warning: the time the host of a virtual
machine gave the run's CPUs to other work while it ran (machine.steal_seconds
before and after), which its wall time contains and its CPU time does not.
The runner warns by it; the report counts the runs it would have warned of."""

from __future__ import annotations

# Steal time over this share of a run's wall time, and at least 0.1 s (ten
# of /proc/stat's ticks, so that one tick in a short run is not news), is
# said in a warning: the host of this virtual machine ran other work on the
# run's CPUs meanwhile.
STEAL_WARNING_SHARE = 0.05
STEAL_WARNING_MIN_S = 0.1


def steal_is_notable(steal: float | None, walltime: float) -> bool:
    """Whether a run lost enough of its wall time to steal to say so."""
    return steal is not None and steal >= STEAL_WARNING_MIN_S and \
        steal > STEAL_WARNING_SHARE * walltime


def steal_warning(steal: float, walltime: float) -> str:
    return (f"the host of this virtual machine took {steal:.2f} s of the run's CPUs for other "
            f"work during its {walltime:.2f} s (steal time, {steal / walltime:.0%}): its wall "
            "time is longer by up to that much, and its CPU time may be too (a busy host "
            "shares caches); compare runs made side by side")
