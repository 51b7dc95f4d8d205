#!/usr/bin/env python3
"""pnexplore's tests: exact state-space sizes of the contest's models and of
families known by construction with every thread count, store and allocator;
the contest's answer lines; random nets against an explorer written here;
identical answers from PNML and LoLA and conversions between them, deadlock
witnesses that replay, names escaped in every output, and one clear error per
kind of bad input.

    check_pnexplore.py PNEXPLORE {counts|counts-small|mcc|random|formats|witness|errors|
                           usage|json-escaping|writer-escaping|many-names|
                           refusals|address-space}

counts-small keeps to the models below 10,000 states (for sanitizer builds)."""

from __future__ import annotations

import functools
import itertools
import json
import math
import random
import re
import resource
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from xml.sax.saxutils import quoteattr


def dekker_edges(n: int) -> int:
    """Firings of dekker N: over the states with t processes trying, the rest
    idle (c = 0) or one critical (c = 1), every idle process raises its flag,
    a trying one backs off for each other flag up, a lone trying one enters,
    the critical one exits."""
    idle_or_trying = sum(math.comb(n, t) * ((n - t) + t * (t - 1)) for t in range(n + 1)) + n
    one_critical = sum(n * math.comb(n - 1, t) * ((n - 1 - t) + t * t + 1) for t in range(n))
    return idle_or_trying + one_critical


# (model, N): (states, edges or None, deadlocks or None)
EXPECTED = {
    ("philosophers", 5): (243, 7 * 5 * 3**3, 2),
    ("philosophers", 8): (3**8, 7 * 8 * 3**6, 2),
    ("sharedmemory", 5): (1863, None, 0),
    ("sharedmemory", 6): (3**5 * (36 - 6 + 3), None, 0),
    ("tokenring", 5): (166, None, 0),
    ("kanban", 1): (160, None, 0),
    ("kanban", 2): (4600, None, 0),
    ("kanban", 3): (58400, None, 0),
    ("kanban", 4): (454475, None, 0),
    ("referendum", 4): (3**4 + 1, 1 + 2 * 4 * 3**3, 2**4),
    ("referendum", 10): (3**10 + 1, 1 + 2 * 10 * 3**9, 2**10),
    ("dekker", 3): (2**2 * 5, dekker_edges(3), 0),
    ("dekker", 12): (2**11 * 14, dekker_edges(12), 0),
    ("serversandclients", "3x2"): (3 * 2 + 2 * 3 + 1, 2 * 3 * 2 + 2 * 3, 0),
    ("serversandclients", "40x16"): (40 * 16 + 2 * 40 + 1, 2 * 40 * 16 + 2 * 40, 0),
}

failures: list[str] = []


def check(condition: bool, message: str) -> None:
    if not condition:
        failures.append(message)
        print(f"FAIL: {message}")


def generate(tool: str, model: str, n: int | str, fmt: str, directory: Path) -> Path:
    path = directory / f"{model}-{n}.{fmt}"
    subprocess.run([tool, "gen", model, str(n), "--format", fmt, "-o", str(path)], check=True)
    return path


def explore(tool: str, net: Path, *options: str) -> dict[str, object]:
    out = subprocess.run([tool, "explore", str(net), "--json", *options], capture_output=True,
                         text=True, timeout=600)
    if out.returncode not in (0, 3):
        raise SystemExit(f"pnexplore failed on {net}: {out.stderr}")
    return json.loads(out.stdout)


def test_counts(tool: str, tmp: Path, largest: int = 10**9) -> None:
    for (model, n), (states, edges, deadlocks) in EXPECTED.items():
        if states > largest:
            continue
        net = generate(tool, model, n, "lola", tmp)
        heavy = states > 100_000
        threads = [1, 2] if heavy else [1, 2, 4]
        stores = ["shared", "buckets:7"]
        allocs = ["arena"] if heavy else ["arena", "pool", "malloc"]
        for t, store, alloc in itertools.product(threads, stores, allocs):
            r = explore(tool, net, "--threads", str(t), "--store", store, "--alloc", alloc)
            what = f"{model} {n} threads={t} store={store} alloc={alloc}"
            check(r["states"] == states, f"{what}: {r['states']} states, expected {states}")
            if edges is not None:
                check(r["edges"] == edges, f"{what}: {r['edges']} edges, expected {edges}")
            if deadlocks is not None:
                check(r["deadlocks"] == deadlocks,
                      f"{what}: {r['deadlocks']} deadlocks, expected {deadlocks}")
        print(f"{model} {n}: {states} states in every configuration")


# The contest's four StateSpace lines, each known by construction: (model,
# N): (states, transitions or None, tokens in a marking at most, in a place).
MCC_EXPECTED: dict[tuple[str, int | str], tuple[int, int | None, int, int]] = {
    ("philosophers", 6): (3**6, 7 * 6 * 3**4, 2 * 6, 1),
    ("referendum", 7): (3**7 + 1, 1 + 2 * 7 * 3**6, 7, 1),
    ("dekker", 6): (2**5 * 8, dekker_edges(6), 2 * 6, 1),
    ("serversandclients", "20x30"): (20 * 30 + 2 * 20 + 1, 2 * 20 * 30 + 2 * 20, 1 + 20 + 30, 1),
    # The token counts from the place invariants: a cell's cards stay N, a
    # processor, its memory and the bus one token each less the accesses.
    ("kanban", 3): (58400, None, 4 * 3, 3),
    ("sharedmemory", 4): (3**3 * (16 - 4 + 3), None, 2 * 4 + 1, 1),
}


