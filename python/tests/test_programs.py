"""One lookup finds the program of every command (measure/programs.py): the
command line's (`hugeheap run`, `hugeheap compare`) and a suite's tools and
generators. Each way a program cannot run is its own message with its own
fix, the same wherever the program was named; PATH is read from the
environment the lookup is given."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hugeheap.campaign.suite_file import load
from hugeheap.errors import HarnessError
from hugeheap.measure.programs import ProgramNotFound, find_program
from hugeheap.measure.runner import resolve_command


def program(folder: Path, name: str, mode: int = 0o755) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return path


def test_a_program_is_found_in_the_path_it_is_given(tmp_path: Path) -> None:
    found = program(tmp_path / "bin", "my-solver")
    assert find_program("my-solver", environ={"PATH": str(tmp_path / "bin")}) == str(found)
    with pytest.raises(ProgramNotFound):
        find_program("my-solver", environ={"PATH": str(tmp_path / "elsewhere")})


def test_a_path_is_relative_to_the_folder_given_else_kept_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = program(tmp_path / "build", "tool")
    (tmp_path / "link").symlink_to(real)
    # A suite's program: absolute, its links resolved (each run starts elsewhere).
    assert find_program("./link", tmp_path) == str(real)
    # The command line's: relative to the current folder, the word as written.
    monkeypatch.chdir(tmp_path)
    assert find_program("./link") == "./link"
    assert resolve_command(["./link", "x"]) == "./link"


@pytest.mark.parametrize(("word", "why", "fix"), [
    ("no-such-tool", "'no-such-tool' is not installed (not found in PATH)",
     "build or install it (Debian: apt-get install no-such-tool), or give its path"),
    ("plain", "'plain' in PATH is not executable ({bin}/plain)", "make it executable (chmod +x)"),
    ("./absent", "'./absent' does not exist ({here}/absent)", "fix the path"),
    ("./plain", "'./plain' is not executable ({here}/plain)", "make it executable (chmod +x)"),
])
def test_each_way_a_program_cannot_run_has_its_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, word: str, why: str, fix: str) -> None:
    """The same words from the lookup, from `hugeheap run`'s resolve_command
    and from a suite's tool (with the suite's own way out added)."""
    program(tmp_path / "bin", "plain", 0o644)
    program(tmp_path / "here", "plain", 0o644)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.chdir(tmp_path / "here")
    why = why.format(bin=tmp_path / "bin", here=tmp_path / "here")
    with pytest.raises(ProgramNotFound) as caught:
        find_program(word)
    assert (caught.value.why, caught.value.fix) == (why, fix)
    with pytest.raises(HarnessError) as caught:
        resolve_command([word])
    assert str(caught.value) == f"{why}; {fix}"
    suite = tmp_path / "here" / "suite.toml"
    suite.write_text(f'[campaign]\nmodes = ["system"]\n[limits]\ncpu_time = "1s"\n'
                     f'[tools.t]\ncommand = "{word} {{instance}}"\n'
                     f'[instances]\nfiles = ["suite.toml"]\n')
    with pytest.raises(HarnessError) as caught:
        load(suite)
    assert str(caught.value) == (f"{suite}:6: tool 't': {why}; {fix} (or mark the tool "
                                 "optional = true)")


def test_the_path_is_the_environments_given() -> None:
    assert os.environ.get("PATH")  # sh is found in this process's PATH, not in an empty one
    find_program("sh")
    with pytest.raises(ProgramNotFound, match="'sh' is not installed"):
        find_program("sh", environ={"PATH": ""})
