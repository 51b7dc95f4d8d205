"""Every kind of mistake in a suite file is one clear error naming the file,
the line where there is one, and the fix; nothing runs before it is checked."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from hugeheap.campaign.compare import choose_modes
from hugeheap.campaign.remote import read_set
from hugeheap.campaign.suite_file import load
from hugeheap.errors import HarnessError

GOOD = """\
[campaign]
modes = ["system", "hugeheap"]
repetitions = 2

[limits]
cpu_time = "30s"
memory = "1GiB"

[tools.echo]
command = "sh -c 'cat {instance}' {instance}"
adapter = "exitcode"

[instances]
files = ["inst/*.cnf"]
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "inst").mkdir(exist_ok=True)
    (tmp_path / "inst" / "a.cnf").write_text("p cnf 1 1\n1 0\n")
    path = tmp_path / "suite.toml"
    path.write_text(text)
    return path


def fails(tmp_path: Path, text: str, *fragments: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(HarnessError) as caught:
        load(path)
    message = str(caught.value)
    assert "\n" not in message, "one line"
    for fragment in fragments:
        assert re.search(fragment, message), f"{fragment!r} not in {message!r}"
    return message


def test_a_good_suite_loads(tmp_path: Path) -> None:
    suite = load(write(tmp_path, GOOD))
    assert [m.name for m in suite.modes] == ["system", "hugeheap"] and suite.repetitions == 2
    assert suite.cpu_s == 30 and suite.wall_s == 60 and suite.memory_bytes == 2**30
    assert [t.name for t in suite.tools] == ["echo"] and suite.files[0][0] == "inst/a.cnf"


def test_toml_syntax_error_names_the_line(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('cpu_time = "30s"', 'cpu_time = "30s'),
          r"suite\.toml: not valid TOML: .*line 6", "toml.io")


def test_unknown_key_names_line_and_suggests(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace("repetitions = 2", "repetition = 2"),
          r"suite\.toml:3: unknown key 'repetition' in \[campaign\]",
          "did you mean 'repetitions'")
    fails(tmp_path, GOOD.replace('adapter = "exitcode"', 'adaptor = "exitcode"'),
          r"suite\.toml:11: unknown key 'adaptor' in \[tools\.echo\]", "'adapter'")


def test_missing_tool_program(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace("sh -c", "no-such-solver-xyz -c"),
          r"suite\.toml:10: tool 'echo': 'no-such-solver-xyz' is not installed",
          "apt-get install no-such-solver-xyz", "optional = true")


def test_optional_tool_that_is_missing_is_skipped(tmp_path: Path) -> None:
    text = GOOD + '\n[tools.ghost]\ncommand = "no-such-solver-xyz {instance}"\noptional = true\n'
    suite = load(write(tmp_path, text))
    assert [t.name for t in suite.tools] == ["echo"]
    assert suite.skipped_tools[0][0] == "ghost"


def test_a_program_named_by_an_environment_variable(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Another build of a tool, given when the campaign starts: skipped, saying
    so, where the variable is not set and the tool is optional."""
    old = tmp_path / "old" / "bin"
    old.mkdir(parents=True)
    (old / "tool").write_text("#!/bin/sh\n")
    (old / "tool").chmod(0o755)
    text = GOOD + '\n[tools.old]\ncommand = "$OLD_BUILD/bin/tool {instance}"\n'
    monkeypatch.delenv("OLD_BUILD", raising=False)
    fails(tmp_path, text, r"suite\.toml:\d+: tool 'old': the environment variable OLD_BUILD is "
          r"not set \(the program is \$OLD_BUILD/bin/tool\)",
          r"set OLD_BUILD \(or mark the tool optional = true\)")
    suite = load(write(tmp_path, text + "optional = true\n"))
    assert [t.name for t in suite.tools] == ["echo"]
    assert "OLD_BUILD is not set" in suite.skipped_tools[0][1]
    monkeypatch.setenv("OLD_BUILD", str(tmp_path / "old"))
    suite = load(write(tmp_path, text))
    assert suite.tools[1].program == str(old / "tool")


def test_the_environment_is_the_one_given(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The variables a glob or a program starts with, and the PATH programs
    are found in, come from the environment load is given (the harness's
    own by default), as machine.py's readers take the files they read."""
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "x.cnf").write_text("p cnf 1 1\n1 0\n")
    for program in (tmp_path / "tools" / "my-solver", tmp_path / "old" / "bin" / "tool"):
        program.parent.mkdir(parents=True)
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    for name in ("SAT_BENCH", "OLD_BUILD"):
        monkeypatch.delenv(name, raising=False)
    path = write(tmp_path, GOOD.replace("inst/*.cnf", "$SAT_BENCH/*.cnf")
                 + '[tools.mine]\ncommand = "my-solver {instance}"\n'
                 + '[tools.old]\ncommand = "$OLD_BUILD/bin/tool {instance}"\n')
    fails(tmp_path, path.read_text(), "tool 'mine': 'my-solver' is not installed")
    suite = load(path, environ={"PATH": f"{tmp_path / 'tools'}{os.pathsep}{os.environ['PATH']}",
                                "SAT_BENCH": str(bench), "OLD_BUILD": str(tmp_path / "old")})
    assert suite.files == [("bench/x.cnf", bench / "x.cnf")]
    assert {tool.name: tool.program for tool in suite.tools} == {
        "echo": shutil.which("sh"), "mine": str(tmp_path / "tools" / "my-solver"),
        "old": str(tmp_path / "old" / "bin" / "tool")}


def test_no_tools(tmp_path: Path) -> None:
    text = GOOD.split("[tools.echo]")[0] + '[instances]\nfiles = ["inst/*.cnf"]\n'
    fails(tmp_path, text, "names no tools", r"\[tools\.NAME\]")


def test_glob_that_matches_nothing(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace("inst/*.cnf", "inst/*.smt2"),
          r"suite\.toml:14: the glob 'inst/\*\.smt2' matches no file", "fix the pattern")


def test_mode_whose_library_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUGEHEAP_LIBRARY", str(tmp_path / "nowhere" / "libhugeheap.so"))
    fails(tmp_path, GOOD, r"suite\.toml:2: mode 'hugeheap' cannot run here",
          "libhugeheap.so not found", "remove it from modes")


def test_unknown_mode(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('"hugeheap"]', '"mimaloc"]'),
          r"suite\.toml:2: unknown allocator mode 'mimaloc'", "did you mean 'mimalloc'")


def test_bad_duration_and_size(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('"30s"', '"30 parsecs"'),
          r"suite\.toml:6: limits\.cpu_time: '30 parsecs' is not a duration", "90s")
    fails(tmp_path, GOOD.replace('"1GiB"', '"lots"'),
          r"suite\.toml:7: limits\.memory: 'lots' is not a size", "4GiB")


def test_missing_cpu_limit(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('cpu_time = "30s"\n', ""),
          r"suite\.toml:5: \[limits\] has no cpu_time", "PAR-2")


def test_bad_numbers(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace("repetitions = 2", "repetitions = 0"),
          r"suite\.toml:3: campaign\.repetitions = 0 is not a whole number of at least 1")


def test_command_without_instance_or_with_unknown_placeholder(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace("{instance}' {instance}", "x'"),
          r"suite\.toml:10: tools\.echo\.command does not say where the instance goes")
    fails(tmp_path, GOOD.replace("' {instance}", "' {input}"),
          r"suite\.toml:10: .*unknown placeholder \{input\}")


def test_unknown_adapter(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('"exitcode"', '"satcomp"'),
          r"suite\.toml:11: unknown adapter 'satcomp'", "regex:PATTERN")


def test_generators_are_checked(tmp_path: Path) -> None:
    base = GOOD.replace('files = ["inst/*.cnf"]\n', "")
    fails(tmp_path, base + '[[instances.generate]]\nname = "r.cnf"\n'
          'command = "echo {seed}"\nseeds = [1, 2]\n',
          r"suite\.toml:15: .*gives every seed the same name", r"put \{seed\}")
    fails(tmp_path, base + '[[instances.generate]]\nname = "r{seed}.cnf"\n'
          'command = "no-such-generator {seed}"\nseeds = [1]\n',
          r"suite\.toml:16: the generator 'no-such-generator' is not installed")


def test_no_instances(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('files = ["inst/*.cnf"]\n', ""),
          r"suite\.toml:13: the suite has no instances")


def test_modes_of_ones_own_are_checked(tmp_path: Path) -> None:
    own = GOOD.replace('modes = ["system", "hugeheap"]', 'modes = ["system", "mine"]')
    fails(tmp_path, own, r"suite.toml:2: unknown allocator mode 'mine'", r"\[allocators.NAME\]")
    fails(tmp_path, own + '[allocators.mine]\nlike = "hugehaep"\n',
          r":\d+: allocators.mine.like = 'hugehaep' is not a built-in mode")
    fails(tmp_path, own + '[allocators.mine]\nlike = "system"\nlibrary = "x.so"\n',
          "preloads no library")
    fails(tmp_path, own + '[allocators.mine]\nlike = "hugeheap"\nlibrary = "nowhere.so"\n',
          r"suite.toml:2: mode 'mine' cannot run here: allocators.mine: the library "
          r".*nowhere.so is not there")
    fails(tmp_path, own + '[allocators.mine]\nlike = "hugeheap"\nenvironment = { A = 1 }\n',
          "environment must be a table of strings")
    fails(tmp_path, own + '[allocators.mine]\nlike = "hugeheap"\nflavour = "x"\n',
          "unknown key 'flavour' in \\[allocators.mine\\]")
    fails(tmp_path, own + '[allocators.hugeheap]\nlike = "hugeheap"\n',
          "'hugeheap' is a built-in mode")


def test_a_mode_of_ones_own_loads(tmp_path: Path) -> None:
    library = tmp_path / "lib" / "libmine.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF")
    suite = load(write(tmp_path, GOOD.replace('"hugeheap"]', '"mine"]') + """
[allocators.mine]
like = "jemalloc"
library = "lib/libmine.so"
environment = { MALLOC_CONF = "thp:never" }
"""))
    mine = suite.modes[1]
    assert (mine.name, mine.like, mine.library) == ("mine", "jemalloc", str(library))
    assert mine.env == {"LD_PRELOAD": str(library), "MALLOC_CONF": "thp:never"}