def mcc_lines(techniques: str, states: int, transitions: int | None, per_marking: int,
              in_place: int) -> list[str]:
    """The lines the contest expects, in its order; an unknown count as any number."""
    counts = [("STATES", states), ("TRANSITIONS", transitions),
              ("MAX_TOKEN_PER_MARKING", per_marking), ("MAX_TOKEN_IN_PLACE", in_place)]
    any_count = r"\d+"
    return [f"STATE_SPACE {what} {any_count if n is None else n} TECHNIQUES {techniques}"
            for what, n in counts]


def test_mcc(tool: str, tmp: Path) -> None:
    """explore --mcc reads a model folder the contest's way (model.pnml in it)
    and prints the StateSpace lines, which match the counts known for each
    family; a run that stops answers CANNOT_COMPUTE."""
    for (model, n), expected in MCC_EXPECTED.items():
        folder = tmp / f"{model}-PT-{n}"
        folder.mkdir()
        generate(tool, model, n, "pnml", tmp).rename(folder / "model.pnml")
        for threads, techniques in ((1, "SEQUENTIAL_PROCESSING"), (2, "PARALLEL_PROCESSING")):
            out = subprocess.run([tool, "explore", str(folder), "--mcc", "--threads", str(threads)],
                                 capture_output=True, text=True, timeout=600)
            patterns = mcc_lines(f"EXPLICIT STATE_COMPRESSION {techniques}", *expected)
            lines = out.stdout.splitlines()
            check(out.returncode == 0 and len(lines) == len(patterns)
                  and all(re.fullmatch(p, line)
                          for p, line in zip(patterns, lines, strict=True)),
                  f"{model} {n} --mcc at {threads} threads: {out.returncode} {lines}, "
                  f"expected {patterns}")
    net = generate(tool, "philosophers", 8, "lola", tmp)
    out = subprocess.run([tool, "explore", str(net), "--mcc", "--max-states", "100"],
                         capture_output=True, text=True)
    check(out.returncode == 3 and out.stdout == "CANNOT_COMPUTE\n"
          and out.stderr == "pnexplore: stopped early: --max-states reached\n",
          f"--mcc stopped early: {out.returncode} {out.stdout!r} {out.stderr!r}")
    for other in ("--json", "--check deadlock"):
        out = subprocess.run([tool, "explore", str(net), "--mcc", *other.split()],
                             capture_output=True, text=True)
        check(out.returncode == 2 and out.stdout == "" and "--mcc" in out.stderr
              and len(out.stderr.splitlines()) == 1,
              f"--mcc {other}: {out.returncode} {out.stderr!r}")


Marking = tuple[int, ...]
Rule = tuple[dict[int, int], dict[int, int]]


def oracle(initial: Marking, rules: list[Rule], limit: int) -> dict[str, int] | None:
    """States, edges, deadlocks and the token maxima by breadth-first search
    (an explorer of its own: the test does not trust pnexplore's); None past
    `limit` states."""
    seen = {initial}
    frontier = [initial]
    edges = deadlocks = 0
    while frontier:
        following = []
        for m in frontier:
            enabled = [r for r in rules if all(m[p] >= w for p, w in r[0].items())]
            deadlocks += not enabled
            for pre, post in enabled:
                after = list(m)
                for p, w in pre.items():
                    after[p] -= w
                for p, w in post.items():
                    after[p] += w
                edges += 1
                successor = tuple(after)
                if successor not in seen:
                    seen.add(successor)
                    following.append(successor)
                    if len(seen) > limit:
                        return None
        frontier = following
    return {"states": len(seen), "edges": edges, "deadlocks": deadlocks,
            "max_tokens_in_place": max(max(m) for m in seen),
            "max_tokens_per_marking": max(sum(m) for m in seen)}


def random_net(rng: random.Random) -> tuple[Marking, list[Rule]]:
    """A net whose transitions keep the token count (so it is bounded): few
    places or hundreds, mostly empty or not, weights above one, places that
    start with more than one token or hundreds of tokens."""
    places = rng.choice([4, 9, 17, 40, 300])
    initial = [0] * places
    for p in rng.sample(range(places), rng.randint(1, min(places, 6))):
        initial[p] = rng.choice([1, 1, 1, 2, 3])
    if rng.random() < 0.2:
        initial[rng.randrange(places)] = rng.choice([255, 300])
    rules: list[Rule] = []
    for _ in range(rng.randint(2, 14)):
        pre = {p: rng.choice([1, 1, 2]) for p in rng.sample(range(places), rng.randint(1, 2))}
        tokens = sum(pre.values())
        post: dict[int, int] = {}
        for _ in range(tokens):
            p = rng.randrange(places)
            post[p] = post.get(p, 0) + 1
        rules.append((pre, post))
    return tuple(initial), rules


