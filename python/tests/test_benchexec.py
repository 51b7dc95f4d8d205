"""BenchExec's world in `hugeheap bench`: benchmark definitions read by
BenchExec's own parser, tools found, run and judged by BenchExec's own
tool-info modules, results put into BenchExec's categories and score against
the tasks' expected verdicts, exports that BenchExec's table-generator reads.

Everything real: BenchExec's example definitions (data/benchexec, see its
README), its dummy and calculatepi modules, ABC's module against Debian's
berkeley-abc, z3's module against z3, and definitions written as an SV-COMP
user writes them (YAML tasks with expected verdicts, .set files, property
files)."""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from campaign_helpers import bench, rows
from hugeheap_cli import cli

from hugeheap.campaign.definition import load_definition
from hugeheap.campaign.folder import CampaignFolder
from hugeheap.measure.allocators import REPO_ROOT

DATA = Path(__file__).parent / "data" / "benchexec"
TASKS = DATA / "test" / "tasks" / "benchmark.xml"
AIGER = REPO_ROOT / "suites" / "paper" / "gen" / "aiger.py"
TABLE_GENERATOR = Path(sys.executable).parent / "table-generator"
# SV-COMP's property of unreachability (a property file of CHECK lines only
# is one of SV-COMP's, and gets scores).
UNREACH = "CHECK( init(main()), LTL(G ! call(reach_error())) )\n"


def benchexec_records(out: Path) -> dict[tuple[str, str, str], dict[str, object]]:
    """(tool, instance, mode) -> the BenchExec record of its first repetition."""
    db = sqlite3.connect(f"file:{out / 'results.sqlite'}?mode=ro", uri=True)
    try:
        found = db.execute("SELECT tool, instance, mode, verdict, benchexec FROM runs "
                           "WHERE repetition = 0").fetchall()
    finally:
        db.close()
    return {(t, i, m): {**json.loads(b), "verdict": v} for t, i, m, v, b in found}


def output_of(out: Path, tool: str, mode: str, instance: str) -> str:
    path = CampaignFolder(out).outputs / tool / mode / f"{instance}.r0.log.gz"
    return gzip.decompress(path.read_bytes()).decode()


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The one line `hugeheap: ...` a refused input gives, exit code 2."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hugeheap: "), done.stderr
    return lines[0]


def test_benchexecs_table_generator_tasks_get_its_categories_and_score(tmp_path: Path) -> None:
    """BenchExec's own test definition: the dummy tool answers `true` on
    YAML tasks whose expected verdicts make that correct, wrong (also with a
    subproperty) or missing; under two modes, paired; resumed; reported with
    BenchExec's categories and SV-COMP score; exported for table-generator."""
    out = tmp_path / "out"
    done = bench(TASKS, out, options=("--modes", "system,hugeheap"))
    assert done.returncode == 0, done.stderr
    assert "note: container: BenchExec runs each tool in a container" in done.stderr
    found = benchexec_records(out)
    # other_task.yml has no expected verdict for test.prp: BenchExec leaves it out.
    assert {i for _, i, _ in found} == {"true_task.yml", "false_task.yml", "false_sub_task.yml",
                                        "false_sub2_task.yml", "false_other_sub_task.yml",
                                        "unknown_task.yml"}
    for mode in ("system", "hugeheap"):
        def record(task: str, mode: str = mode) -> dict[str, object]:
            return found[("dummy", task, mode)]
        assert record("true_task.yml")["category"] == "correct"
        assert record("true_task.yml")["verdict"] == "true"
        assert (record("true_task.yml")["score"], record("true_task.yml")["max_score"]) == (2, 2)
        for wrong in ("false_task.yml", "false_sub_task.yml", "false_sub2_task.yml"):
            assert (record(wrong)["category"], record(wrong)["verdict"],
                    record(wrong)["score"]) == ("wrong", "wrong", -32)
        assert record("false_sub_task.yml")["expected"] == "false(sub)"
        assert record("unknown_task.yml")["category"] == "missing"
        assert record("unknown_task.yml")["verdict"] == "true"
    # The modes of a task ran back to back; the same command goes on, running nothing.
    again = bench(TASKS, out, options=("--modes", "system,hugeheap"))
    assert again.returncode == 0 and "12 of 12 runs finished (0 now)" in again.stderr

    xml = tmp_path / "xml"
    page = tmp_path / "report.html"
    report = cli("report", str(out), "--benchexec", str(xml), "--html", str(page))
    assert report.returncode == 0, report.stderr
    assert "<h2 id='categories'>BenchExec's categories</h2>" in page.read_text()
    lines = report.stdout.splitlines()
    assert "dummy: BenchExec's categories" in report.stdout
    for mode in ("system", "hugeheap"):
        row = next(line for line in lines if line.startswith(f"│ {mode} ") and "of 6" in line)
        # correct true, correct false, wrong true, wrong false, unknown, error, missing, score
        assert [cell.strip() for cell in row.split("│")[2:10]] == [
            "1", "0", "4", "0", "0", "0", "1", "-126 of 6"], row

    if not TABLE_GENERATOR.exists():
        pytest.fail(f"table-generator is not installed beside {sys.executable}")
    table = subprocess.run([str(TABLE_GENERATOR), "--format", "csv", "--outputpath",
                            str(tmp_path / "table"), *sorted(map(str, xml.iterdir()))],
                           capture_output=True, text=True, timeout=120)
    assert table.returncode == 0, table.stderr
    (made,) = (tmp_path / "table").glob("*.csv")
    cells = list(csv.reader(made.read_text().splitlines(), delimiter="\t"))
    by_task = {row[0]: row for row in cells[3:]}
    # The task, its expected verdict, then per mode: status, category, ...
    assert by_task["false_sub_task.yml"][1:4] == ["false(sub)", "true", "wrong"]
    assert by_task["true_task.yml"][1:4] == ["true", "true", "correct"]
    assert by_task["unknown_task.yml"][1:4] == ["", "true", "missing"]


