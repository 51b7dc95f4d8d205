"""A finished campaign packed for the repository: what a published figure is
made from, committed under published/NAME/ (published/README.md describes
the form to its readers). Three files, text all:

    runs.csv        one row per run: the columns of `hugeheap report --csv`
                    (campaign/store.py's RunRecord), verdicts as judged
    campaign.json   the campaign's facts (CampaignMeta), the machine record
                    of each session, the libhugeheap each hugeheap mode ran
                    (its version with the commit, and its sha256), the
                    command that reproduces the campaign, and its date
    suite.toml      the suite as the campaign first ran it

The outputs, instances and models stay behind in the campaign folder. A
packed campaign reads back as the same Analysis as its folder gives."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..campaign.folder import CampaignFolder, CampaignMeta
from ..campaign.store import LATER_COLUMNS, RunRecord
from ..errors import HarnessError
from ..files import write_whole
from ..measure.allocators import REPO_ROOT
from .analysis import Analysis, analyse, analyse_runs
from .export import write_csv

RUNS = "runs.csv"
FACTS = "campaign.json"
SUITE = "suite.toml"
PUBLISHED = "published"  # the folder of packed campaigns, in the checkout
FAMILIES = "families"  # the docs' block of several campaigns: no campaign's name
FORMAT = 1  # campaign.json's "format": raised when a change would mislead an older reader
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass
class Packed:
    """The facts of a packed campaign beside its runs."""
    name: str
    command: str  # what reproduces the campaign, as the person who packed it gave it
    date: str  # when its first session started (ISO 8601, UTC)
    # the hugeheap libraries its modes preloaded, by mode: {"version", "sha256"}
    libraries: dict[str, dict[str, str | None]]
    campaign: CampaignMeta
    machine: list[dict[str, Any]]  # each session's machine record, oldest first


def check_name(name: str) -> str:
    """name, if it can name a packed campaign (a folder and a docs marker)."""
    if not _NAME.fullmatch(name):
        raise HarnessError(f"'{name}' cannot name packed results: use letters, digits, "
                           "'.', '_' and '-', starting with a letter or digit")
    return name


def _libraries(meta: CampaignMeta, machine: list[dict[str, Any]]) -> dict[str, dict[str,
                                                                                   str | None]]:
    """The libhugeheap of each mode that preloaded one: the version (with the
    commit of its checkout) the latest session recorded, the sha256 the
    campaign's identity holds."""
    allocators = machine[-1].get("allocators", {}) if machine else {}
    digests = meta.identity.get("libraries", {})
    return {mode: {"version": allocators[mode].get("version"), "sha256": digests.get(mode)}
            for mode in meta.modes
            if str(allocators.get(mode, {}).get("like", "")).startswith("hugeheap")}


def pack(directory: Path, into: Path, name: str, command: str,
         tools: list[str] | None = None) -> Packed:
    """Packs the finished campaign in directory into into/name (made, or its
    files replaced); tools: only these of its tools (a campaign `hugeheap
    bench --tools` ran in part), packed as a campaign of them alone.
    HarnessError for a folder that is no campaign or a campaign with runs
    missing."""
    check_name(name)
    if name == FAMILIES:
        raise HarnessError(f"'{FAMILIES}' names the docs' table of several campaigns "
                           "(<!-- results:families ... -->): give the campaign another name")
    if not command.strip():
        raise HarnessError("--command: give the command that reproduces the campaign")
    analysis = analyse(directory, tools)
    if analysis.missing_runs:
        raise HarnessError(f"{directory}: the campaign is not finished ({analysis.missing_runs} "
                           "runs missing); run `hugeheap bench` on it again, then pack it"
                           + ("" if tools else ", or pack the tools it ran with --tools"))
    assert analysis.meta is not None  # analyse() reads it from the store
    started = [str(s["started"]) for s in analysis.machine if s.get("started")]
    date = started[0] if started else min(r.start_time for r in analysis.runs)
    packed = Packed(name, command.strip(), date, _libraries(analysis.meta, analysis.machine),
                    analysis.meta, analysis.machine)
    target = into / name
    if target.exists() and not target.is_dir():
        raise HarnessError(f"{target}: is a file, not a folder of packed results")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise HarnessError(f"{target}: cannot make the folder ({error.strerror})") from None
    write_csv(analysis, target / RUNS)
    write_whole(target / RUNS, inside_checkout((target / RUNS).read_text()))
    suite = CampaignFolder(directory).suite_copy
    if suite.is_file():
        write_whole(target / SUITE, suite.read_text())
    else:  # the folder kept none: no older campaign's suite stays beside these runs
        (target / SUITE).unlink(missing_ok=True)
    facts = {"format": FORMAT, **asdict(packed)}
    write_whole(target / FACTS,
                inside_checkout(json.dumps(facts, indent=1, sort_keys=True) + "\n"))
    return packed