def write_random_net(path: Path, initial: Marking, rules: list[Rule]) -> None:
    names = [f"p{p}" for p in range(len(initial))]
    lines = ["PLACE " + ", ".join(names) + ";",
             "MARKING " + ", ".join(f"p{p}: {c}" for p, c in enumerate(initial) if c) + ";"]
    for i, (pre, post) in enumerate(rules):
        arcs = [", ".join(f"p{p}: {w}" for p, w in side.items()) for side in (pre, post)]
        lines.append(f"TRANSITION t{i} CONSUME {arcs[0]}; PRODUCE {arcs[1]};")
    path.write_text("\n".join(lines) + "\n")


def ring(places: int, tokens: dict[int, int]) -> tuple[Marking, list[Rule]]:
    """Tokens moving one at a time round a ring of places, both ways."""
    initial = tuple(tokens.get(p, 0) for p in range(places))
    rules: list[Rule] = []
    for p in range(places):
        rules.append(({p: 1}, {(p + 1) % places: 1}))
        rules.append(({(p + 1) % places: 1}, {p: 1}))
    return initial, rules


# Nets that reach each record kind from places that start with more than one
# token: all places at most one (bits), counts past 255 (shorts), few places
# differing among many (sparse).
RINGS = [ring(9, {0: 3}), ring(12, {0: 2, 5: 2}), ring(2, {0: 300}), ring(3, {1: 60}),
         ring(60, {0: 2})]


def test_random(tool: str, tmp: Path, nets: int = 60) -> None:
    """Random bounded nets, and rings, agree with the oracle in every count and
    maximum, with one and two threads and every allocator: markings stored as
    bits, bytes, shorts, or the places that differ, must each name one state."""
    rng = random.Random(18)
    tried = 0
    while tried < nets + len(RINGS):
        initial, rules = RINGS[tried] if tried < len(RINGS) else random_net(rng)
        expected = oracle(initial, rules, 3000)
        if expected is None:
            assert tried >= len(RINGS), "a ring past the oracle's limit"
            continue
        tried += 1
        net = tmp / f"random{tried}.lola"
        write_random_net(net, initial, rules)
        for threads, alloc in (("1", "arena"), ("2", "arena"), ("2", "pool"), ("1", "malloc")):
            r = explore(tool, net, "--threads", threads, "--alloc", alloc)
            got = {k: r[k] for k in expected}
            check(got == expected, f"{net.name} ({threads} threads, {alloc}): {got}, the oracle "
                                   f"says {expected}; the net:\n{net.read_text()}")
    print(f"{len(RINGS)} rings and {nets} random nets agree with the oracle")


def same_counts(a: dict[str, object], b: dict[str, object]) -> bool:
    return all(a[k] == b[k] for k in ("states", "edges", "deadlocks"))


def test_formats(tool: str, tmp: Path) -> None:
    for model, n in (("philosophers", 6), ("kanban", 2), ("sharedmemory", 4), ("tokenring", 4)):
        a = explore(tool, generate(tool, model, n, "pnml", tmp))
        b = explore(tool, generate(tool, model, n, "lola", tmp))
        check(same_counts(a, b), f"{model} {n}: PNML and LoLA disagree: {a} / {b}")
        check_conversions(tool, model, n, tmp)


def convert(tool: str, net: Path, fmt: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, "convert", str(net), "--format", fmt, "-o", str(path)],
                          capture_output=True, text=True)


def check_conversions(tool: str, model: str, n: int, tmp: Path) -> None:
    """convert writes what gen writes: LoLA to PNML (but for the net id, which
    comes from the file name) and PNML to LoLA."""
    pnml, lola = tmp / f"{model}-{n}.pnml", tmp / f"{model}-{n}.lola"
    to_lola, to_pnml = tmp / "converted.lola", tmp / "converted.pnml"
    convert(tool, pnml, "lola", to_lola)
    check(to_lola.read_text() == lola.read_text(), f"{model} {n}: PNML converted to LoLA differs")
    convert(tool, lola, "pnml", to_pnml)
    written = to_pnml.read_text().replace('<net id="converted"', f'<net id="{model}-{n}"', 1)
    check(written == pnml.read_text(), f"{model} {n}: LoLA converted to PNML differs")


Arcs = dict[str, int]


def section(text: str, keyword: str) -> str:
    match = re.search(keyword + r"(.*?);", text, re.S)
    if match is None:
        raise SystemExit(f"no {keyword} section in the generated net")
    return match.group(1)


def read_lola(path: Path) -> tuple[dict[str, int], dict[str, tuple[Arcs, Arcs]]]:
    """The marking and transitions of a net pnexplore wrote: the replay is
    checked by a second reader of the format, not by pnexplore itself."""
    text = path.read_text()
    marking = {p.strip(): 0 for p in section(text, "PLACE").split(",")}
    for name, count in re.findall(r"(\S+): (\d+)", section(text, "MARKING")):
        marking[name] = int(count)
    transitions = {}
    for name, consume, produce in re.findall(
            r"TRANSITION (\S+)\s+CONSUME(.*?);\s+PRODUCE(.*?);", text, re.S):
        pre = {p: int(w) for p, w in re.findall(r"(\S+): (\d+)", consume)}
        post = {p: int(w) for p, w in re.findall(r"(\S+): (\d+)", produce)}
        transitions[name] = (pre, post)
    return marking, transitions


