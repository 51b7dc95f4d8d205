"""`hugeheap doctor --slurm`: whether this machine can run campaigns on a Slurm
cluster: the client commands, the controller and its partitions, and what a
node of the partition offers the tasks (run there with srun: the same Python
and hugeheap, and whether a run can get a cgroup of its own)."""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

from ...errors import HarnessError
from . import commands

PROBE_WAIT_S = 60.0  # how long the probe may wait for a node


def diagnose(partition: str | None) -> dict[str, Any]:
    info: dict[str, Any] = {"sbatch": shutil.which("sbatch"), "cluster": None,
                            "partitions": [], "probed_partition": None, "node": None,
                            "problems": []}
    problems: list[str] = info["problems"]
    problem = commands.client_problem()
    if problem:
        problems.append(problem)
        return info
    try:
        info["cluster"] = commands.config().get("ClusterName")
        found = commands.partitions()
    except HarnessError as error:
        problems.append(str(error))
        return info
    info["partitions"] = [{"name": p.name, "up": p.up, "nodes": p.nodes, "default": p.default,
                           "time_limit_s": p.time_limit_s} for p in found]
    chosen = partition or next((p.name for p in found if p.default), None)
    if chosen is None or chosen not in {p.name for p in found}:
        problems.append(f"--partition {partition}: no such partition" if partition else
                        "no default partition: give --partition to probe a node")
        return info
    info["probed_partition"] = chosen
    command = [sys.executable, "-m", "hugeheap.campaign.slurm.task", "probe"]
    try:
        output = commands.run_on_a_node(command, [f"--partition={chosen}"], PROBE_WAIT_S)
        info["node"] = json.loads(output.strip().splitlines()[-1])
    except HarnessError as error:
        problems.append(f"{error} (the nodes need {sys.executable} with hugeheap, at the same "
                        "path or on the shared filesystem)")
    except (json.JSONDecodeError, IndexError):
        problems.append(f"the probe on a node printed no report: {output.strip()[-200:]!r}")
    else:
        if info["node"]["cgroups"] is None:
            problems.append("the node cannot make cgroups for runs ("
                            + "; ".join(info["node"]["cgroup_problems"]) + "): runs there are "
                            "measured with rusage and marked reliable: false")
    return info
