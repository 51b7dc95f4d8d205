"""A campaign's runs for other programs: CSV with one row per run, and
BenchExec result XML (one file per tool and mode) that BenchExec's
table-generator reads."""

from __future__ import annotations

import csv
import datetime
import io
import os
import xml.etree.ElementTree as ET
from dataclasses import asdict, fields
from pathlib import Path

from ..campaign.answers.adapters import TOOL_INFO
from ..campaign.store import RunRecord
from ..errors import HarnessError
from ..files import check_writable, write_whole
from .analysis import Analysis, Cell

_DOCTYPE = ('<!DOCTYPE result PUBLIC "+//IDN sosy-lab.org//DTD BenchExec result 3.0//EN" '
            '"https://www.sosy-lab.org/benchexec/result-3.0.dtd">')


def write_csv(analysis: Analysis, path: Path) -> None:
    """Every run, with its verdict as judged (contradicted answers are `wrong`)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=[f.name for f in fields(RunRecord)])
    writer.writeheader()
    for record in analysis.runs:
        writer.writerow(asdict(record))
    write_whole(path, text.getvalue())


def _status(cell: Cell) -> tuple[str, str]:
    """BenchExec's status and category of a cell: as BenchExec gave them where
    a tool-info module read the runs (unless hugeheap found its answer wrong
    against another mode's)."""
    if cell.benchexec and not (cell.verdict == "wrong" and
                               cell.benchexec["category"] != "wrong"):
        return cell.benchexec["status"], cell.benchexec["category"]
    if cell.verdict == "wrong":
        return cell.verdict, "wrong"
    if cell.status == "timeout":
        return "TIMEOUT", "error"
    if cell.status == "memout":
        return "OUT OF MEMORY", "error"
    if cell.status in ("error", "signal"):
        return f"ERROR ({cell.status})", "error"
    if cell.solved_cputime is None:
        return cell.verdict, "unknown"
    # Solved; BenchExec calls a result without an expected verdict "missing".
    return cell.verdict, "missing"


def _task(cell: Cell, directory: Path) -> dict[str, str]:
    """A run's task as BenchExec's result files name it: its file and input
    files relative to the result file, its property and expected verdict,
    so that table-generator finds them and computes the score."""
    task = cell.benchexec or {}
    where = directory.resolve()
    if not task.get("task"):
        attributes = {"name": cell.instance, "files": "[]"}
    else:
        inputs = ", ".join(os.path.relpath(f, where) for f in task.get("inputs", []))
        attributes = {"name": os.path.relpath(task["task"], where), "files": f"[{inputs}]"}
    if task.get("property"):
        attributes["properties"] = task["property"]
        attributes["propertyFile"] = os.path.relpath(task["property_file"], where)
        if task.get("expected"):
            attributes["expectedVerdict"] = task["expected"]
    return attributes


def check_benchexec_folder(directory: Path, option: str) -> None:
    """HarnessError now if the BenchExec files could not be written into
    directory later: it is a file, or the folder it would be made in is not
    there (only the named folder itself is made)."""
    if directory.exists() and not directory.is_dir():
        raise HarnessError(f"{option} {directory}: is a file, not a folder")
    if not directory.exists():
        check_writable(directory, option)


def write_benchexec(analysis: Analysis, directory: Path) -> list[Path]:
    """One result file per tool and mode; each run is the median over the
    campaign's repetitions (a `repetitions` column says how many). The
    folder is made if it is not there (its parent must be)."""
    check_benchexec_folder(directory, "--benchexec")
    directory.mkdir(exist_ok=True)
    latest = analysis.machine[-1] if analysis.machine else {}
    started = latest.get("started") or datetime.datetime.now(datetime.UTC).isoformat()
    written = []
    for tool in analysis.tools:
        for mode in analysis.modes:
            cells = [analysis.cells[(tool, mode, i)] for i in analysis.instances
                     if (tool, mode, i) in analysis.cells]
            if not cells:
                continue
            version = latest.get("tools", {}).get(tool, {}).get("version", "")
            # A tool-info module's tool: table-generator may load the module.
            adapter = analysis.commands.get(tool, ([], ""))[1]
            module = adapter[len(TOOL_INFO):] if adapter.startswith(TOOL_INFO) else "hugeheap"
            result = ET.Element("result", {
                "benchmarkname": analysis.name, "name": f"{analysis.name}.{tool}.{mode}",
                "date": started, "starttime": started, "tool": tool, "version": str(version),
                "generator": "hugeheap report", "toolmodule": module,
                "options": f"allocator mode {mode}",
                "timelimit": f"{analysis.cpu_limit:g}s", "cpuCores": str(latest.get("cpu_count",
                                                                                    "-"))})
            columns = ET.SubElement(result, "columns")
            for title in ("status", "cputime", "walltime", "memory"):
                ET.SubElement(columns, "column", {"title": title})
            system = ET.SubElement(result, "systeminfo",
                                   {"hostname": str(latest.get("hostname", "unknown"))})
            ET.SubElement(system, "os", {"name": f"Linux {latest.get('kernel', '')}"})
            ET.SubElement(system, "cpu", {"model": str(latest.get("cpu_model", "")),
                                          "cores": str(latest.get("cpu_count", ""))})
            ET.SubElement(system, "ram", {"size": f"{latest.get('memory_bytes') or 0}B"})
            for cell in cells:
                status, category = _status(cell)
                run = ET.SubElement(result, "run", _task(cell, directory))
                values = {"status": status, "category": category}
                # What was measured, whatever the status (a timeout's time
                # past the limit too); nothing where nothing was measured.
                if cell.measured_cputime is not None:
                    values["cputime"] = f"{cell.measured_cputime}s"
                values["walltime"] = f"{cell.walltime}s"
                values["repetitions"] = str(cell.repetitions)
                if cell.memory_peak is not None:
                    values["memory"] = f"{cell.memory_peak}B"
                if cell.user is not None and cell.system is not None:
                    values["cputime-user"] = f"{cell.user}s"
                    values["cputime-system"] = f"{cell.system}s"
                if cell.huge_share is not None:
                    values["hugepage-share"] = f"{cell.huge_share:.4f}"
                for title, value in values.items():
                    ET.SubElement(run, "column", {"title": title, "value": value})
            ET.indent(result)
            path = directory / f"{analysis.name}.{tool}.{mode}.results.xml"
            text = '<?xml version="1.0" ?>\n' + _DOCTYPE + "\n" + ET.tostring(result,
                                                                               "unicode")
            write_whole(path, text + "\n")
            written.append(path)
    return written
