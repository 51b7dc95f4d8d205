"""Instances named by URL and hash: fetched once from a real HTTP server on
loopback into the instance cache, verified, run from the cache, and run
again with the server gone; every way a fetch can fail is one line, exit 2,
and leaves nothing half-written in the cache."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import lzma
import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from campaign_helpers import TOOL, rows
from hugeheap_cli import CLI, cli

from hugeheap.campaign.gbd import gbd_hash
from hugeheap.campaign.remote import read_set
from hugeheap.campaign.suite_file import load
from hugeheap.errors import HarnessError

SAT = b"c sat\np cnf 2 1\n1 -2 0\n"
UNSAT = b"c unsat\np cnf 1 2\n1 0\n-1 0\n"


@dataclass
class Served:
    """What the loopback server answers for a path: the bytes, and how."""
    body: bytes
    how: str = "whole"  # "whole", or "cut": a Content-Length of all, half the bytes, close


@dataclass
class Server:
    port: int
    files: dict[str, Served] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server(port=0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            path = self.path.lstrip("/").split("?")[0]
            state.requests.append(path)
            served = state.files.get(path)
            if served is None:
                self.send_error(404, "Not Found")
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(served.body)))
            self.end_headers()
            if served.how == "cut":
                self.wfile.write(served.body[:len(served.body) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(served.body)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


SUITE_HEAD = """
[campaign]
modes = ["system", "hugeheap"]
seed = 3

[limits]
cpu_time = "20s"

[tools.fake]
command = "./tool.sh {instance}"
adapter = "sat"