def test_witness(tool: str, tmp: Path) -> None:
    for n, threads in ((5, 1), (7, 2), (7, 4)):
        net = generate(tool, "philosophers", n, "lola", tmp)
        r = explore(tool, net, "--check", "deadlock", "--threads", str(threads))
        check(r["deadlock"] is True, f"philosophers {n}: no deadlock found")
        marking, transitions = read_lola(net)
        for name in r["witness"]:  # type: ignore[union-attr]
            pre, post = transitions[name]
            ok = all(marking[p] >= w for p, w in pre.items())
            check(ok, f"philosophers {n}: witness fires {name} when it is not enabled")
            for p, w in pre.items():
                marking[p] -= w
            for p, w in post.items():
                marking[p] += w
        dead = not any(all(marking[p] >= w for p, w in pre.items())
                       for pre, _ in transitions.values())
        check(dead, f"philosophers {n}: the witness does not end in a dead marking")
    r = explore(tool, generate(tool, "kanban", 2, "lola", tmp), "--check", "deadlock")
    check(r["deadlock"] is False and r["complete"] is True, "kanban 2 has no deadlock")


PNML_HEAD = ('<?xml version="1.0"?>\n<pnml><net id="n" type="http://www.pnml.org/version-2009/'
             'grammar/ptnet"><page id="g">\n')
PNML_TAIL = "</page></net></pnml>\n"
BAD_INPUTS = [
    ("coloured.pnml", '<?xml version="1.0"?>\n<pnml><net id="n" type="http://www.pnml.org/'
     'version-2009/grammar/symmetricnet"><page id="g"></page></net></pnml>',
     r'coloured.pnml:2: <net type=".*symmetricnet">: coloured nets are not supported'),
    ("target.pnml", PNML_HEAD + '<place id="p"/><transition id="t"/>\n'
     '<arc id="a1" source="p" target="nowhere"/>\n' + PNML_TAIL,
     r"target.pnml:4: <arc id=\"a1\">: .*unknown target 'nowhere'"),
    ("weight.pnml", PNML_HEAD + '<place id="p"/><transition id="t"/>\n<arc id="a1" source="p" '
     'target="t"><inscription><text>two</text></inscription></arc>\n' + PNML_TAIL,
     r"weight.pnml:4: <inscription>: 'two' is not a number"),
    ("negative.pnml", PNML_HEAD + '<place id="p"/><transition id="t"/>\n<arc id="a1" source="p" '
     'target="t"><inscription><text>-3</text></inscription></arc>\n' + PNML_TAIL,
     r"negative.pnml:4: <inscription>: '-3' is negative"),
    ("duplicate.pnml", PNML_HEAD + '<place id="p"/>\n<transition id="p"/>\n' + PNML_TAIL,
     r"duplicate.pnml:4: <transition>: duplicate id 'p'"),
    ("malformed.pnml", PNML_HEAD + '<place id="p">\n</transition>\n' + PNML_TAIL,
     r"malformed.pnml:4: malformed XML: </transition> closes <place>"),
    ("unclosed.pnml", PNML_HEAD + '<place id="p">\n', r"unclosed.pnml:\d+: malformed XML: <\w+> "
     r"is never closed"),
    ("marking.lola", "PLACE a;\nMARKING a: lots;\n",
     r"marking.lola:2: MARKING: 'lots' is not a number"),
    ("weight.lola", "PLACE a;\nTRANSITION t CONSUME a: -1; PRODUCE ;\n",
     r"weight.lola:2: TRANSITION t CONSUME: -1 is negative"),
    ("unknown.lola", "PLACE a;\nTRANSITION t CONSUME b: 1; PRODUCE a: 1;\n",
     r"unknown.lola:2: arc b -> t: unknown source 'b'"),
    ("duplicate.lola", "PLACE a, b, a;\n", r"duplicate.lola:1: duplicate id 'a'"),
    ("long.lola", "PLACE short,\n" + "p" * 300 + ";\n",
     r"long.lola:2: a name or number longer than 255 characters"),
    ("long.pnml", PNML_HEAD + '<place id="p"/>\n<place id="' + "p" * 300 + '"/>\n' + PNML_TAIL,
     r"long.pnml:4: <place>: attribute id is longer than 255 characters"),
    ("marking.pnml", PNML_HEAD + '<place id="p">\n<initialMarking><text>' + "0" * 300 + "1"
     "</text></initialMarking></place>\n" + PNML_TAIL,
     r"marking.pnml:4: <initialMarking>: '0{20}...' is too long for a token count"),
    ("sum.lola", "PLACE a, b;\nMARKING a: 1;\n"
     "TRANSITION t CONSUME a: 4294967295, a: 1; PRODUCE b: 1;\n",
     r"sum.lola:3: arc a -> t: its weights add up to more than 4294967295 tokens"),
]