def inside_checkout(text: str, checkout: Path = REPO_ROOT) -> str:
    """text with the paths inside the checkout the campaign ran from made
    relative to it (the library a mode preloaded, say): published data
    names no folder of the machine that measured it."""
    return text.replace(f"{checkout}/", "")


def published(root: Path, name: str) -> Path:
    """The folder of the packed campaign name in the checkout at root;
    HarnessError in one line if there is none."""
    check_name(name)
    folder = root / PUBLISHED / name
    if not is_packed(folder):
        raise HarnessError(f"no packed campaign '{name}' ({PUBLISHED}/{name}/{FACTS} is "
                           f"missing); pack one with `hugeheap results pack CAMPAIGN_DIR "
                           f"{name}`")
    return folder


def is_packed(folder: Path) -> bool:
    return (folder / FACTS).is_file()


def load(folder: Path) -> tuple[Packed, Analysis]:
    """The packed campaign in folder and its figures; HarnessError naming the
    file for a folder without one or a damaged one."""
    facts_path = folder / FACTS
    if not facts_path.is_file():
        raise HarnessError(f"{folder}: no packed results here (no {FACTS}); pack a finished "
                           "campaign with `hugeheap results pack CAMPAIGN_DIR NAME`")
    try:
        facts = json.loads(facts_path.read_text())
        if facts.get("format") != FORMAT:
            raise HarnessError(f"{facts_path}: packed in format {facts.get('format')}, this "
                               f"hugeheap reads format {FORMAT}")
        packed = Packed(facts["name"], facts["command"], facts["date"], facts["libraries"],
                        CampaignMeta(**facts["campaign"]), facts["machine"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise HarnessError(f"{facts_path}: not packed results ({type(error).__name__}: "
                           f"{error})") from None
    runs = read_runs(folder / RUNS)
    if not runs:
        raise HarnessError(f"{folder / RUNS}: no runs in it")
    return packed, analyse_runs(packed.campaign, runs, packed.machine, None)


def analyse_folder(folder: Path) -> Analysis:
    """The figures of a campaign folder or of packed results."""
    return load(folder)[1] if is_packed(folder) else analyse(folder)


def _typed(kind: str, text: str) -> Any:
    """A CSV cell as the RunRecord field of that kind (an annotation's text)
    holds it: empty is None where the field may be None."""
    if text == "" and "None" in kind:
        return None
    base = kind.split(" |")[0]
    if base == "bool":
        if text not in ("True", "False"):
            raise ValueError(f"'{text}' is not True or False")
        return text == "True"
    return {"int": int, "float": float}.get(base, str)(text)


def read_runs(path: Path) -> list[RunRecord]:
    """The runs of runs.csv (as export.write_csv wrote them)."""
    kinds = {f.name: str(f.type) for f in fields(RunRecord)}
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            given = reader.fieldnames or []
            # a column the store gained later may be missing: packed before it
            missing = [name for name in kinds if name not in given and name not in LATER_COLUMNS]
            unknown = [name for name in given if name not in kinds]
            if missing or unknown:
                raise ValueError("; ".join(f"{what}: {', '.join(names)}" for what, names in
                                           (("columns missing", missing),
                                            ("unknown columns", unknown)) if names))
            runs = []
            for row in reader:
                if None in row or None in row.values():
                    raise ValueError(f"line {reader.line_num} has not {len(kinds)} cells")
                runs.append(RunRecord(**{name: _typed(kinds[name], row.get(name, ""))
                                         for name in kinds}))
            return runs
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing; pack the campaign again") from None
    except (OSError, ValueError, csv.Error) as error:
        raise HarnessError(f"{path}: not a packed campaign's runs ({error})") from None