[instances]
"""


def write_suite(folder: Path, instances: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    tool = folder / "tool.sh"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    suite = folder / "suite.toml"
    suite.write_text(SUITE_HEAD + instances)
    return suite


def manifest(server: Server, entries: dict[str, bytes], sha_of: dict[str, str] | None = None
             ) -> str:
    """A set file naming each entry by the loopback URL and its sha256."""
    lines = ['[sources.loop]', 'repository = "https://example.org/loop"',
             f'commit = "{"ab" * 20}"', 'licence = "CC0 (stated by the test)"',
             f'url = "{server.url("{commit}/{path}")}"']
    for name, body in entries.items():
        lines += ["[[instances]]", f'name = "{name}"', 'source = "loop"', f'path = "set/{name}"',
                  f"size = {len(body)}", f'sha256 = "{(sha_of or {}).get(name, sha(body))}"']
    return "\n".join(lines) + "\n"


def serve_set(server: Server, entries: dict[str, bytes]) -> None:
    for name, body in entries.items():
        server.files[f"{'ab' * 20}/set/{name}"] = Served(body)


def cache_files(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def fails_in_one_line(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return lines[-1]


def test_a_set_runs_from_a_cold_cache_then_offline(tmp_path: Path, server: Server,
                                                    cgroups_usable: str) -> None:
    entries = {"a.cnf": SAT, "b.cnf.xz": lzma.compress(UNSAT), "c.cnf.gz": gzip.compress(SAT)}
    serve_set(server, entries)
    suite = write_suite(tmp_path / "suite", 'sets = ["sat.toml"]\n')
    (tmp_path / "suite" / "sat.toml").write_text(manifest(server, entries))
    cache = tmp_path / "cache"

    done = cli("bench", str(suite), "--out", str(tmp_path / "one"), "--cache", str(cache),
               timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(server.requests) == sorted(f"{'ab' * 20}/set/{n}" for n in entries)
    stored = {(r[1], r[2]): (r[4], r[5]) for r in rows(tmp_path / "one")}
    assert stored[("a.cnf", "system")] == ("ok", "sat")
    assert stored[("b.cnf", "hugeheap")] == ("ok", "unsat")  # decompressed for the tool
    assert stored[("c.cnf", "system")] == ("ok", "sat")
    assert not list((cache / "partial").iterdir())

    # The server gone, a campaign of the same suite and a fetch run from the cache alone.
    server.files.clear()
    done = cli("bench", str(suite), "--out", str(tmp_path / "two"), "--cache", str(cache),
               timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(rows(tmp_path / "two")) == 6
    done = cli("fetch", str(suite), "--cache", str(cache))
    assert done.returncode == 0 and "3 cached" in done.stderr, done.stderr
    assert len(server.requests) == 3


def test_fetch_alone_fills_the_cache_and_a_gbd_hash_is_enough(tmp_path: Path,
                                                              server: Server) -> None:
    formula = b"c a comment\np cnf 3 2\n1  -2 0\n2 3\n 0\n"
    digest = gbd_hash_of(tmp_path, formula)
    server.files[f"file/{digest}"] = Served(lzma.compress(formula))
    suite = write_suite(tmp_path / "suite", f'[[instances.download]]\ngbd = "{digest}"\n')
    env = {"HUGEHEAP_GBD_URL": server.url("file/{hash}")}
    done = cli("fetch", str(suite), "--cache", str(tmp_path / "cache"), env=env)
    assert done.returncode == 0, done.stderr
    assert "downloaded" in done.stderr and f"{digest}.cnf.xz" in done.stderr
    kept = tmp_path / "cache" / "gbd" / digest / f"{digest}.cnf.xz"
    assert lzma.decompress(kept.read_bytes()) == formula

    # Another formula served under that hash fails.
    server.files[f"file/{digest}"] = Served(lzma.compress(formula.replace(b"2 3", b"2 4")))
    line = fails_in_one_line("fetch", str(suite), "--cache", str(tmp_path / "other"), env=env)
    assert "GBD hash is" in line and digest in line
    assert not cache_files(tmp_path / "other")


def gbd_hash_of(tmp_path: Path, formula: bytes) -> str:
    probe = tmp_path / "probe.cnf"
    probe.write_bytes(formula)
    return gbd_hash(probe)


def test_the_gbd_hash_ignores_comments_header_spacing_and_compression(tmp_path: Path) -> None:
    reference = hashlib.md5(b"1 2 0 3 0").hexdigest()
    variants = [b"1 2 0 3 0", b"p cnf 3 2\n1 2 0 3 0", b"p cnf 3 2\n1 2 0\r\n 3 0",
                b"\nc x\np cnf 3 2\n1 2 0\r\n 3 0\n", b" c test\np cnf 3 2 \n1 2 0    \r\n 3 0 \n",
                b"p cnf 3 2\n1\n2\n0\n3 0\n%\n0\n"]
    for number, variant in enumerate(variants):
        plain = tmp_path / f"v{number}.cnf"
        plain.write_bytes(variant)
        packed = tmp_path / f"v{number}.cnf.xz"  # by content, whatever the name
        packed.write_bytes(lzma.compress(variant))
        assert gbd_hash(plain) == reference == gbd_hash(packed), variant
    other = tmp_path / "other.cnf"
    other.write_bytes(b"1 2 0 -3 0")
    assert gbd_hash(other) != reference


def test_cache_add_makes_a_file_one_has_count(tmp_path: Path, server: Server) -> None:
    body = lzma.compress(SAT)
    mine = tmp_path / "mine" / "x.cnf.xz"
    mine.parent.mkdir()
    mine.write_bytes(body)
    cache = tmp_path / "cache"
    done = cli("cache", "add", str(mine), "--cache", str(cache))
    assert done.returncode == 0, done.stderr
    assert f"sha256:{sha(body)}" in done.stdout and "gbd:" in done.stdout
    suite = write_suite(tmp_path / "suite", f"""[[instances.download]]