def test_errors(tool: str, tmp: Path) -> None:
    for name, content, pattern in BAD_INPUTS:
        path = tmp / name
        path.write_text(content)
        out = subprocess.run([tool, "explore", str(path)], capture_output=True, text=True)
        lines = out.stderr.strip().splitlines()
        check(out.returncode == 2 and len(lines) == 1 and re.search(pattern, lines[0]) is not None,
              f"{name}: expected one line matching {pattern!r}, got {out.returncode} {lines}")
    # A folder is read the contest's way: the model.pnml in it.
    out = subprocess.run([tool, "explore", str(tmp)], capture_output=True, text=True)
    lines = out.stderr.strip().splitlines()
    check(out.returncode == 2
          and lines == [f"pnexplore: {tmp}/model.pnml: cannot read it (No such file or directory)"],
          f"a folder without model.pnml: got {out.returncode} {lines}")
    (tmp / "model.pnml").mkdir()
    out = subprocess.run([tool, "explore", f"{tmp}/"], capture_output=True, text=True)
    lines = out.stderr.strip().splitlines()
    check(out.returncode == 2
          and lines == [f"pnexplore: {tmp}/model.pnml: cannot read it (Is a directory)"],
          f"a folder whose model.pnml is a folder: got {out.returncode} {lines}")


# Names that JSON and XML must escape: quotes, backslash, markup, a control
# character, and a multi-byte character that must pass through unchanged.
AWKWARD_NAMES = ['say"hi"', "back\\slash", "a<b>&c", "it's", "bell\x07", "caf\u00e9"]


def explore_bytes(tool: str, net: Path, *options: str) -> tuple[int, bytes]:
    """The exit code and the raw output: a test of what the bytes are."""
    out = subprocess.run([tool, "explore", str(net), *options], capture_output=True, timeout=600)
    return out.returncode, out.stdout


def test_json_escaping(tool: str, tmp: Path) -> None:
    """--json output parses whatever the names hold: a witness through
    awkward transition names, a stop reason that quotes a place's name, and
    a byte that is not UTF-8 (replaced by U+FFFD, the rest kept)."""
    names = [name.encode() for name in AWKWARD_NAMES] + [b"latin1\xff"]
    places = [b"p%d" % i for i in range(len(names) + 1)]
    lines = [b"PLACE " + b", ".join(places) + b";", b"MARKING " + places[0] + b": 1;"]
    for i, name in enumerate(names):  # a chain: each fires once, then the net is dead
        lines.append(b"TRANSITION " + name + b" CONSUME " + places[i] + b": 1; PRODUCE "
                     + places[i + 1] + b": 1;")
    net = tmp / "chain.lola"
    net.write_bytes(b"\n".join(lines) + b"\n")
    code, stdout = explore_bytes(tool, net, "--json", "--check", "deadlock")
    try:
        witness = json.loads(stdout)["witness"]
    except ValueError as error:
        check(False, f"--json with awkward transition names is not JSON ({error}): {stdout!r}")
    else:
        expected = [*AWKWARD_NAMES, "latin1\ufffd"]
        check(code == 0 and witness == expected, f"witness {witness}, expected {expected}")

    unbounded = tmp / "unbounded.lola"
    pile = 'pile"of\\tokens'
    unbounded.write_text(f"PLACE {pile};\nMARKING {pile}: 1;\n"
                         f"TRANSITION grow CONSUME {pile}: 1; PRODUCE {pile}: 2;\n")
    code, stdout = explore_bytes(tool, unbounded, "--json")
    try:
        stopped = json.loads(stdout)["stopped"]
    except ValueError as error:
        check(False, f"--json with a stop reason that quotes a name is not JSON ({error}): "
                     f"{stdout!r}")
    else:
        check(code == 3 and "'pile\"of\\tokens' would hold more than" in stopped,
              f"stop reason {stopped!r} does not quote the place")


def awkward_net(places: list[str], transitions: list[str]) -> str:
    """A LoLA net: transition i moves the token from place i to place i+1."""
    lines = ["PLACE " + ", ".join(places) + ";", f"MARKING {places[0]}: 1;"]
    for i, name in enumerate(transitions):
        lines.append(f"TRANSITION {name} CONSUME {places[i]}: 1; PRODUCE {places[i + 1]}: 1;")
    return "\n".join(lines) + "\n"


def refused(out: subprocess.CompletedProcess[str], written: Path, pattern: str) -> bool:
    """One error line matching `pattern`, exit code 2, and no file written."""
    lines = out.stderr.strip().splitlines()
    return (out.returncode == 2 and len(lines) == 1 and re.search(pattern, lines[0]) is not None
            and not written.exists())