def test_benchexecs_example_of_three_run_definitions(tmp_path: Path) -> None:
    """BenchExec's example of the dummy tool: run definitions with options
    of their own, task sets of files, a task-definition file and tasks
    without a file; each run definition is a tool, its options reach the
    tool; --tools chooses run definitions."""
    out = tmp_path / "out"
    definition = DATA / "doc" / "benchmark-example-true.xml"
    done = bench(definition, out, options=("--modes", "system,hugeheap", "--tools",
                                           "some options,other options"))
    assert done.returncode == 0, done.stderr
    assert "note: BenchExec: No propertyfile specified" in done.stderr
    assert "note: timelimit: the definition sets none" in done.stderr
    stored = rows(out)
    tasks = {"benchmark.dtd", "README.md", "benchmark-example-calculatepi.xml",
             "benchmark-example-true.xml", "task-definition-example.yml", "dummy task 1",
             "dummy task 2", "dummy task 3"}
    assert {(r[0], r[1]) for r in stored} == {(tool, task) for tool in ("some options",
                                                                      "other options")
                                              for task in tasks}
    assert {r[5] for r in stored} == {"true"}  # what the dummy tool was told to answer
    # The dummy tool prints its arguments (one a line, shuffled).
    shown = output_of(out, "some options", "hugeheap", "task-definition-example.yml")
    assert {"--opt1", "value1", "--opt2", "value2"} <= set(shown.splitlines())
    # The task's input files come from its task-definition file, its options too.
    assert f"Input file: {DATA / 'README.md'}" in shown and "com.example" in shown
    assert {"--opt3", "--opt4"} <= set(output_of(out, "other options", "system",
                                                 "dummy task 2").splitlines())
    # The campaign is the whole definition's: its third run definition goes on later.
    rest = bench(definition, out, options=("--modes", "system,hugeheap"))
    assert rest.returncode == 0 and "48 of 48 runs finished (16 now)" in rest.stderr


