"""Where memopt's compiler and runtime library are.

Looked up in this order (the first that exists wins):

1. `MEMOPT_COMPILE` (the memopt-compile executable) and
   `MEMOPT_RUNTIME_LIB` (libmemopt_runtime.so), when set;
2. `MEMOPT_BUILD_DIR`/bin and /lib, when set (the in-tree tests and
   scripts set it);
3. the paths an installation recorded next to this package: `_paths.py`,
   written by `cmake --install` (relative to the package) and by
   `pip install` (the tools copied into the package, `memopt/_bin`,
   `memopt/_lib`);
4. `build/` of the checkout this package lives in;
5. `memopt-compile` on PATH, with the runtime in `../lib` next to it.

Nothing here imports torch.
"""
import os
import pathlib
import shutil
from typing import List, Optional

from .errors import ToolNotFoundError

__all__ = ["compiler_path", "runtime_library_path", "candidates", "run_compiler"]

_PACKAGE = pathlib.Path(__file__).resolve().parent
_RUNTIME = "libmemopt_runtime.so"
_COMPILER = "memopt-compile"


def _installed() -> List[pathlib.Path]:
    """(bin dir, lib dir) pairs an installation recorded, as a flat list."""
    try:
        from . import _paths  # generated at install time
    except ImportError:
        return []
    found = []
    for name in ("BIN_DIR", "LIB_DIR"):
        value = getattr(_paths, name, None)
        if value:
            path = pathlib.Path(value)
            found.append(path if path.is_absolute()
                         else (_PACKAGE / path).resolve())
    return found


def candidates(kind: str) -> List[pathlib.Path]:
    """Every place looked at for `kind` ("compiler" or "runtime"), in
    order."""
    if kind not in ("compiler", "runtime"):
        raise ValueError(kind)
    name, sub, env = ((_COMPILER, "bin", "MEMOPT_COMPILE") if kind == "compiler"
                      else (_RUNTIME, "lib", "MEMOPT_RUNTIME_LIB"))
    paths: List[pathlib.Path] = []
    if os.environ.get(env):
        paths.append(pathlib.Path(os.environ[env]))
    if os.environ.get("MEMOPT_BUILD_DIR"):
        paths.append(pathlib.Path(os.environ["MEMOPT_BUILD_DIR"]) / sub / name)
    installed = _installed()
    if installed:
        directory = installed[0] if kind == "compiler" else installed[-1]
        paths.append(directory / name)
    paths.append(_PACKAGE / ("_bin" if kind == "compiler" else "_lib") / name)
    checkout = _PACKAGE.parents[1]
    if (checkout / "CMakeLists.txt").exists():
        paths.append(checkout / "build" / sub / name)
    on_path = shutil.which(_COMPILER)
    if on_path and _is_script(on_path):
        on_path = None  # pip's `memopt-compile` wrapper (run_compiler)
    if on_path:
        prefix = pathlib.Path(on_path).resolve().parent.parent
        paths.append(pathlib.Path(on_path) if kind == "compiler"
                     else prefix / "lib" / name)
    return paths


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def _first(kind: str) -> Optional[pathlib.Path]:
    for path in candidates(kind):
        if path.is_file():
            return path
    return None


def _require(kind: str, name: str) -> pathlib.Path:
    found = _first(kind)
    if found is None:
        raise ToolNotFoundError(
            f"{name} not found (looked at "
            + ", ".join(str(p) for p in candidates(kind))
            + "): build it (cmake --build build) or set MEMOPT_BUILD_DIR")
    return found


def compiler_path() -> pathlib.Path:
    """The memopt-compile executable; ToolNotFoundError (one line, with the
    places looked at) when there is none."""
    return _require("compiler", "memopt-compile")


def runtime_library_path() -> pathlib.Path:
    """libmemopt_runtime.so; ToolNotFoundError when there is none."""
    return _require("runtime", "libmemopt_runtime.so")


def run_compiler() -> None:
    """The `memopt-compile` command a pip install puts on PATH: runs this
    installation's compiler with the same arguments."""
    import sys
    try:
        path = compiler_path()
    except ToolNotFoundError as e:
        print(f"memopt: error: {e}", file=sys.stderr)
        raise SystemExit(1)
    os.execv(str(path), [str(path)] + sys.argv[1:])