def test_writer_escaping(tool: str, tmp: Path) -> None:
    """PNML written by convert parses with Python's XML parser and names every
    node as the source did; names a format cannot carry are refused."""
    carried = [name for name in AWKWARD_NAMES if "\x07" not in name]
    places = [f"{name}_place" for name in carried] + ["end"]
    source = tmp / "awkward.lola"
    source.write_text(awkward_net(places, carried))
    pnml = tmp / "awkward.pnml"
    out = convert(tool, source, "pnml", pnml)
    try:
        page = ElementTree.parse(pnml).getroot()[0][0]
    except (ElementTree.ParseError, IndexError, FileNotFoundError) as error:
        check(False, f"convert wrote PNML that does not parse ({error}): {out.stderr}")
    else:
        def ids(tag: str) -> list[str | None]:
            return [node.get("id") for node in page if node.tag.endswith(tag)]

        def texts(tag: str) -> list[str | None]:
            return [node.findtext("{*}name/{*}text") for node in page if node.tag.endswith(tag)]

        arcs = [(node.get("source"), node.get("target")) for node in page
                if node.tag.endswith("arc")]
        expected_arcs = [pair for i, name in enumerate(carried)
                         for pair in ((places[i], name), (name, places[i + 1]))]
        check(ids("place") == places and texts("place") == places,
              f"PNML places {ids('place')}, expected {places}")
        check(ids("transition") == carried and texts("transition") == carried,
              f"PNML transitions {ids('transition')}, expected {carried}")
        check(arcs == expected_arcs, f"PNML arcs {arcs}, expected {expected_arcs}")
        check(same_counts(explore(tool, pnml), explore(tool, source)),
              "the PNML written from awkward names explores differently from its source")

    # Ids are unique in a PNML document: the net's, the page's and the arcs'
    # must not be a node's (nor each other's), however the nodes are named.
    clashing = tmp / "clashing.lola"  # the net id comes from the file: "clashing"
    clashing.write_text(awkward_net(["a0", "_a1", "page0", "clashing", "a"],
                                    ["_page0", "a2", "__a0", "_clashing"]))
    out = convert(tool, clashing, "pnml", tmp / "clashing.pnml")
    every_id = [node.get("id") for node in ElementTree.parse(tmp / "clashing.pnml").iter()
                if node.get("id") is not None]
    duplicates = sorted({i for i in every_id if every_id.count(i) > 1}, key=str)
    check(out.returncode == 0 and duplicates == [],
          f"PNML written for nodes named like made-up ids repeats ids {duplicates}")
    check(same_counts(explore(tool, tmp / "clashing.pnml"), explore(tool, clashing)),
          "the PNML written for nodes named like made-up ids explores differently")

    bell = tmp / "bell.lola"
    bell.write_text(awkward_net(["p", "q"], ["bell\x07"]))
    out = convert(tool, bell, "pnml", tmp / "bell.pnml")
    check(refused(out, tmp / "bell.pnml", r"transition 'bell.': XML cannot carry"),
          f"a control character in a name: expected one error line, got {out.stderr!r}")

    for name in ("two words", "comma,name", "semi;colon", "co:lon", "{brace"):
        pnml = tmp / "blank.pnml"
        pnml.write_text(PNML_HEAD + f"<place id={quoteattr(name)}/>\n" + PNML_TAIL)
        out = convert(tool, pnml, "lola", tmp / "blank.lola")
        check(refused(out, tmp / "blank.lola", r"place '.*': LoLA cannot carry"),
              f"place {name!r} in LoLA: expected one error line, got {out.stderr!r}")
    pnml.write_text(PNML_HEAD + '<place id="SAFE"/>\n' + PNML_TAIL)
    out = convert(tool, pnml, "lola", tmp / "safe.lola")
    check(refused(out, tmp / "safe.lola", r"place 'SAFE': LoLA reads it as a keyword"),
          f"a place named SAFE in LoLA: expected one error line, got {out.stderr!r}")


MANY = 20_000  # names of each kind: a lookup that scans them all makes reading quadratic

Arc = tuple[str, str, int]


def many_names_net(extra_place: str = "", extra_transition: str = "") -> tuple[str, list[Arc]]:
    """A LoLA net of MANY places and MANY transitions, one declaration a line,
    names sharing long prefixes.  Transition i takes from place i by two arcs
    (which add up) and from a scrambled place, and gives to place i+1.
    Returns the text and its arcs, merged, as (source, target, weight)."""
    places = [f"place_{i:06d}" for i in range(MANY + 1)]
    lines = ["PLACE", *[f"  {p}," for p in places]]
    lines += [f"  {extra_place}," if extra_place else "  spare,", "  last;",
              f"MARKING {places[0]}: 1;"]
    weights: dict[tuple[str, str], int] = {}
    for i in range(MANY):
        name, scrambled = f"transition_{i:06d}", places[(i * 7919 + 1) % MANY]
        lines.append(f"TRANSITION {name} CONSUME {places[i]}: 1, {scrambled}: 1, {places[i]}: 2;"
                     f" PRODUCE {places[i + 1]}: 1;")
        for source, target, weight in ((places[i], name, 1), (scrambled, name, 1),
                                       (places[i], name, 2), (name, places[i + 1], 1)):
            weights[source, target] = weights.get((source, target), 0) + weight
    if extra_transition:
        lines.append(f"TRANSITION {extra_transition} CONSUME last: 1; PRODUCE ;")
    return "\n".join(lines) + "\n", [(s, t, w) for (s, t), w in weights.items()]


