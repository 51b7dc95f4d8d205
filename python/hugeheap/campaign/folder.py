"""The campaign folder: where everything of one campaign lives. Its layout
is spelled here and nowhere else; the other modules ask a CampaignFolder for
the path of what they read or write.

    results.sqlite   one committed row per finished run (store.py), and the
                     campaign's facts (CampaignMeta) in its meta table
    suite.toml       the suite as first run
    machine.json     the machine at the start of each session (a list)
    instances/       the generated instances (instances.py)
    outputs/         every run's output, and its model, gzip-compressed
    slurm/           the files a Slurm campaign shares with its tasks
                     (slurm/files.py describes the inside)
    .harness.lock    held by the one `hugeheap bench` running the campaign

Nothing else is made in the folder, and nothing outside it."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import HarnessError
from ..files import write_whole
from .store import RunKey, Store


def group_prefix(directory: Path) -> str:
    """The name every cgroup (and Slurm job array) of the campaign in
    directory starts with, so that a later harness finds what a killed one
    left running."""
    digest = hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:10]
    return f"hugeheap_c{digest}"


def output_name(key: RunKey) -> str:
    """Where a run's compressed output goes, relative to outputs/ (the
    RunRecord keeps this name)."""
    tool, instance, mode, repetition = key
    return f"{tool}/{mode}/{instance.replace('/', '__')}.r{repetition}.log.gz"


def model_name(output: str) -> str:
    """Where the model a run wrote goes, beside its output."""
    return output.replace(".log.gz", ".model.gz")


@dataclass
class CampaignMeta:
    """What a campaign is, as the first session of it stored it: the report
    reads it, and a later session must have the same identity."""
    identity: dict[str, Any]  # what makes two campaigns comparable (coordinator.identity)
    suite_name: str
    baseline: str  # the first mode
    cpu_limit_s: float
    tools: list[str]
    modes: list[str]
    # the instances each tool runs on; empty in campaigns stored before
    # tools could run on some instances only (each ran on all)
    tool_instances: dict[str, list[str]] = field(default_factory=dict)

    def save(self, store: Store) -> None:
        for key, value in asdict(self).items():
            store.set_meta(key, value if isinstance(value, str) else json.dumps(value))

    @classmethod
    def load(cls, store: Store) -> CampaignMeta | None:
        """The campaign's facts; None in a store no session has started yet."""
        identity = store.meta("identity")
        if identity is None:
            return None
        path = store.path
        try:
            return cls(identity=json.loads(identity),
                       suite_name=store.meta("suite_name") or path.parent.name,
                       baseline=store.meta("baseline") or "",
                       cpu_limit_s=float(store.meta("cpu_limit_s") or 0),
                       tools=json.loads(store.meta("tools") or "[]"),
                       modes=json.loads(store.meta("modes") or "[]"),
                       tool_instances=json.loads(store.meta("tool_instances") or "{}"))
        except ValueError as error:
            raise HarnessError(f"{path}: its campaign facts do not read ({error}); the "
                               "file is damaged") from None


class CampaignFolder:
    """The folder of one campaign (it need not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def results(self) -> Path:
        return self.path / "results.sqlite"

    @property
    def suite_copy(self) -> Path:
        return self.path / "suite.toml"

    @property
    def machine_record(self) -> Path:
        return self.path / "machine.json"

    @property
    def instances(self) -> Path:
        return self.path / "instances"

    @property
    def outputs(self) -> Path:
        return self.path / "outputs"

    @property
    def slurm(self) -> Path:
        return self.path / "slurm"

    def group_prefix(self) -> str:
        return group_prefix(self.path)

    def lock(self) -> FolderLock:
        """Makes the folder (and its parents) and holds it against a second
        `hugeheap bench`; HarnessError naming the one that holds it."""
        if self.path.exists() and not self.path.is_dir():
            raise HarnessError(f"{self.path}: is a file, not a campaign folder")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise HarnessError(f"{self.path}: cannot make the campaign folder "
                               f"({error.strerror})") from None
        return FolderLock(self.path / ".harness.lock")

    def clear_partials(self) -> None:
        """Removes what a harness killed while writing it left half-written
        (outputs being compressed, instances being generated)."""
        for partial in [*self.outputs.rglob("*.partial"), *self.instances.glob(".*.partial")]:
            partial.unlink()

    def open_store(self, readonly: bool = False) -> Store:
        return Store(self.results, readonly)

    def sessions(self) -> list[dict[str, Any]]:
        """The machine at the start of each session, oldest first; empty when
        none was recorded; HarnessError for a record that does not read."""
        path = self.machine_record
        try:
            text = path.read_text()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as error:
            raise HarnessError(f"{path}: cannot read it ({error})") from None
        try:
            sessions = json.loads(text)
        except json.JSONDecodeError as error:
            sessions = error
        if not isinstance(sessions, list) or not all(isinstance(s, dict) for s in sessions):
            why = (f"{sessions.msg} at character {sessions.pos}"
                   if isinstance(sessions, json.JSONDecodeError) else "not a list of sessions")
            raise HarnessError(f"{path}: not a campaign's machine record ({why}); move it "
                               "away to go on without the earlier sessions' machine facts")
        return sessions

    def add_session(self, machine: dict[str, Any]) -> None:
        write_whole(self.machine_record, json.dumps([*self.sessions(), machine], indent=1))

    def end_session(self, facts: dict[str, Any]) -> None:
        """Adds facts read at the end of the latest session to its record."""
        sessions = self.sessions()
        if sessions:
            sessions[-1].update(facts)
            write_whole(self.machine_record, json.dumps(sessions, indent=1))


class FolderLock:
    """An exclusive lock on a campaign folder, with the holder's pid in it."""

    def __init__(self, path: Path) -> None:
        self.file: IO[str] = open(path, "a+")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.file.seek(0)
            holder = self.file.read().strip() or "?"
            self.file.close()
            raise HarnessError(f"{path.parent}: another hugeheap bench (pid {holder}) is "
                               "running this campaign; wait for it or stop it first") from None
        self.file.seek(0)
        self.file.truncate()
        self.file.write(str(os.getpid()))
        self.file.flush()

    def release(self) -> None:
        self.file.close()
