"""The documentation's links and names: every link from README.md and
docs/ (the notebook included) to a heading or a file of the repository
leads somewhere, and none leads out of the repository (the docs speak of
the repository only); every repository path that README.md and docs/*.md
name in backticks or links exists, and so does every `make TARGET` they
name. The notebook (docs/notebook/) records commands as they were run, so
only its links are checked."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CURRENT = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
DOCS = [*CURRENT, *sorted((ROOT / "docs" / "notebook").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```", re.S)
SPAN = re.compile(r"`([^`\n]+)`")
# a path that starts at a folder of the repository; build/ and the like are
# made by the build, not committed, and are not checked
PATH = re.compile(r"(?<![\w./$-])((?:alloc|bench|cmake|docs|python|scripts|suites|workloads)"
                  r"/[\w./*{},<>-]*)")
MAKE = re.compile(r"(?<![\w-])make((?: +[a-z][\w-]*)+)")
TARGET = re.compile(r"^([\w.-]+(?: [\w.-]+)*):(?!=)", re.M)


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


def code(text: str) -> list[str]:
    """What a page sets as code: spans in backticks, fenced blocks and
    indented lines (the commands)."""
    return SPAN.findall(CODE.sub("", text)) + CODE.findall(text) + \
        re.findall(r"^(?: {4}|\t).*$", CODE.sub("", text), re.M)


def named_paths(text: str) -> set[str]:
    """The repository paths a page names as code or in links (a link's own
    target is checked by broken())."""
    spans = code(text) + LINK.findall(text)
    found = set()
    for span in spans:
        for path in PATH.findall(span):
            found.add(re.sub(r"(:\d+)?[.,:;)]*$", "", path.partition("#")[0]))
    return found


def as_glob(path: str) -> str:
    """A named path as a glob: {a,b}, <name> and a placeholder in capitals
    (suites/paper/FAMILY.toml) stand for any name."""
    path = re.sub(r"\{[^}]*\}|<[^>]*>", "*", path)
    return "/".join("*" if re.fullmatch(r"[A-Z][A-Z0-9_]*", part) else
                    re.sub(r"^[A-Z][A-Z0-9_]+(?=[.-])", "*", part) for part in path.split("/"))


def missing_paths(path: Path, root: Path = ROOT) -> list[str]:
    found = []
    for named in sorted(named_paths(path.read_text(encoding="utf-8"))):
        pattern = as_glob(named.rstrip("/"))
        if not next(iter(root.glob(pattern)), None):
            found.append(f"{named}: no such path")
    return found


def make_targets(makefile: Path) -> set[str]:
    text = makefile.read_text(encoding="utf-8")
    return {t for line in TARGET.findall(text) for t in line.split()}


def missing_targets(path: Path, root: Path = ROOT) -> list[str]:
    blocks = code(path.read_text(encoding="utf-8"))
    targets = make_targets(root / "Makefile")
    named = {t for block in blocks for m in MAKE.findall(block) for t in m.split()}
    return [f"make {t}: no such target" for t in sorted(named - targets)]


def test_every_link_of_the_docs_leads_somewhere_inside() -> None:
    problems = {str(p.relative_to(ROOT)): broken(p) for p in DOCS}
    assert not {k: v for k, v in problems.items() if v}


def test_every_path_and_make_target_the_docs_name_exists() -> None:
    problems = {str(p.relative_to(ROOT)): missing_paths(p) + missing_targets(p) for p in CURRENT}
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


def test_the_check_finds_a_path_or_target_that_is_gone(tmp_path: Path) -> None:
    (tmp_path / "suites" / "paper").mkdir(parents=True)
    (tmp_path / "suites" / "paper" / "sat.toml").write_text("")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "Makefile").write_text(".PHONY: demo\ndemo: build\n\tdo it\nX := 1\n")
    page = tmp_path / "README.md"
    page.write_text("Run `suites/paper/sat.toml`, `suites/paper/FAMILY.toml` and\n"
                    "`suites/{paper,real}/sat.toml`, `scripts/`, `make demo`, `build/x`;\n"
                    "[gone](scripts/gone.py) `python3 bench/old.py --fast`.\n\n"
                    "    make demo && make bench\n")
    assert missing_paths(page, tmp_path) == ["bench/old.py: no such path",
                                             "scripts/gone.py: no such path"]
    assert missing_targets(page, tmp_path) == ["make bench: no such target"]