name = "x.cnf.xz"
url = "{server.url('nowhere/x.cnf.xz')}"
sha256 = "{sha(body)}"
""")
    done = cli("fetch", str(suite), "--cache", str(cache))
    assert done.returncode == 0 and "1 cached" in done.stderr, done.stderr
    assert server.requests == []
    assert "no such file" in fails_in_one_line("cache", "add", str(tmp_path / "absent.cnf"))


def test_a_vendored_copy_is_taken_before_the_network(tmp_path: Path, server: Server) -> None:
    entries = {"v.cnf": SAT}
    suite = write_suite(tmp_path / "suite", 'sets = ["sat.toml"]\n')
    (tmp_path / "suite" / "files").mkdir()
    (tmp_path / "suite" / "files" / "v.cnf").write_bytes(SAT)
    (tmp_path / "suite" / "sat.toml").write_text(
        manifest(server, entries) + 'vendored = "files/v.cnf"\n')
    done = cli("fetch", str(suite), "--cache", str(tmp_path / "cache"))
    assert done.returncode == 0 and "1 vendored" in done.stderr, done.stderr
    assert server.requests == []


def test_a_hash_mismatch(tmp_path: Path, server: Server) -> None:
    entries = {"a.cnf": SAT}
    serve_set(server, entries)
    suite = write_suite(tmp_path / "suite", 'sets = ["sat.toml"]\n')
    (tmp_path / "suite" / "sat.toml").write_text(manifest(server, entries, {"a.cnf": "0" * 64}))
    cache = tmp_path / "cache"
    line = fails_in_one_line("bench", str(suite), "--out", str(tmp_path / "camp"), "--cache",
                             str(cache))
    assert f"sha256 is {sha(SAT)}" in line and "0" * 64 in line and "nothing was kept" in line
    assert not cache_files(cache)
    assert not (tmp_path / "camp").exists()


def test_an_unreachable_url_and_a_missing_file(tmp_path: Path, server: Server) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    suite = write_suite(tmp_path / "suite", f"""[[instances.download]]
url = "http://127.0.0.1:{closed}/a.cnf"
sha256 = "{sha(SAT)}"
""")
    line = fails_in_one_line("fetch", str(suite), "--cache", str(tmp_path / "cache"))
    assert f"127.0.0.1:{closed}/a.cnf: cannot download it" in line and "refused" in line
    suite.write_text(suite.read_text().replace(f"127.0.0.1:{closed}", f"127.0.0.1:{server.port}"))
    line = fails_in_one_line("fetch", str(suite), "--cache", str(tmp_path / "cache"))
    assert "the server answered 404" in line and "suite.toml:" in line
    assert not cache_files(tmp_path / "cache")


def test_a_download_that_stops_midway(tmp_path: Path, server: Server) -> None:
    body = os.urandom(300_000)
    server.files["big.cnf"] = Served(body, how="cut")
    suite = write_suite(tmp_path / "suite", f"""[[instances.download]]
url = "{server.url('big.cnf')}"
sha256 = "{sha(body)}"
""")
    line = fails_in_one_line("fetch", str(suite), "--cache", str(tmp_path / "cache"))
    assert "big.cnf: the download stopped after" in line and "of 300,000 bytes" in line
    assert not cache_files(tmp_path / "cache")


def test_a_full_disk(tmp_path: Path, server: Server) -> None:
    """A cache on a real filesystem too small for the file (a tmpfs of
    64 KiB in a mount namespace of the command's own)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) to mount a small tmpfs")
    body = os.urandom(400_000)
    server.files["big.cnf"] = Served(body)
    suite = write_suite(tmp_path / "suite", f"""[[instances.download]]
url = "{server.url('big.cnf')}"
sha256 = "{sha(body)}"
""")
    cache = tmp_path / "cache"
    cache.mkdir()
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "mount", "-t",
                            "tmpfs", "-o", "size=64k", "hh-test-probe", str(cache)],
                           capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs in a mount namespace here: {probe.stderr.strip()}")
    script = (f"mount -t tmpfs -o size=64k hh-test-cache {cache} && "
              f"{' '.join(CLI)} fetch {suite} --cache {cache}; status=$?; "
              f"find {cache} -type f | wc -l; exit $status")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "is full: no room for big.cnf" in lines[-1] and "--cache" in lines[-1]
    assert "Traceback" not in done.stderr
    assert done.stdout.strip() == "0"  # nothing half-written left in the cache


@pytest.mark.parametrize(("instances", "expected"), [
    ('[[instances.download]]\nurl = "https://example.org/a.cnf"\n', "neither sha256 nor gbd"),
    ('[[instances.download]]\nurl = "ftp://example.org/a.cnf"\nsha256 = "' + "a" * 64 + '"\n',
     "not an http, https or file URL"),
    ('[[instances.download]]\nurl = "https://example.org/a.cnf"\nsha256 = "abc"\n',
     "is not 64 hex digits"),
    ('[[instances.download]]\ngbd = "xyz"\n', "not a Global Benchmark Database hash"),
    ('sets = ["absent.toml"]\n', "cannot read the set file"),
    ('sets = ["list.uri"]\n', "names no Global Benchmark Database file"),
])
def test_suite_mistakes_about_downloads(tmp_path: Path, instances: str, expected: str) -> None:
    suite = write_suite(tmp_path / "suite", instances)
    (tmp_path / "suite" / "list.uri").write_text("https://example.org/x.cnf\n")
    line = fails_in_one_line("fetch", str(suite), "--cache", str(tmp_path / "cache"))
    assert expected in line and "suite.toml" in line


ANY_SHA = "a" * 64