def test_modes_given_in_place_of_the_suites(tmp_path: Path) -> None:
    """--modes: another list of modes, among them the suite's own; a mode of
    its own whose library is not there matters only where it is run."""
    text = GOOD + '[allocators.before]\nlike = "hugeheap"\nlibrary = "old/libhugeheap.so"\n'
    path = write(tmp_path, text)
    assert [m.name for m in load(path).modes] == ["system", "hugeheap"]
    assert [m.name for m in load(path, modes="hugeheap,system").modes] == ["hugeheap", "system"]
    with pytest.raises(HarnessError, match=r"^--modes system,before: mode 'before' cannot run "
                       r"here: allocators.before: the library .*old/libhugeheap.so is not there"):
        load(path, modes="system,before")
    library = tmp_path / "old" / "libhugeheap.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF")
    chosen = load(path, modes="system,before,hugeheap").modes
    assert [(m.name, m.library) for m in chosen][1] == ("before", str(library))
    with pytest.raises(HarnessError, match=r"^--modes system,mimaloc: unknown allocator mode "
                       r"'mimaloc'; did you mean 'mimalloc'"):
        load(path, modes="system,mimaloc")
    with pytest.raises(HarnessError, match=r"^--modes system,system: mode 'system' is named "
                       r"twice"):
        load(path, modes="system,system")


