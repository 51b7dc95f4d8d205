"""Builds libhugeheap into the hugeheap package (pyproject.toml says the
rest): a wheel, or `pip install .`, carries hugeheap/lib/libhugeheap.so, which
`hugeheap run --alloc hugeheap` preloads when no other is named. The library
is built with CMake and a C11 compiler, in Release mode, target
hugeheap_shared only. An editable install (`pip install -e .`, what `make`
does) builds nothing: it finds the checkout's build/lib."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).resolve().parent


class BuildWithLibrary(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        if shutil.which("cmake") is None:
            raise SystemExit("hugeheap: building the package needs cmake and a C compiler "
                             "(Debian: apt-get install cmake gcc)")
        with tempfile.TemporaryDirectory(prefix="hugeheap-wheel-") as scratch:
            subprocess.run(["cmake", "-S", str(ROOT), "-B", scratch,
                            "-DCMAKE_BUILD_TYPE=Release"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["cmake", "--build", scratch, "--target", "hugeheap_shared",
                            "--parallel"], check=True, stdout=subprocess.DEVNULL)
            library = (Path(scratch) / "lib" / "libhugeheap.so").resolve()
            target = Path(self.build_lib) / "hugeheap" / "lib" / "libhugeheap.so"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(library, target)
            target.chmod(0o755)


class WithNativeCode(Distribution):
    """A platform wheel (it carries a shared library), for any Python 3."""

    def has_ext_modules(self) -> bool:
        return True


# build/ is CMake's: setuptools builds beside it, in build/python-package.
setup(cmdclass={"build_py": BuildWithLibrary}, distclass=WithNativeCode,
      options={"build": {"build_base": "build/python-package"},
               "bdist_wheel": {"py_limited_api": "cp311"}})
