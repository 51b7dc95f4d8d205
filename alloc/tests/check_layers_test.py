#!/usr/bin/env python3
"""check_layers.py fails where it should: fed a made-up `nm -A` listing with a
call up a layer (and a header whose inline code calls up), it names the call
and exits 1; a named loop passes, and a named loop that is gone is said.

    python3 alloc/tests/check_layers_test.py"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import check_layers  # noqa: E402

# nm -A's two shapes of line: a definition (address, type) and a use (U).
DOWNWARD = """\
build/src/os.c.o:0000000000000010 T _hh_os_unmap
build/src/stops.c.o:0000000000000000 T _hh_fatal
build/src/os.c.o:                 U _hh_fatal
build/src/malloc_api.c.o:0000000000000040 T _hh_alloc_big
build/src/malloc_api.c.o:                 U _hh_os_unmap
build/src/malloc_api.c.o:0000000000000000 t usable_in_page
"""
# os.c (system) calling malloc_api.c (process and API): the misplaced call.
UPWARD = DOWNWARD + "build/src/os.c.o:                 U _hh_alloc_big\n"


class CallLayers(unittest.TestCase):
    def test_downward_calls_pass(self) -> None:
        self.assertEqual(check_layers.call_problems(DOWNWARD.splitlines(), None, loops=[]), [])

    def test_a_call_up_a_layer_fails(self) -> None:
        found = check_layers.call_problems(UPWARD.splitlines(), None, loops=[])
        self.assertEqual(len(found), 1)
        self.assertIn("os.c (system) uses _hh_alloc_big of malloc_api.c (process and API)",
                      found[0])

    def test_a_named_loop_passes(self) -> None:
        loop = [("os.c", "_hh_alloc_big", "a test's reason")]
        self.assertEqual(check_layers.call_problems(UPWARD.splitlines(), None, loops=loop), [])

    def test_a_named_loop_that_is_gone_is_said(self) -> None:
        loop = [("os.c", "_hh_alloc_big", "a test's reason")]
        found = check_layers.call_problems(DOWNWARD.splitlines(), None, loops=loop)
        self.assertEqual(len(found), 1)
        self.assertIn("no longer there", found[0])

    def test_a_header_calling_up_fails(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "kind.h").write_text(
                "/* _hh_alloc_big in a comment is no call */\n"
                "static inline void *f(void) { return _hh_os_unmap, _hh_alloc_big(1, 16, 0); }\n")
            found = check_layers.call_problems(DOWNWARD.splitlines(), Path(tmp), loops=[])
        self.assertEqual(len(found), 1)
        self.assertIn("kind.h (kinds) uses _hh_alloc_big of malloc_api.c", found[0])

    def test_the_command_exits_1(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "nm.txt"
            listing.write_text(UPWARD)
            run = subprocess.run([sys.executable, str(HERE / "check_layers.py"),
                                  "--nm-output", str(listing)],
                                 capture_output=True, text=True, check=False)
        self.assertEqual(run.returncode, 1)
        self.assertIn("os.c (system) uses _hh_alloc_big", run.stdout)


if __name__ == "__main__":
    unittest.main()
