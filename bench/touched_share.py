#!/usr/bin/env python3
"""How much of its memory a program touches in a short window: a candidate
for telling, without hardware counters, a program whose huge pages pay (it
touches most of its heap all the time, as a SAT solver's propagation does)
from one whose do not (it touches what it just allocated, as tabling does).

    python3 bench/touched_share.py [--window-ms 100] [--every-ms 300] -- COMMAND...

Runs COMMAND (under whatever allocator the environment preloads) and, every
--every-ms, clears the kernel's referenced bits of its pages (writing "1" to
/proc/PID/clear_refs, which a process may also do to itself), waits
--window-ms, and reads Referenced and Anonymous from /proc/PID/smaps_rollup.
A window counts when the program ran at least half of it on a CPU and has
16 MiB of anonymous memory or more.  Prints one line: the windows counted,
the largest anonymous memory, and the median and least of Referenced over
Anonymous (Referenced counts the program's file pages too, and a whole 2 MiB
for a huge page touched once: run it with 4 KiB pages, e.g. under glibc).

Linux only (clear_refs and smaps_rollup: 4.14 and later); a command that
ends before its first window prints that nothing was measured.  Exit status
1 if the command could not be started."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from hugeheap.measure.hugepages import rollup_bytes  # noqa: E402

MIB = 1024 * 1024
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system time of the process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--window-ms", type=int, default=100)
    parser.add_argument("--every-ms", type=int, default=300)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (write it after --)")
    try:
        program = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError as error:
        print(f"touched_share: cannot run {command[0]}: {error.strerror}", file=sys.stderr)
        return 1
    windows: list[tuple[int, int]] = []  # (anonymous, referenced) bytes
    window = args.window_ms / 1000
    while program.poll() is None:
        try:
            with open(f"/proc/{program.pid}/clear_refs", "w") as clear:
                clear.write("1")
            cpu_before = cpu_seconds(program.pid)
            time.sleep(window)
            memory = rollup_bytes(program.pid)
            ran = cpu_seconds(program.pid) - cpu_before
        except (FileNotFoundError, ProcessLookupError):
            break  # it ended within the window
        if memory is None:
            break
        if ran >= window / 2 and memory.get("Anonymous", 0) >= 16 * MIB:
            windows.append((memory["Anonymous"], memory.get("Referenced", 0)))
        time.sleep(max(0.0, (args.every_ms - args.window_ms) / 1000))
    program.wait()
    # The program and its last argument (the instance, as a rule).
    name = os.path.basename(command[0]) + (
        " " + os.path.basename(command[-1])[:40] if len(command) > 1 else "")
    if not windows:
        print(f"{name}: nothing measured (no window of {args.window_ms} ms with the program "
              "running and 16 MiB of anonymous memory)")
        return 0
    shares = [referenced / anonymous for anonymous, referenced in windows]
    print(f"{name}: {len(windows)} windows, anonymous up to "
          f"{max(a for a, _ in windows) / MIB:.0f} MiB, referenced / anonymous median "
          f"{statistics.median(shares):.2f} (least {min(shares):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
