#!/usr/bin/env python3
"""A C file of FUNCTIONS small functions for `gcc -O2` to compile: a compiler
run as one of the small processes whose memory the allocators are compared on.

    python3 cfile.py FUNCTIONS"""

from __future__ import annotations

import sys


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print("usage: cfile.py FUNCTIONS", file=sys.stderr)
        return 2
    count = int(sys.argv[1])
    for i in range(count):
        print(f"int f{i}(int x) {{ int s = 0; for (int k = 0; k < x; k++) s += k * {i} ^ (s >> 3);"
              f" return s; }}")
    print("int main(void) { return f0(3); }")
    return 0


if __name__ == "__main__":
    sys.exit(main())