def declared_on(text: str, name: str) -> list[int]:
    """The numbers of the lines that declare `name` (one declaration a line)."""
    return [number for number, line in enumerate(text.splitlines(), 1)
            if line == f"  {name}," or line.startswith(f"TRANSITION {name} ")]


def test_many_names(tool: str, tmp: Path) -> None:
    """Names are found among many: every arc of a large net joins the places
    and transitions it names, and a duplicate or unknown name is still caught
    on the line it is on."""
    text, expected = many_names_net()
    source, pnml = tmp / "many.lola", tmp / "many.pnml"
    source.write_text(text)
    out = convert(tool, source, "pnml", pnml)
    if out.returncode != 0:
        check(False, f"{MANY} names: convert failed: {out.stderr}")
        return
    page = ElementTree.parse(pnml).getroot()[0][0]
    arcs = [(node.get("source", ""), node.get("target", ""),
             int(node.findtext("{*}inscription/{*}text", "0")))
            for node in page if node.tag.endswith("arc")]
    check(sorted(arcs) == sorted(expected),
          f"{MANY} names: the {len(arcs)} arcs written are not the {len(expected)} arcs read")

    for extra, duplicate in ((dict(extra_place="place_000000"), "place_000000"),
                             (dict(extra_place="transition_000007"), "transition_000007"),
                             (dict(extra_transition="place_019999"), "place_019999"),
                             (dict(extra_transition="transition_000000"), "transition_000000")):
        text_with = many_names_net(**extra)[0]
        source.write_text(text_with)
        out = subprocess.run([tool, "explore", str(source)], capture_output=True, text=True)
        lines = out.stderr.strip().splitlines()
        pattern = rf":{declared_on(text_with, duplicate)[1]}: duplicate id '{duplicate}'$"
        check(out.returncode == 2 and len(lines) == 1 and re.search(pattern, lines[0]) is not None,
              f"{extra}: expected one line matching {pattern!r}, got {out.returncode} {lines}")
    source.write_text(text.replace("PRODUCE place_000501: 1;", "PRODUCE place_0005: 1;"))
    out = subprocess.run([tool, "explore", str(source)], capture_output=True, text=True)
    check(out.returncode == 2 and "unknown target 'place_0005'" in out.stderr,
          f"an unknown place among {MANY}: {out.stderr!r}")


def wide_net(places: int, first_marking: int) -> str:
    """A LoLA net of many places; the first holds `first_marking` tokens."""
    return ("PLACE " + ", ".join(f"p{i}" for i in range(places)) + ";\n"
            f"MARKING p0: {first_marking};\nTRANSITION t CONSUME p0: 1; PRODUCE p1: 1;\n")


def check_not_started(out: subprocess.CompletedProcess[str], code: int, pattern: str,
                      what: str) -> None:
    """A run that could not start: no counts, one error line naming the cause."""
    lines = out.stderr.strip().splitlines()
    check(out.returncode == code and out.stdout == "" and len(lines) == 1
          and re.search(pattern, lines[0]) is not None,
          f"{what}: expected exit {code}, no output and one line matching {pattern!r}; got "
          f"{out.returncode}, {out.stdout[:200]!r}, {lines}")


def test_refusals(tool: str, tmp: Path) -> None:
    """What does not fit stops with the cause and the option to change: a state
    too large for --alloc pool stops the run (the counts so far are shown),
    bucket tables that start larger than --memory or a place that starts with
    more tokens than a record holds stop it before it starts.  Wide nets whose
    markings differ from the initial one in a few places fit a pool."""
    for places, tokens, states in ((8200, 2, 3), (131_080, 1, 2)):
        net = tmp / "wide.lola"
        net.write_text(wide_net(places, tokens))
        r = explore(tool, net, "--alloc", "pool")
        check(r["complete"] is True and r["states"] == states,
              f"{places} places under --alloc pool: {r}")
    # Every place goes from three tokens to two: one byte a place, 20,000 bytes.
    names = [f"p{i}" for i in range(20_000)]
    net = tmp / "large-states.lola"
    net.write_text("PLACE " + ", ".join(names) + ";\nMARKING " + ", ".join(f"{p}: 3" for p in names)
                   + ";\nTRANSITION t CONSUME " + ", ".join(f"{p}: 1" for p in names)
                   + "; PRODUCE ;\n")
    for json_option in ([], ["--json"]):
        out = subprocess.run([tool, "explore", str(net), "--alloc", "pool", *json_option],
                             capture_output=True, text=True)
        lines = out.stderr.strip().splitlines()
        too_large = (r"stopped early: a state of 20003 bytes is too large for --alloc pool .*"
                     r"use --alloc arena or --alloc malloc")
        check(out.returncode == 3 and "states 1" in out.stdout.replace('"states":1,', "states 1")
              and len(lines) == 1 and re.search(too_large, lines[0]) is not None,
              f"a 20,000-byte state under --alloc pool {json_option}: {out.returncode} "
              f"{out.stdout[:200]!r} {lines}")
    r = explore(tool, net, "--alloc", "arena")
    check(r["complete"] is True and r["states"] == 4, f"the 20,000-byte states in an arena: {r}")
    net = generate(tool, "kanban", 1, "lola", tmp)
    out = subprocess.run([tool, "explore", str(net), "--store", "buckets:100000", "--memory", "1"],
                         capture_output=True, text=True)
    check_not_started(out, 2, r"100000 bucket tables.*more than --memory 1 MiB",
                      "buckets that start above --memory")
    net = tmp / "heap.lola"
    net.write_text("PLACE heap, other;\nMARKING heap: 70000;\n"
                   "TRANSITION t CONSUME heap: 1; PRODUCE other: 1;\n")
    out = subprocess.run([tool, "explore", str(net)], capture_output=True, text=True)
    check_not_started(out, 2, r"place 'heap' starts with more than 65535 tokens",
                      "a place that starts with 70,000 tokens")