@pytest.mark.parametrize(("entry", "problem"), [
    ('url = "https://example.org/a.cnf"', "neither sha256 nor gbd says which file it is"),
    ('url = "https://example.org/a.cnf"\nsha256 = "abc"', "sha256 'abc' is not 64 hex digits"),
    ('gbd = "xyz"', "gbd 'xyz' is not a Global Benchmark Database hash"),
    (f'url = "ftp://example.org/a.cnf"\nsha256 = "{ANY_SHA}"',
     "'ftp://example.org/a.cnf' is not an http, https or file URL"),
    (f'url = 3\nsha256 = "{ANY_SHA}"', "url 3 is not a string"),
    (f'url = "https://example.org/a.cnf"\nsha256 = "{ANY_SHA}"\nsize = -1',
     "size -1 is not a number of bytes"),
    (f'url = "https://example.org/a.cnf"\nsha265 = "{ANY_SHA}"',
     "unknown key 'sha265'; did you mean 'sha256'?"),
    (f'name = "dir/a.cnf"\nurl = "https://example.org/a.cnf"\nsha256 = "{ANY_SHA}"',
     "the instance name 'dir/a.cnf' must be a plain file name"),
])
def test_an_entry_is_read_alike_in_a_suite_and_in_a_set(tmp_path: Path, entry: str,
                                                         problem: str) -> None:
    """One parser reads an entry naming a file (remote.parse_entry): the
    same mistake is the same error, `ORIGIN: problem; fix`, in a suite's
    [[instances.download]] and in a manifest's [[instances]]."""
    entry = entry if entry.startswith("name") else f'name = "a.cnf"\n{entry}'
    suite = write_suite(tmp_path / "suite", f"[[instances.download]]\n{entry}\n")
    header = suite.read_text().splitlines().index("[[instances.download]]") + 1
    with pytest.raises(HarnessError) as in_suite:
        load(suite, modes="system")
    manifest_file = tmp_path / "set.toml"
    manifest_file.write_text(f"[[instances]]\n{entry}\n")
    with pytest.raises(HarnessError) as in_set:
        read_set(manifest_file)
    name = entry.split('"')[1]  # the name the entry starts with
    said = str(in_suite.value).removeprefix(f"{suite}:{header}: ")
    assert said == str(in_set.value).removeprefix(f"{manifest_file}: instance '{name}': ")
    assert said.startswith(problem) and said.count("; ") == 1  # the problem; the fix


def test_what_only_a_download_or_only_a_set_entry_says(tmp_path: Path) -> None:
    """A download may be quick or a support file; a manifest's entry names
    itself and may say its source and path, a vendored copy and an answer."""
    suite = write_suite(tmp_path / "suite", '[[instances.download]]\n'
                        f'url = "https://example.org/a.cnf"\nsha256 = "{ANY_SHA}"\n'
                        'vendored = "files/a.cnf"\n')
    with pytest.raises(HarnessError, match=r"suite\.toml:\d+: unknown key 'vendored'; the keys "
                       r"allowed there are: gbd, name, quick, sha256, size, support, url$"):
        load(suite, modes="system")
    manifest_file = tmp_path / "set.toml"
    manifest_file.write_text(f'[[instances]]\nname = "a.cnf"\nurl = "https://example.org/a.cnf"'
                             f'\nsha256 = "{ANY_SHA}"\nquick = true\n')
    with pytest.raises(HarnessError, match=r"set\.toml: instance 'a\.cnf': unknown key 'quick'"):
        read_set(manifest_file)
    manifest_file.write_text(f'[[instances]]\nurl = "https://example.org/a.cnf"\n'
                             f'sha256 = "{ANY_SHA}"\n')
    with pytest.raises(HarnessError, match=r"set\.toml: \[\[instances\]\] number 1: the entry "
                       r'has no name; add name = "file\.cnf\.xz"$'):
        read_set(manifest_file)
    # Neither hash in a manifest: the same one line as in a suite (it was a KeyError).
    manifest_file.write_text('[sources.s]\nrepository = "https://example.org/r"\n'
                             f'commit = "{"ab" * 20}"\nlicence = "CC0"\n'
                             'url = "https://example.org/{commit}/{path}"\n'
                             '[[instances]]\nname = "a.cnf"\nsource = "s"\npath = "a.cnf"\n')
    with pytest.raises(HarnessError, match=r"instance 'a\.cnf': neither sha256 nor gbd"):
        read_set(manifest_file)


