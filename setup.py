"""setuptools glue for pyproject.toml: copies memopt's compiled tools into
the package.

`build_py` adds, from the CMake build directory (MEMOPT_BUILD_DIR, default
build/ next to this file):

    memopt/_bin/memopt-compile
    memopt/_lib/libmemopt_runtime.so

which memopt/locate.py finds relative to the installed package. Without
them the install stops with a message, unless MEMOPT_PYTHON_ONLY=1 (then
the package looks for the tools at run time: MEMOPT_BUILD_DIR, PATH).
setuptools' own build files go to <build dir>/pip, not to build/lib, which
is CMake's.
"""
import os
import pathlib
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = pathlib.Path(__file__).resolve().parent
BUILD = pathlib.Path(os.environ.get("MEMOPT_BUILD_DIR", ROOT / "build")).resolve()

TOOLS = {
    "_bin/memopt-compile": BUILD / "bin" / "memopt-compile",
    "_lib/libmemopt_runtime.so": BUILD / "lib" / "libmemopt_runtime.so",
}


class BuildPyWithTools(build_py):
    def run(self):
        super().run()
        missing = [str(p) for p in TOOLS.values() if not p.is_file()]
        if missing:
            if os.environ.get("MEMOPT_PYTHON_ONLY") == "1":
                print("memopt: installing the Python package only (no "
                      "bundled tools): " + ", ".join(missing), file=sys.stderr)
                return
            raise SystemExit(
                "memopt: build the compiler and runtime first (cmake --build "
                f"{BUILD} --target memopt-compile memopt_runtime), or set "
                "MEMOPT_BUILD_DIR; missing: " + ", ".join(missing))
        for relative, source in TOOLS.items():
            target = pathlib.Path(self.build_lib) / "memopt" / relative
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target), preserve_mode=True)


class BinaryDistribution(Distribution):
    """The wheel holds native binaries: tag it for this platform."""

    def has_ext_modules(self):
        return True


PIP_BUILD = BUILD / "pip"
PIP_BUILD.mkdir(parents=True, exist_ok=True)

setup(
    cmdclass={"build_py": BuildPyWithTools},
    distclass=BinaryDistribution,
    options={"build": {"build_base": str(PIP_BUILD)},
             "egg_info": {"egg_base": str(PIP_BUILD)}},
)