def run_in_address_space(limit_mib: int, *command: str) -> subprocess.CompletedProcess[str]:
    """The command under an address-space limit; a hang past a minute comes
    back as exit code -1."""
    limit = functools.partial(resource.setrlimit, resource.RLIMIT_AS,
                              (limit_mib << 20, limit_mib << 20))
    try:
        return subprocess.run(command, capture_output=True, text=True, preexec_fn=limit,
                              timeout=60)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, -1, "", "(still running after a minute)")


def test_address_space(tool: str, tmp: Path) -> None:
    """Memory the kernel will not give (under an address-space limit) stops
    the run before it starts, saying what could not be had (the tables of a
    million buckets, the stacks of 1,024 threads), or, once it runs, stops it
    saying what ran out.  Not a sanitizer test: their shadow memory needs the
    address space."""
    net = str(generate(tool, "kanban", 1, "lola", tmp))
    for limit_mib in (128, 256):
        out = run_in_address_space(limit_mib, tool, "explore", net, "--store", "buckets:1048576",
                                   "--json")
        check_not_started(out, 1, r"cannot (map|allocate) the state tables",
                          f"a million buckets under a {limit_mib} MiB address space")
    out = run_in_address_space(256, tool, "explore", net, "--threads", "1024", "--alloc", "malloc")
    check_not_started(out, 1, r"cannot start thread \d+ of 1024 .*; use fewer --threads",
                      "1,024 threads under a 256 MiB address space")

    # Kanban 4 (454,475 states) under limits from where it cannot go far to
    # where it nearly finishes: a run that stops names what ran out, and it
    # is never the --memory budget (4 GiB by default, far from reached).
    kanban = str(generate(tool, "kanban", 4, "lola", tmp))
    honest = (r"stopped early: (cannot map a state table of \d+ slots \(.*\)|out of memory for "
              r"states);|out of memory for the work stack|cannot start thread \d+ of \d+ "
              r"\(.*\); use fewer --threads")
    stopped = 0
    # From limits where it cannot go far (what the process needs besides the
    # states depends on the allocator's reservations) to where it finishes.
    for limit_mib in range(32, 208, 16):
        out = run_in_address_space(limit_mib, tool, "explore", kanban)
        lines = out.stderr.strip().splitlines()
        stopped += out.returncode != 0
        check(out.returncode == 0 or (out.returncode in (1, 3) and len(lines) == 1
                                      and re.search(honest, lines[0]) is not None),
              f"kanban 4 under a {limit_mib} MiB address space: {out.returncode} {lines}")
    check(stopped > 0, "kanban 4 ran to the end under every address-space limit tried")


def options_by_command(synopsis: str) -> dict[str, list[str]]:
    """Each subcommand's bracketed options in a usage synopsis."""
    commands: dict[str, list[str]] = {}
    for command, rest in re.findall(r"pnexplore (\w+)(.*?)(?=pnexplore \w+|$)", synopsis, re.S):
        commands[command] = re.findall(r"\[[^\]]*\]", rest)
    return commands


def test_usage(tool: str, tmp: Path) -> None:
    """The synopsis in main.c's opening comment is the one the program prints."""
    printed = subprocess.run([tool], capture_output=True, text=True).stderr
    source = (Path(__file__).resolve().parent.parent / "main.c").read_text()
    comment = source[:source.index("*/")]
    documented, shown = options_by_command(comment), options_by_command(printed)
    check(shown != {} and documented == shown,
          f"main.c's opening comment documents {documented}, the program prints {shown}")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tool, which = sys.argv[1], sys.argv[2]
    tests = {"counts": test_counts, "mcc": test_mcc, "random": test_random,
             "formats": test_formats, "witness": test_witness,
             "errors": test_errors, "usage": test_usage,
             "json-escaping": test_json_escaping, "writer-escaping": test_writer_escaping,
             "many-names": test_many_names, "refusals": test_refusals,
             "address-space": test_address_space,
             "counts-small": lambda t, d: test_counts(t, d, largest=10_000)}
    with tempfile.TemporaryDirectory() as tmp:
        tests[which](tool, Path(tmp))
    print(f"{'ok' if not failures else 'FAILED'}: {which}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