def test_calculatepi_example_and_a_time_limit(tmp_path: Path) -> None:
    """BenchExec's calculatepi example is read with its limits (its core
    limit is a note); a definition of one's own with the same module and a
    1 s limit gives BenchExec's TIMEOUT, an error, where bc needs longer."""
    suite, notes = load_definition(DATA / "doc" / "benchmark-example-calculatepi.xml",
                                   "system,hugeheap", None)
    (tool,) = suite.tools
    assert (suite.cpu_s, suite.memory_bytes, len(suite.files)) == (900, 100_000_000, 20)
    assert tool.tasks is not None and tool.tasks["1000"].argv[:2] == ("/bin/sh", "-c")
    assert "scale=1000;" in tool.tasks["1000"].argv[2]
    assert any(n.startswith("cpuCores 1: each run gets the whole physical cores") for n in notes)

    definition = tmp_path / "pi.xml"
    definition.write_text("""<?xml version="1.0"?>
<benchmark tool="calculatepi" timelimit="1s" hardtimelimit="2s" memlimit="200 MB">
  <rundefinition/>
  <tasks><withoutfile>100</withoutfile><withoutfile>4000</withoutfile></tasks>
</benchmark>
""")
    out = tmp_path / "out"
    done = bench(definition, out, options=("--modes", "system,hugeheap"))
    assert done.returncode == 0, done.stderr
    assert "note: hardtimelimit 2 s: hugeheap ends a run at the timelimit (1 s)" in done.stderr
    found = benchexec_records(out)
    for mode in ("system", "hugeheap"):
        assert (found[("calculatepi", "100", mode)]["status"],
                found[("calculatepi", "100", mode)]["verdict"]) == ("done", "done")
        slow = found[("calculatepi", "4000", mode)]
        assert (slow["status"], slow["category"], slow["verdict"]) == ("TIMEOUT", "error",
                                                                       "error")
    assert "3.14159265358979" in output_of(out, "calculatepi", "system", "100")
    assert {(r[1], r[4]) for r in rows(out)} == {("100", "ok"), ("4000", "timeout")}


def abc_directory(tmp_path: Path) -> Path:
    """A tool directory for BenchExec's abc module, whose program is
    `bin/abc` there: Debian's berkeley-abc under that name."""
    found = shutil.which("berkeley-abc")
    if found is None:
        pytest.skip("berkeley-abc is not installed (Debian package berkeley-abc)")
    directory = tmp_path / "abc-tool"
    (directory / "bin").mkdir(parents=True)
    (directory / "bin" / "abc").symlink_to(found)
    return directory


def design(target: Path, *words: str) -> None:
    with open(target, "wb") as made:
        subprocess.run([sys.executable, str(AIGER), *words], stdout=made, check=True)


SV_COMP_STYLE = """<?xml version="1.0"?>
<!DOCTYPE benchmark PUBLIC "+//IDN sosy-lab.org//DTD BenchExec benchmark 2.3//EN"
  "https://www.sosy-lab.org/benchexec/benchmark-2.3.dtd">
<benchmark tool="abc" timelimit="60 s" memlimit="1 GB" cpuCores="1">
  <require cpuModel="Intel Xeon E3-1230 v5 @ 3.40 GHz"/>
  <resultfiles>**.witness</resultfiles>
  <requiredfiles>properties/*.prp</requiredfiles>

  <rundefinition name="pdr">
    <option name="-c">pdr</option>
  </rundefinition>
  <rundefinition name="bmc">
    <option name="-c">bmc3 -F 20</option>
  </rundefinition>

  <tasks name="Hardware.ReachSafety">
    <includesfile>Hardware.set</includesfile>
    <exclude>tasks/broken-*.yml</exclude>
    <exclude>tasks/retired-*.yml</exclude>
    <propertyfile expectedverdict="{filter}">properties/unreach-call.prp</propertyfile>
  </tasks>
</benchmark>
"""


