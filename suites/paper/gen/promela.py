#!/usr/bin/env python3
"""Spin verifiers for suites/paper/modelchecking.toml and suites/real/spin.toml:
a Promela model, generated here or read from a file, turned into C by
`spin -a` and compiled by `cc` here, the verifier (pan) written to standard
output. Compiling is the generator's job, so that no run measures the C
compiler under the allocator being compared; the suite runs the verifier.

    promela.py counters PROCESSES LIMIT SEED [violated]
        PROCESSES processes each count a local variable up to LIMIT, adding a
        random step to a shared sum at each count: about LIMIT^PROCESSES states.
        With `violated`, an assertion fails in a state deep in the search.
    promela.py compile MODEL [CC-FLAG...]
        the model of a file (a BEEM model, say), with more flags for cc
        (-DMEMLIM=2048, -DNOCLAIM, ...).

pan is compiled with -O2 -DSAFETY (safety properties: assertions and, unless
the run says -E, invalid end states)."""

import os
import random
import shutil
import subprocess
import sys
import tempfile


def counters(processes: int, limit: int, seed: int, violated: bool) -> str:
    rng = random.Random(seed)
    steps = [rng.randint(1, 7) for _ in range(processes)]
    lines = ["int sum;", "byte finished;"]
    for p in range(processes):
        lines += [f"active proctype P{p}() {{",
                  "  byte i;",
                  "  do",
                  f"  :: i < {limit} -> i++; sum = (sum + {steps[p]}) % 1000",
                  f"  :: i == {limit} -> break",
                  "  od;",
                  "  finished++",
                  "}"]
    bad = sum(steps) * limit % 1000
    # A failed assertion only where every process has finished with the sum at
    # its one reachable final value: the search must get that deep first.
    condition = f"!(finished == {processes} && sum == {bad})" if violated else "sum < 1000"
    lines += ["active proctype Watch() {", f"  assert({condition})", "}"]
    return "\n".join(lines) + "\n"


USAGE = ("usage: promela.py counters PROCESSES LIMIT SEED [violated]\n"
         "       promela.py compile MODEL [CC-FLAG...]")


def main() -> int:
    words = sys.argv[1:]
    flags: list[str] = []
    if words[:1] == ["compile"] and len(words) >= 2:
        try:
            with open(words[1]) as f:
                model_text = f.read()
        except OSError as error:
            print(f"promela.py: cannot read the model {words[1]}: {error.strerror}",
                  file=sys.stderr)
            return 2
        flags = words[2:]
    else:
        violated = words[-1:] == ["violated"]
        if violated:
            words = words[:-1]
        if words[:1] != ["counters"] or len(words) != 4 or not all(w.isdigit() for w in words[1:]):
            print(USAGE, file=sys.stderr)
            return 2
        processes, limit, seed = (int(w) for w in words[1:])
        model_text = counters(processes, limit, seed, violated)
    return compile_verifier(model_text, flags)


def compile_verifier(model_text: str, flags: list[str]) -> int:
    """pan of the model, compiled with flags, to standard output."""
    for program in ("spin", "cc"):
        if shutil.which(program) is None:
            print(f"promela.py: {program} is not installed (Debian package "
                  f"{'spin' if program == 'spin' else 'gcc'})", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="promela-") as work:
        model = os.path.join(work, "model.pml")
        with open(model, "w") as f:
            f.write(model_text)
        for command in (["spin", "-a", "model.pml"],
                        ["cc", "-O2", "-DSAFETY", *flags, "-o", "pan", "pan.c"]):
            done = subprocess.run(command, cwd=work, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"promela.py: {' '.join(command)} failed: {done.stderr.strip()[-300:]}",
                      file=sys.stderr)
                return 1
        with open(os.path.join(work, "pan"), "rb") as f:
            shutil.copyfileobj(f, sys.stdout.buffer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