def test_a_uri_list_names_gbd_files(tmp_path: Path, server: Server) -> None:
    formula = b"p cnf 2 2\n1 2 0\n-1 0\n"
    digest = gbd_hash_of(tmp_path, formula)
    server.files[f"file/{digest}"] = Served(lzma.compress(formula))
    suite = write_suite(tmp_path / "suite", 'sets = ["track.uri"]\n')
    (tmp_path / "suite" / "track.uri").write_text(
        f"# a track\nhttps://benchmark-database.de/file/{digest}?context=cnf\n")
    done = cli("fetch", str(suite), "--cache", str(tmp_path / "cache"),
               env={"HUGEHEAP_GBD_URL": server.url("file/{hash}")})
    assert done.returncode == 0, done.stderr
    assert server.requests == [f"file/{digest}"]


def test_a_support_file_reaches_the_tool_and_is_no_instance(tmp_path: Path, server: Server,
                                                             cgroups_usable: str) -> None:
    """An ASP encoding or a logic program's rules: fetched and verified like
    an instance, given to the tools as {file:NAME}, never run on itself."""
    entries = {"rules.txt": b"rules v1\n", "a.cnf": SAT}
    serve_set(server, entries)
    suite = write_suite(tmp_path / "suite", 'sets = [{ file = "set.toml", support = '
                        '["rules.txt"] }]\n')
    (tmp_path / "suite" / "set.toml").write_text(manifest(server, entries))
    wrapper = tmp_path / "suite" / "with-rules.sh"
    wrapper.write_text('#!/bin/sh\ngrep -q "^rules v1$" "$1" || exit 3\nexec "$(dirname "$0")'
                       '/tool.sh" "$2"\n')
    wrapper.chmod(0o755)
    suite.write_text(suite.read_text().replace('"./tool.sh {instance}"',
                                               '"./with-rules.sh {file:rules.txt} {instance}"'))
    done = cli("bench", str(suite), "--out", str(tmp_path / "camp"), "--cache",
               str(tmp_path / "cache"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted((r[1], r[4], r[5]) for r in rows(tmp_path / "camp")) == \
        [("a.cnf", "ok", "sat")] * 2

    suite.write_text(suite.read_text().replace("{file:rules.txt}", "{file:other.txt}"))
    line = fails_in_one_line("bench", str(suite), "--out", str(tmp_path / "camp2"))
    assert "{file:other.txt}, which is no support file of the suite" in line
    assert "rules.txt" in line


def test_a_generator_makes_its_instance_from_a_support_file(tmp_path: Path, server: Server,
                                                            cgroups_usable: str) -> None:
    """A downloaded model that a generator compiles (a Promela model into a
    verifier, say): the generator gets the cached file as {file:NAME}, its
    output is the instance; a name that is no support file is one line."""
    entries = {"model.txt": SAT}
    serve_set(server, entries)
    suite = write_suite(tmp_path / "suite", 'sets = [{ file = "set.toml", support = '
                        '["model.txt"] }]\n\n[[instances.generate]]\nname = "made.cnf"\n'
                        'command = "./make.sh {file:model.txt}"\n')
    (tmp_path / "suite" / "set.toml").write_text(manifest(server, entries))
    maker = tmp_path / "suite" / "make.sh"
    maker.write_text('#!/bin/sh\ncat "$1"\necho "c made from $(basename "$1")"\n')
    maker.chmod(0o755)
    done = cli("bench", str(suite), "--out", str(tmp_path / "camp"), "--cache",
               str(tmp_path / "cache"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted((r[1], r[4], r[5]) for r in rows(tmp_path / "camp")) == \
        [("made.cnf", "ok", "sat")] * 2
    made = tmp_path / "camp" / "instances" / "made.cnf"
    assert made.read_bytes() == SAT + b"c made from model.txt\n"

    suite.write_text(suite.read_text().replace("{file:model.txt}", "{file:model2.txt}"))
    line = fails_in_one_line("bench", str(suite), "--out", str(tmp_path / "camp2"))
    assert "instances.generate.command names {file:model2.txt}, which is no support file" in line


def test_a_campaign_of_some_tools_fetches_only_their_instances(tmp_path: Path, server: Server,
                                                               cgroups_usable: str) -> None:
    """`bench --tools` fetches what those tools run on, and the support files
    their instances' generators read, so a file only the others need may be
    out of reach; the campaign stays the whole suite's, and a later run of
    every tool goes into the same folder."""
    model = b"c sat\nc a model of its own (the cache keeps files by their hash)\np cnf 2 1\n1 0\n"
    entries = {"a.cnf": SAT, "b.cnf": UNSAT, "model.txt": model}
    serve_set(server, {"a.cnf": SAT})  # b.cnf and model.txt out of reach, as offline
    suite = write_suite(tmp_path / "suite", 'sets = [{ file = "sat.toml", support = '
                        '["model.txt"] }]\n\n[[instances.generate]]\nname = "made.cnf"\n'
                        'command = "./make.sh {file:model.txt}"\n')
    text = suite.read_text().replace('adapter = "sat"\n', 'adapter = "sat"\ninstances = ["a*"]\n'
                                     '\n[tools.other]\ncommand = "./tool.sh {instance}"\n'
                                     'adapter = "sat"\ninstances = ["b*", "made*"]\n', 1)
    suite.write_text(text)
    (tmp_path / "suite" / "sat.toml").write_text(manifest(server, entries))
    maker = tmp_path / "suite" / "make.sh"
    maker.write_text('#!/bin/sh\ncat "$1"\n')
    maker.chmod(0o755)
    cache, out = tmp_path / "cache", tmp_path / "out"

    done = cli("bench", str(suite), "--tools", "fake", "--out", str(out), "--cache", str(cache),
               timeout=300)
    assert done.returncode == 0, done.stderr
    assert server.requests == [f"{'ab' * 20}/set/a.cnf"]
    assert {(r[0], r[1]) for r in rows(out)} == {("fake", "a.cnf")}

    serve_set(server, entries)
    done = cli("bench", str(suite), "--out", str(out), "--cache", str(cache), timeout=300)
    assert done.returncode == 0, done.stderr
    assert {(r[0], r[1]) for r in rows(out)} == {("fake", "a.cnf"), ("other", "b.cnf"),
                                                 ("other", "made.cnf")}
    assert f"{'ab' * 20}/set/model.txt" in server.requests


def test_a_campaign_of_tools_that_need_no_download(tmp_path: Path, server: Server,
                                                    cgroups_usable: str) -> None:
    """A tool whose instances are generated, chosen alone, runs with the set
    of the suite's other tool out of reach: nothing to fetch, no cache asked."""
    serve_set(server, {})
    suite = write_suite(tmp_path / "suite", 'sets = ["sat.toml"]\n\n[[instances.generate]]\n'
                        'name = "made.cnf"\ncommand = "./make.sh"\n')
    suite.write_text(suite.read_text().replace(
        'adapter = "sat"\n', 'adapter = "sat"\ninstances = ["made*"]\n\n[tools.other]\n'
        'command = "./tool.sh {instance}"\nadapter = "sat"\ninstances = ["b*"]\n', 1))
    (tmp_path / "suite" / "sat.toml").write_text(manifest(server, {"b.cnf": UNSAT}))
    maker = tmp_path / "suite" / "make.sh"
    maker.write_text('#!/bin/sh\nprintf "c sat\\np cnf 2 1\\n1 -2 0\\n"\n')
    maker.chmod(0o755)
    done = cli("bench", str(suite), "--tools", "fake", "--out", str(tmp_path / "out"),
               "--cache", str(tmp_path / "cache"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert server.requests == []
    assert {(r[0], r[1]) for r in rows(tmp_path / "out")} == {("fake", "made.cnf")}


def test_a_sets_entry_no_tool_runs_on_is_neither_fetched_nor_needed(
        tmp_path: Path, server: Server, cgroups_usable: str) -> None:
    """A suite that takes one file of a set fetches that file: `fetch` and a
    campaign of every tool alike, so the campaign runs with the rest of the
    set out of reach."""
    serve_set(server, {"a.cnf": SAT})  # b.cnf out of reach, as offline
    suite = write_suite(tmp_path / "suite", 'sets = ["sat.toml"]\n')
    suite.write_text(suite.read_text().replace('adapter = "sat"\n',
                                               'adapter = "sat"\ninstances = ["a*"]\n', 1))
    (tmp_path / "suite" / "sat.toml").write_text(
        manifest(server, {"a.cnf": SAT, "b.cnf": UNSAT}))

    done = cli("fetch", str(suite), "--cache", str(tmp_path / "fetched"))
    assert done.returncode == 0, done.stderr
    assert server.requests == [f"{'ab' * 20}/set/a.cnf"]
    assert [p.read_bytes() for p in cache_files(tmp_path / "fetched")] == [SAT]

    server.requests.clear()
    done = cli("bench", str(suite), "--out", str(tmp_path / "out"), "--cache",
               str(tmp_path / "cache"), timeout=300)
    assert done.returncode == 0, done.stderr
    assert server.requests == [f"{'ab' * 20}/set/a.cnf"]
    assert {(r[0], r[1]) for r in rows(tmp_path / "out")} == {("fake", "a.cnf")}