@pytest.mark.parametrize(("option", "problem"), [
    ("system,mimaloc", "unknown allocator mode 'mimaloc'; did you mean 'mimalloc'?"),
    ("system,system", "mode 'system' is named twice; name each mode once"),
    ("system,hugeheap", "mode 'hugeheap' cannot run here: libhugeheap.so not found: "),
])
def test_one_parser_reads_modes_for_a_suite_and_for_compare(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str, problem: str) -> None:
    """`hugeheap bench --modes`, `hugeheap compare --modes` and a suite's
    campaign.modes are read by one parser (modes.py): the same mistake is
    the same error, named as the option's or the file's."""
    monkeypatch.setenv("HUGEHEAP_LIBRARY", str(tmp_path / "nowhere" / "libhugeheap.so"))
    path = write(tmp_path, GOOD.replace('modes = ["system", "hugeheap"]',
                                        f"modes = {option.split(',')!r}".replace("'", '"')))
    with pytest.raises(HarnessError) as for_bench:
        load(path, modes=option)
    with pytest.raises(HarnessError) as for_compare:
        choose_modes(option)
    assert str(for_bench.value) == str(for_compare.value)
    assert str(for_bench.value).startswith(f"--modes {option}: {problem}")
    with pytest.raises(HarnessError) as in_file:
        load(path)
    assert str(in_file.value).startswith(f"{path}:2: {problem}")
    # What differs is said by the caller: a comparison needs two modes.
    assert [m.name for m in load(path, modes=" system ").modes] == ["system"]
    with pytest.raises(HarnessError, match=r"^--modes system: name 2 modes or more; "):
        choose_modes("system")