def sv_comp_benchmark(tmp_path: Path, expected_filter: str = "true") -> Path:
    """ABC on hardware designs as an SV-COMP user lays them out: YAML tasks
    with expected verdicts, listed by a .set file, a broken task excluded, an
    SV-COMP property file."""
    root = tmp_path / "hw"
    (root / "tasks").mkdir(parents=True)
    (root / "properties").mkdir()
    (root / "properties" / "unreach-call.prp").write_text(UNREACH)
    design(root / "tasks" / "counter-unsafe.aig", "counter", "3", "4", "6")
    design(root / "tasks" / "counter-safe.aig", "counter", "3", "4", "safe")
    for name, verdict in (("counter-unsafe", "false"), ("counter-safe", "true"),
                          ("broken-missing", "true")):
        (root / "tasks" / f"{name}.yml").write_text(
            f"format_version: '2.0'\ninput_files: '{name}.aig'\nproperties:\n"
            f"  - property_file: ../properties/unreach-call.prp\n"
            f"    expected_verdict: {verdict}\n")
    (root / "Hardware.set").write_text("# the hardware tasks\ntasks/*.yml\n")
    definition = root / "hardware.xml"
    definition.write_text(SV_COMP_STYLE.replace(' expectedverdict="{filter}"', "")
                          if expected_filter == "" else
                          SV_COMP_STYLE.replace("{filter}", expected_filter))
    return definition


def test_abc_on_an_sv_comp_style_definition(tmp_path: Path) -> None:
    """BenchExec's abc module finds berkeley-abc in the tool directory, says
    its version, composes `abc -c "&r X.aig; &put" -c pdr`; PDR proves the
    safe design and finds the bug of the other (both correct), BMC cannot
    prove (BenchExec's abc module calls that an error); scores as SV-COMP's."""
    tool_directory = abc_directory(tmp_path)
    definition = sv_comp_benchmark(tmp_path, expected_filter="")
    out = tmp_path / "out"
    done = bench(definition, out, options=("--modes", "system,hugeheap", "--tool-directory",
                                           str(tool_directory)))
    assert done.returncode == 0, done.stderr
    for note in ("<require cpuModel=", "<resultfiles>: not kept", "cpuCores 1: each run gets",
                 "BenchExec: No files found matching 'tasks/retired-*.yml'"):
        assert f"note: {note}" in done.stderr, done.stderr
    found = benchexec_records(out)
    assert {i for _, i, _ in found} == {"tasks/counter-unsafe.yml", "tasks/counter-safe.yml"}
    for mode in ("system", "hugeheap"):
        assert (found[("pdr", "tasks/counter-unsafe.yml", mode)]["status"],
                found[("pdr", "tasks/counter-unsafe.yml", mode)]["category"]) == ("false",
                                                                                  "correct")
        assert (found[("pdr", "tasks/counter-safe.yml", mode)]["status"],
                found[("pdr", "tasks/counter-safe.yml", mode)]["score"]) == ("true", 2)
        assert found[("bmc", "tasks/counter-unsafe.yml", mode)]["category"] == "correct"
        assert (found[("bmc", "tasks/counter-safe.yml", mode)]["status"],
                found[("bmc", "tasks/counter-safe.yml", mode)]["category"]) == ("ERROR", "error")
    shown = output_of(out, "pdr", "system", "tasks__counter-unsafe.yml")
    assert "ABC command line" in shown and "pdr" in shown
    machine = json.loads(CampaignFolder(out).machine_record.read_text())[-1]
    assert machine["tools"]["pdr"]["version"].startswith("1.")  # ABC's own, via its module
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    assert "pdr: BenchExec's categories" in report.stdout and "3 of 3" in report.stdout


def test_an_expected_verdict_filter_chooses_tasks(tmp_path: Path) -> None:
    """<propertyfile expectedverdict="false">: BenchExec keeps only the
    tasks with that verdict."""
    definition = sv_comp_benchmark(tmp_path, expected_filter="false")
    suite, _ = load_definition(definition, "system,hugeheap", str(abc_directory(tmp_path)))
    assert [name for name, _ in suite.files] == ["tasks/counter-unsafe.yml"]
    assert {t.name for t in suite.tools} == {"pdr", "bmc"}
    assert suite.tools[0].tasks is not None
    task = suite.tools[0].tasks["tasks/counter-unsafe.yml"]
    assert task.argv[1:] == ("-c", f"&r {definition.parent}/tasks/counter-unsafe.aig; &put",
                             "-c", "pdr")
    assert task.run.expected == "false" and task.run.property_file == str(
        definition.parent / "properties" / "unreach-call.prp")


SMT = {"sat": "(declare-const x Int)\n(assert (> x 2))\n(check-sat)\n",
       "unsat": "(declare-const x Int)\n(assert (> x 2))\n(assert (< x 1))\n(check-sat)\n"}


