"""The generated blocks of the docs: between a line `<!-- results:NAME -->`
and a line `<!-- /results:NAME -->` in docs/*.md, the notebook's entries
(docs/notebook/*.md) or README.md stand the
tables of the campaign packed in published/NAME (markdown.py makes them);
between `<!-- results:NAME by-instance -->` and `<!-- /results:NAME -->`,
its table with a row per tool and instance (by_instance.py makes it);
between `<!-- results:families NAME[=FAMILY] ... -->` (or, for a campaign
of several families, NAME=TOOL:FAMILY,...) and `<!-- /results:families -->`,
one table of hugeheap on every family, each family's campaign packed in
published/NAME (families.py makes it); between
`<!-- results:NAME ratio A/B:FIGURE ... -->` and `<!-- /results:NAME -->`,
the ratios between two tools of a campaign that compares tools rather than
modes, and between `<!-- results:NAME figures -->` and its end, the figures
its tools measured of themselves (tool_blocks.py makes both).
`hugeheap results docs` (`make results`) writes them anew; --check, and the
tests, say which differ from their data."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ..errors import HarnessError
from ..files import write_whole
from .analysis import Analysis
from .by_instance import BY_INSTANCE, instance_block
from .families import family_block
from .markdown import markdown
from .packed import FAMILIES, PUBLISHED, Packed, load, published
from .tool_blocks import FIGURES, RATIO, figures_block, ratio_block

# a block's first line: its name, and for a table of families the campaigns
_START = re.compile(r"<!--\s*results:(\S+)((?:\s+(?!-->)\S+)*)\s*-->")
_END = re.compile(r"<!--\s*/results:(\S+)\s*-->")


def documents(root: Path) -> list[Path]:
    """The files whose blocks are generated: docs/*.md, the notebook's
    entries (a measurement moved there keeps its table) and README.md."""
    found = sorted((root / "docs").glob("*.md")) + sorted((root / "docs" / "notebook").glob("*.md"))
    readme = root / "README.md"
    return found + [readme] if readme.is_file() else found


def rewrite(text: str, where: str, make: Callable[[str], str]) -> str:
    """text with each block's lines made anew by make(WORDS), WORDS the
    marker's words after `results:` (NAME, or `families` and its
    campaigns), one space apart; where: the file's name in errors.
    HarnessError naming the line of a marker without its end, an end without
    its marker, or a block inside another."""
    lines = text.split("\n")
    result: list[str] = []
    open_at: tuple[str, int] | None = None  # the name and line of the block we are in
    for number, line in enumerate(lines, 1):
        start, end = _START.fullmatch(line.strip()), _END.fullmatch(line.strip())
        if start and open_at:
            raise HarnessError(f"{where}:{number}: a results block begins inside the block "
                               f"of {open_at[0]} (line {open_at[1]}); end that one first "
                               f"with <!-- /results:{open_at[0]} -->")
        if start:
            name = start.group(1)
            open_at = (name, number)
            try:
                result += [line, make(" ".join([name, *start.group(2).split()]))]
            except HarnessError as error:
                raise HarnessError(f"{where}:{number}: {error}") from None
        elif end:
            if open_at is None or end.group(1) != open_at[0]:
                raise HarnessError(f"{where}:{number}: <!-- /results:{end.group(1)} --> ends "
                                   f"no block: <!-- results:{end.group(1)} --> must come "
                                   "before it")
            open_at = None
            result.append(line)
        elif open_at is None:
            result.append(line)
    if open_at:
        raise HarnessError(f"{where}:{open_at[1]}: <!-- results:{open_at[0]} --> has no end: "
                           f"add a line <!-- /results:{open_at[0]} --> after its block")
    return "\n".join(result)


def _maker(root: Path) -> Callable[[str], str]:
    """make(WORDS) for rewrite(): the block of published/NAME, or the table
    of families; each campaign read once."""
    loaded: dict[str, tuple[Packed, Analysis]] = {}

    def campaign(name: str) -> tuple[Packed, Analysis]:
        if name not in loaded:
            loaded[name] = load(published(root, name))
        return loaded[name]

    def make(words: str) -> str:
        name, *rest = words.split()
        if name == FAMILIES:
            return family_block(rest, campaign)
        if rest == [BY_INSTANCE]:
            return instance_block(*campaign(name), f"{PUBLISHED}/{name}")
        if rest and rest[0] == FIGURES:
            return figures_block(*campaign(name), f"{PUBLISHED}/{name}", rest[1:])
        if rest and rest[0] == RATIO:
            return ratio_block(*campaign(name), f"{PUBLISHED}/{name}", rest[1:])
        if rest:
            raise HarnessError(f"<!-- results:{name} {' '.join(rest)} -->: unknown words; a "
                               f"block is <!-- results:NAME --> (a campaign's tables), "
                               f"<!-- results:NAME {BY_INSTANCE} --> (its table per instance), "
                               f"<!-- results:NAME {FIGURES} --> (its tools' own figures), "
                               f"<!-- results:NAME {RATIO} A/B:FIGURE ... --> (ratios between "
                               f"its tools) or <!-- results:{FAMILIES} NAME NAME ... --> "
                               "(several campaigns)")
        return markdown(*campaign(name), f"{PUBLISHED}/{name}")
    return make


def regenerated(root: Path) -> dict[Path, tuple[str, str]]:
    """Each document of the checkout at root: (as it is, as the data of its
    generated blocks makes it)."""
    if not (root / "docs").is_dir():
        raise HarnessError(f"{root}: not the top of a hugeheap checkout (no docs/ in it); run "
                           "this there, or give --root")
    make = _maker(root)
    found = {}
    for path in documents(root):
        text = path.read_text()
        found[path] = (text, rewrite(text, str(path.relative_to(root)), make))
    return found


def stale(root: Path) -> list[Path]:
    """The documents whose generated blocks differ from their data."""
    return [path for path, (now, made) in regenerated(root).items() if now != made]


def refresh(root: Path) -> list[Path]:
    """Writes every generated block anew; returns the documents changed."""
    changed = []
    for path, (now, made) in regenerated(root).items():
        if now != made:
            write_whole(path, made)
            changed.append(path)
    return changed
