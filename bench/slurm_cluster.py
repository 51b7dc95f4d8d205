"""A real single-node Slurm cluster on this machine, for bench/slurm_overhead.py
and for the tests of the Slurm executor: munged, slurmctld and slurmd
(Debian's munge and slurm-wlm) with a generated slurm.conf naming this host as
the only node with its real CPUs and memory (as `slurmd -C` reports them),
ProctrackType=proctrack/linuxproc, TaskPlugin=task/none, SlurmUser=root, and
its key, sockets, state and logs in a directory of its own. The daemons run in
the foreground as our children and are stopped by their pids. Needs root."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol", "srun")
START_WITHIN_S = 60.0


def unavailable() -> str | None:
    """Why no cluster can be started here; None when one can."""
    if os.geteuid() != 0:
        return "a test Slurm cluster needs root (slurmd runs jobs as their users)"
    missing = [p for p in (*DAEMONS, *CLIENTS) if shutil.which(p) is None]
    if missing:
        return (f"{', '.join(missing)} not installed (Debian packages slurm-wlm and munge; "
                "`make` installs them as root)")
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalSlurm:
    """A cluster of one node: start() it, point SLURM_CONF at .conf, stop() it."""

    def __init__(self) -> None:
        # munged wants every directory above its socket searchable by all:
        # pytest's temporary directories are not, so this one is made here.
        self.root = Path(tempfile.mkdtemp(prefix="hugeheap-slurm-"))
        self.root.chmod(0o755)
        self.conf = self.root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.daemons: list[subprocess.Popen[bytes]] = []
        self.node = socket.gethostname()
        self.partition = "debug"

    def start(self) -> None:
        try:
            self._start_munge()
            self._write_conf()
            self._daemon(["slurmctld", "-D", "-i", "-f", str(self.conf)], "slurmctld")
            self._daemon(["slurmd", "-D", "-f", str(self.conf)], "slurmd")
            self._wait_for_idle_node()
        except BaseException:
            self.stop()
            raise

    def _start_munge(self) -> None:
        keys = self.root / "munge"
        keys.mkdir(mode=0o700)
        key = keys / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        (self.root / "socket").mkdir(mode=0o755)
        self.munge_socket = self.root / "socket" / "munge.socket"
        self._daemon(["munged", "--foreground", f"--socket={self.munge_socket}",
                      f"--key-file={key}", f"--pid-file={keys / 'munged.pid'}",
                      f"--seed-file={keys / 'munged.seed'}", f"--log-file={keys / 'munged.log'}"],
                     "munged")
        deadline = time.monotonic() + START_WITHIN_S
        while not self.munge_socket.exists():
            self._check_alive()
            assert time.monotonic() < deadline, "munged made no socket"
            time.sleep(0.05)

    def _write_conf(self) -> None:
        hardware = subprocess.run(["slurmd", "-C"], capture_output=True, text=True,
                                  check=True).stdout.splitlines()[0]
        words = [w for w in hardware.split() if not w.startswith(("NodeName=", "UpTime="))]
        for name in ("state", "spool", "log"):
            (self.root / name).mkdir()
        self.conf.write_text("\n".join([
            "ClusterName=hugeheaptest",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "MpiDefault=none",
            "ReturnToService=2",
            f"StateSaveLocation={self.root / 'state'}",
            f"SlurmdSpoolDir={self.root / 'spool'}",
            f"SlurmctldPidFile={self.root / 'slurmctld.pid'}",
            f"SlurmdPidFile={self.root / 'slurmd.pid'}",
            f"SlurmctldLogFile={self.root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={self.root / 'log' / 'slurmd.log'}",
            f"NodeName={self.node} NodeAddr=127.0.0.1 {' '.join(words)} State=UNKNOWN",
            f"PartitionName={self.partition} Nodes={self.node} Default=YES MaxTime=INFINITE "
            "State=UP",
            ""]))

    def _daemon(self, argv: list[str], name: str) -> None:
        log = open(self.root / f"{name}.out", "wb")
        self.daemons.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=self.env))
        log.close()

    def _check_alive(self) -> None:
        for daemon in self.daemons:
            if daemon.poll() is not None:
                name = Path(str(daemon.args[0])).name
                output = (self.root / f"{name}.out").read_text(errors="replace")
                raise RuntimeError(f"{name} exited ({daemon.returncode}): {output[-2000:]}")

    def _wait_for_idle_node(self) -> None:
        deadline = time.monotonic() + START_WITHIN_S
        while True:
            self._check_alive()
            state = subprocess.run(["sinfo", "--noheader", "--format=%T"], capture_output=True,
                                   text=True, env=self.env).stdout.split()
            if state == ["idle"]:
                return
            assert time.monotonic() < deadline, f"the node is not idle: {state}"
            time.sleep(0.2)

    def command(self, *argv: str) -> str:
        return subprocess.run(list(argv), capture_output=True, text=True, check=True,
                              env=self.env).stdout

    def stop(self) -> None:
        """Cancels every job, then stops the daemons by their pids, newest first."""
        if self.daemons and all(d.poll() is None for d in self.daemons):
            subprocess.run(["scancel", "--full", "--user=root"], env=self.env,
                           capture_output=True, timeout=30)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and self.command(
                    "squeue", "--noheader", "--format=%A").strip():
                time.sleep(0.2)
        for daemon in reversed(self.daemons):
            if daemon.poll() is None:
                daemon.terminate()
                try:
                    daemon.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    daemon.kill()
                    daemon.wait()
        self.daemons.clear()
        shutil.rmtree(self.root, ignore_errors=True)