def smt_tasks(tmp_path: Path) -> Path:
    """SMT-LIB tasks with expected verdicts (z3's module says true for sat):
    one of them expected wrongly."""
    root = tmp_path / "smt"
    root.mkdir()
    (root / "sat.prp").write_text("the formula is satisfiable\n")  # not SV-COMP's: no score
    for name, expected in (("sat", "true"), ("unsat", "false"), ("mislabelled", "true")):
        (root / f"{name}.smt2").write_text(SMT["unsat" if name == "mislabelled" else name])
        (root / f"{name}.yml").write_text(
            f"format_version: '2.0'\ninput_files: {name}.smt2\nproperties:\n"
            f"  - property_file: sat.prp\n    expected_verdict: {expected}\n")
    return root


def test_z3_through_benchexecs_smtlib_module(tmp_path: Path) -> None:
    if shutil.which("z3") is None:
        pytest.skip("z3 is not installed (Debian package z3)")
    root = smt_tasks(tmp_path)
    definition = root / "smt.xml"
    definition.write_text("""<?xml version="1.0"?>
<benchmark tool="z3" timelimit="30s">
  <rundefinition name="z3"/>
  <tasks><include>*.yml</include><propertyfile>sat.prp</propertyfile></tasks>
</benchmark>
""")
    out = tmp_path / "out"
    done = bench(definition, out, options=("--modes", "system,hugeheap"))
    assert done.returncode == 0, done.stderr
    found = benchexec_records(out)
    for mode in ("system", "hugeheap"):
        assert [(found[("z3", f"{n}.yml", mode)]["status"],
                 found[("z3", f"{n}.yml", mode)]["category"])
                for n in ("sat", "unsat", "mislabelled")] == [
            ("true", "correct"), ("false", "correct"), ("false", "wrong")]
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    row = next(line for line in report.stdout.splitlines()
               if line.startswith("│ system ") and line.rstrip().endswith("- │"))
    assert [cell.strip() for cell in row.split("│")[2:9]] == ["1", "1", "0", "1", "0", "0", "0"]


def test_a_suite_names_a_tool_info_module_instead_of_an_adapter(tmp_path: Path) -> None:
    if shutil.which("z3") is None:
        pytest.skip("z3 is not installed (Debian package z3)")
    root = smt_tasks(tmp_path)
    suite = root / "suite.toml"
    base = """[campaign]
modes = ["system", "hugeheap"]
[limits]
cpu_time = "30s"
[tools.z3]
command = "z3 {instance}"
tool_info = "z3"
[instances]
files = ["*.smt2"]
"""
    suite.write_text(base)
    out = tmp_path / "out"
    done = bench(suite, out)
    assert done.returncode == 0, done.stderr
    assert {(r[1], r[5]) for r in rows(out)} == {("sat.smt2", "true"), ("unsat.smt2", "false"),
                                                 ("mislabelled.smt2", "false")}
    found = benchexec_records(out)
    assert {r["category"] for r in found.values()} == {"missing"}  # no expected verdicts
    report = cli("report", str(out))
    assert report.returncode == 0 and "BenchExec's categories" not in report.stdout

    suite.write_text(base.replace('tool_info = "z3"', 'tool_info = "no_such_tool"'))
    line = one_error_line(bench(suite, tmp_path / "other"))
    assert "suite.toml:7: tool-info module benchexec.tools.no_such_tool: loading it failed" in line
    suite.write_text(base.replace('tool_info = "z3"', 'tool_info = "z3"\nadapter = "smtlib"'))
    assert "has both adapter and tool_info" in one_error_line(bench(suite, tmp_path / "other"))


BROKEN_MODULE = """import benchexec.tools.template

class Tool(benchexec.tools.template.BaseTool2):
    def name(self):
        return "Broken"

    def executable(self, tool_locator):
        return tool_locator.find_executable("shuf")

    def cmdline(self, executable, options, task, rlimits):
        raise ValueError("this module cannot compose a command")
"""


