"""The package's layout shows its data flow: three wings (measure -> campaign
-> report), each importing only the wings below it, a thin command line on
top, and no import cycles anywhere (imports inside functions count too)."""

from __future__ import annotations

import ast
from pathlib import Path

import hugeheap

PACKAGE = Path(hugeheap.__file__).parent
# What a module may import, by where it lives: the shared base (errors,
# files) imports only the base; a wing imports the base and wings below.
LEVEL = {"base": 0, "measure": 1, "campaign": 2, "report": 3, "cli": 4}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """The hugeheap modules a file imports, anywhere in it."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hugeheap"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("hugeheap"):
                continue
            for alias in node.names:  # `from . import machine` imports a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in MODULES else target)
    return {m for m in found if m in MODULES}


def level_of(module: str) -> int:
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in LEVEL:
        return LEVEL[parts[1]]
    return LEVEL["base"] if module != "hugeheap.cli" else LEVEL["cli"]


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports_of(path) for name, path in MODULES.items()}


def test_the_three_wings_exist() -> None:
    wings = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert wings == {"measure", "campaign", "report"}
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "cli", "errors", "files"}


def test_a_wing_imports_only_the_wings_below_it() -> None:
    wrong = [f"{module} imports {target}" for module, targets in GRAPH.items()
             for target in targets if level_of(target) > level_of(module)]
    assert wrong == []


def test_no_import_cycles() -> None:
    state: dict[str, str] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for target in sorted(GRAPH[module]):
            if target == module or target == "hugeheap":
                continue
            if state.get(target) == "open":
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_the_checker_sees_imports() -> None:
    """The checks above would pass on a graph they could not read."""
    assert "hugeheap.measure.runner" in GRAPH["hugeheap.campaign.worker"]
    assert "hugeheap.measure.machine" in GRAPH["hugeheap.measure.runner"]
    assert "hugeheap.campaign.store" in GRAPH["hugeheap.report.analysis"]
    assert "hugeheap.report.packed" in GRAPH["hugeheap.cli"]  # an import inside a function


# One parser for each kind of input: the module that reads it, and the
# modules that hand it their input rather than reading it again.
PARSERS = {
    "hugeheap.measure.programs": {"hugeheap.measure.runner", "hugeheap.campaign.suite_commands",
                                  "hugeheap.campaign.suite_instances"},  # a command's program
    "hugeheap.campaign.modes": {"hugeheap.campaign.compare",
                                "hugeheap.campaign.suite_file"},  # a list of allocator modes
    "hugeheap.campaign.remote": {"hugeheap.campaign.suite_instances"},  # an entry naming a file
    "hugeheap.campaign.toml_checker": {"hugeheap.campaign.suite_file",
                                       "hugeheap.campaign.remote"},  # a mistake in a TOML file
    "hugeheap.report.packed": {"hugeheap.report.markdown",
                               "hugeheap.report.blocks"},  # a packed campaign (published/)
}


def test_each_kind_of_input_has_one_parser() -> None:
    missing = [f"{user} does not import {parser}" for parser, users in PARSERS.items()
               for user in sorted(users) if parser not in GRAPH[user]]
    assert missing == []


# The top level of a campaign folder, as campaign/folder.py lays it out.
FOLDER_ENTRIES = {"results.sqlite", "suite.toml", "machine.json", "instances", "outputs",
                  "slurm", ".harness.lock"}


def test_the_campaign_folder_is_laid_out_in_one_module() -> None:
    """Only campaign/folder.py joins a path with an entry of the campaign
    folder; every other module asks it (CampaignFolder)."""
    owner = PACKAGE / "campaign" / "folder.py"
    spelled = [f"{path.relative_to(PACKAGE)}:{node.lineno} / {node.right.value!r}"
               for path in MODULES.values() if path != owner
               for node in ast.walk(ast.parse(path.read_text()))
               if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
               and isinstance(node.right, ast.Constant) and node.right.value in FOLDER_ENTRIES]
    assert spelled == []
    assert any(isinstance(node, ast.BinOp) and isinstance(node.right, ast.Constant)
               and node.right.value == "results.sqlite"
               for node in ast.walk(ast.parse(owner.read_text())))


MODULE_LINES = 500  # a module longer than this holds more than one concern


def test_every_module_is_short_enough_to_hold_one_concern() -> None:
    long = {module_name(path): len(path.read_text().splitlines())
            for path in PACKAGE.rglob("*.py")
            if len(path.read_text().splitlines()) >= MODULE_LINES}
    assert not long, f"split these by concern: {long}"