def test_a_tools_instances_are_checked(tmp_path: Path) -> None:
    fails(tmp_path, GOOD.replace('adapter = "exitcode"', 'adapter = "exitcode"\ninstances = 3'),
          r"suite.toml:12: tools.echo.instances must be a list of instance-name globs")
    fails(tmp_path, GOOD.replace('adapter = "exitcode"',
                                 'adapter = "exitcode"\ninstances = ["*.pnml"]'),
          r"suite.toml:12: tools.echo.instances: '\*.pnml' matches no instance "
          r"\(the instances: inst/a.cnf\)")


def test_instances_outside_the_suite_and_compressed(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bench = tmp_path / "bench"
    (bench / "sub").mkdir(parents=True)
    (bench / "x.cnf.xz").write_bytes(lzma.compress(b"p cnf 1 1\n1 0\n"))
    (bench / "sub" / "y.cnf.gz").write_bytes(gzip.compress(b"p cnf 1 1\n1 0\n"))
    monkeypatch.setenv("SAT_BENCH", str(bench))
    (tmp_path / "suite").mkdir()
    for pattern in ("$SAT_BENCH/**/*.cnf.*", "${SAT_BENCH}/**/*.cnf.*", f"{bench}/**/*.cnf.*"):
        suite = load(write(tmp_path / "suite", GOOD.replace("inst/*.cnf", pattern)))
        # Named from where the glob starts, without the compression suffix.
        assert suite.files == [("sub/y.cnf", bench / "sub" / "y.cnf.gz"),
                               ("x.cnf", bench / "x.cnf.xz")], pattern
    monkeypatch.delenv("SAT_BENCH")
    fails(tmp_path, GOOD.replace("inst/*.cnf", "$SAT_BENCH/*.cnf.xz"),
          r"suite.toml:14: the glob '\$SAT_BENCH/\*.cnf.xz' needs the environment variable "
          r"SAT_BENCH, which is not set; export SAT_BENCH=/path/to/the/instances")
    monkeypatch.setenv("SAT_BENCH", str(tmp_path / "nowhere"))
    fails(tmp_path, GOOD.replace("inst/*.cnf", "$SAT_BENCH/*.cnf.xz"),
          r"the glob '\$SAT_BENCH/\*.cnf.xz' matches no file \(SAT_BENCH is .*nowhere\)")


def test_compressed_instances_are_checked(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace('"inst/*.cnf"', '"inst/*.cnf*"'))
    (tmp_path / "inst" / "a.cnf.bz2").write_bytes(bz2.compress(b"p cnf 1 1\n1 0\n"))
    fails(tmp_path, path.read_text(),
          r"suite.toml:14: .*/inst/a.cnf and .*/inst/a.cnf.bz2 are both the instance "
          r"'inst/a.cnf'; keep one of them")
    (tmp_path / "inst" / "a.cnf.bz2").unlink()
    (tmp_path / "inst" / "b.cnf.gz").write_text("p cnf 1 1\n1 0\n")  # not compressed
    fails(tmp_path, path.read_text(), r"suite.toml:14: .*/inst/b.cnf.gz: not a gzip file; give "
          r"the file its format's suffix \(none if it is not compressed\), or leave it out$")
    (tmp_path / "inst" / "b.cnf.gz").unlink()
    fails(tmp_path, GOOD.replace('adapter = "exitcode"',
                                 'adapter = "exitcode"\nreads_compressed = ["zip"]'),
          r"suite.toml:12: tools.echo.reads_compressed must list formats among bzip2, gzip, "
          r"lzma, xz")
    suite = load(write(tmp_path, GOOD.replace('adapter = "exitcode"', 'adapter = "exitcode"\n'
                                              'reads_compressed = ["xz", "gzip"]')))
    assert suite.tools[0].reads_compressed == ("gzip", "xz")


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("suite_file", sorted([*(REPO / "suites").glob("*.toml"),
                                               *(REPO / "suites" / "experiments").glob("*.toml"),
                                               *(REPO / "suites" / "paper").glob("*.toml"),
                                               *(REPO / "suites" / "real").glob("*.toml"),
                                               *(REPO / "suites" / "hhtab").glob("*.toml"),
                                               *(REPO / "suites" / "pnexplore").glob("*.toml")]),
                         ids=lambda path: str(path.relative_to(REPO / "suites")))
def test_the_committed_suites_load(suite_file: Path, request: pytest.FixtureRequest) -> None:
    """`make demo`, `make bench` and `make paper` start from these: they must
    load on a machine where `make` has run, the paper's and our reasoners'
    (hhtab/, pnexplore/) in both sizes.
    Suites that compare with an older build of the library (experiments/:
    `make before`, as their headers say) load once it is built; those with
    the mode hugeheap-pool once a pool is reserved (a page of it here, as
    root, given back after)."""
    text = suite_file.read_text()
    if "hugeheap-pool" in tomllib.loads(text).get("campaign", {}).get("modes", []):
        request.getfixturevalue("grow_pool")(1)
    allocators = tomllib.loads(text).get("allocators", {})
    for allocator in allocators.values():
        library = (suite_file.parent / allocator.get("library", ".")).resolve()
        if REPO / "build" in library.parents and not library.exists():
            pytest.skip(f"{suite_file.name} compares with {library}: `make before` builds "
                        "it (the suite's header says how)")
    suite = load(suite_file)
    assert suite.tools and suite.modes
    if suite_file.parent.name in ("paper", "hhtab", "pnexplore"):
        assert load(suite_file, quick=True).generators
    if suite_file.parent.name == "real":
        assert suite.downloads and load(suite_file, quick=True).downloads


SETS = sorted([*(REPO / "suites" / "real" / "sets").glob("*.toml"),
               REPO / "suites" / "mimalloc-bench" / "set.toml"])


@pytest.mark.parametrize("set_file", SETS, ids=lambda path: path.name)
def test_the_committed_sets_name_their_sources(set_file: Path) -> None:
    """Each real set says, per file, where it comes from (repository, exact
    commit, path, licence), its size and sha256; a copy vendored beside it
    is that file, byte for byte."""
    files = read_set(set_file)
    manifest = tomllib.loads(set_file.read_text())
    assert 10 <= len(files) <= 30 or manifest["set"].get("why_fewer"), set_file.name
    for entry in manifest["instances"]:
        assert entry["size"] > 0 and entry["path"] and entry["source"] in manifest["sources"]
    for file in files:
        assert file.sha256 and file.url.startswith("https://")
        if file.vendored is not None:
            data = file.vendored.read_bytes()
            assert len(data) == file.size and hashlib.sha256(data).hexdigest() == file.sha256


def test_the_vendored_instances_stay_small() -> None:
    """What the repository carries of the real sets (the demo's and the
    tests'): at most 30 MiB, compressed."""
    vendored = [f.vendored for s in SETS for f in read_set(s) if f.vendored is not None]
    assert all(p.suffix in (".xz", ".gz", ".bz2") for p in vendored if p)
    assert sum(p.stat().st_size for p in vendored if p) <= 30 * 2**20