@pytest.mark.parametrize(("definition", "says"), [
    ("<benchmark tool='dummy'><rundefinition/>", "BenchExec cannot read it: Benchmark file"),
    ("<benchmrk tool='dummy'/>", "root element is not named 'benchmark'"),
    ("<benchmark><rundefinition/></benchmark>", "A tool needs to be specified"),
    ("<benchmark tool='no_such_tool'><rundefinition/>"
     "<tasks><withoutfile>x</withoutfile></tasks></benchmark>",
     'Unsupported tool "no_such_tool" specified'),
    ("<benchmark tool='brokentool.info'><rundefinition/>"
     "<tasks><withoutfile>x</withoutfile></tasks></benchmark>",
     "tool-info module brokentool.info: composing the command of x failed: ValueError: this "
     "module cannot compose a command"),
    ("<benchmark tool='dummy'><rundefinition/>"
     "<tasks><include>missing.yml</include></tasks></benchmark>",
     "the pattern 'missing.yml' matches no file (a task, or a file a task needs, is missing)"),
    ("<benchmark tool='dummy'><rundefinition/>"
     "<tasks><includesfile>some.set</includesfile></tasks></benchmark>",
     "the pattern 'not-there.yml' matches no file"),
    ("<benchmark tool='dummy'><rundefinition/>"
     "<tasks><include>lost.yml</include></tasks></benchmark>",
     "Pattern 'lost.smt2' in task-definition file"),
    ("<benchmark tool='dummy' timelimit='-5s'><rundefinition/>"
     "<tasks><withoutfile>x</withoutfile></tasks></benchmark>", 'Time limit "-5s" is invalid'),
    ("<benchmark tool='abc'><rundefinition/>"
     "<tasks><withoutfile>x</withoutfile></tasks></benchmark>",
     "Could not find executable 'abc'"),
], ids=["not XML", "not a benchmark", "no tool", "no such module", "module raises",
        "task missing", "set line missing", "input missing", "bad limit", "tool not found"])
def test_a_definition_that_cannot_run_is_one_line(tmp_path: Path, definition: str,
                                                  says: str) -> None:
    (tmp_path / "brokentool").mkdir()
    (tmp_path / "brokentool" / "__init__.py").write_text("")
    (tmp_path / "brokentool" / "info.py").write_text(BROKEN_MODULE)
    (tmp_path / "lost.yml").write_text("format_version: '2.0'\ninput_files: lost.smt2\n")
    (tmp_path / "ok.yml").write_text("format_version: '2.0'\ninput_files: ok.yml\n")
    (tmp_path / "some.set").write_text("ok.yml\nnot-there.yml\n")
    (tmp_path / "bench.xml").write_text(definition)
    done = cli("bench", str(tmp_path / "bench.xml"), "--out", str(tmp_path / "out"),
               "--modes", "system,hugeheap",
               env={"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])})
    line = one_error_line(done)
    assert says in line, line
    assert not (tmp_path / "out").exists()


def test_options_of_one_kind_of_campaign_only(tmp_path: Path) -> None:
    line = one_error_line(cli("bench", str(TASKS), "--quick", "--out", str(tmp_path / "o")))
    assert "--quick is for a suite's generated instances" in line
    suite = tmp_path / "suite.toml"
    suite.write_text("")
    line = one_error_line(cli("bench", str(suite), "--tool-directory", str(tmp_path)))
    assert "--tool-directory is for a BenchExec benchmark definition (.xml)" in line


def test_a_tool_info_run_reaches_a_cluster_node_whole(tmp_path: Path) -> None:
    """A Slurm task gets its runs as JSON: a run that a tool-info module reads
    comes back as it was planned (module, environment, task, expected verdict)."""
    from hugeheap.campaign.instances import prepare
    from hugeheap.campaign.plan import plan
    from hugeheap.campaign.slurm.files import read_input, write_input
    suite, _ = load_definition(TASKS, "system,hugeheap", None)
    folder = CampaignFolder(tmp_path / "campaign")
    blocks = plan(suite, prepare(suite, folder.instances), 1, folder, set())
    specs = [spec for block in blocks for spec in block]
    assert len(specs) == 12 and all(spec.tool_info for spec in specs)
    write_input(tmp_path, 0, specs)
    assert read_input(tmp_path, 0) == specs
