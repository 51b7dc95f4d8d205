"""The documentation's links: every link from README.md and docs/*.md to a
heading or a file of the repository leads somewhere, and none leads out of
the repository (the docs speak of the repository only)."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", re.S)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = CODE.sub("", path.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6} (.*)$", text, re.M)}


def links(path: Path) -> list[str]:
    return LINK.findall(CODE.sub("", path.read_text(encoding="utf-8")))


def broken(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for target in links(path):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        where = (path.parent / file).resolve() if file else path
        if not where.is_relative_to(root):
            found.append(f"{target}: outside the repository")
        elif not where.exists():
            found.append(f"{target}: no such file")
        elif anchor and where.suffix == ".md" and anchor not in anchors(where):
            found.append(f"{target}: no such heading")
    return found


def test_every_link_of_the_docs_leads_somewhere_inside() -> None:
    problems = {str(p.relative_to(ROOT)): broken(p) for p in DOCS}
    assert not {k: v for k, v in problems.items() if v}


def test_the_check_finds_what_is_broken(tmp_path: Path) -> None:
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    (tmp_path / "README.md").write_text("# Read me\n")
    page.write_text("# Title\n\n## Kept `here`\n\n```\n# not a heading\n```\n\n"
                    "[a](#kept-here) [b](../README.md#read-me) [c](https://example.org)\n"
                    "[d](#gone) [e](#not-a-heading) [f](missing.md) [g](../../outside.md)\n")
    assert broken(page, tmp_path) == [
        "#gone: no such heading", "#not-a-heading: no such heading",
        "missing.md: no such file", "../../outside.md: outside the repository"]
