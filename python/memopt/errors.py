"""The exceptions and warnings of memopt's Python front end.

Every error `memopt.wrap` raises is a `MemoptError` whose message is one
line. Errors reported by `memopt-compile` keep what its one-line diagnostic
says (`memopt: error: <message>, at <module path> (<file>:<line>)`): the
message, the module path and the source location are also attributes.

    try:
        wrapped = memopt.wrap(model, x, budget="10%")
    except memopt.InfeasibleBudgetError as e:
        print(e.min_reachable_peak_bytes)
    except memopt.MemoptError as e:
        print(e)            # one line

`compile_error` turns a failed memopt-compile run into the right class,
`describe` says what a wrong argument is, and `warn` issues a warning
attributed to the user's line rather than to memopt's.
"""
import os
import re
import sys
import warnings
from typing import List, Optional

__all__ = ["MemoptError", "CompileError", "InfeasibleBudgetError",
           "UnsupportedModelError", "InputError", "InputShapeError",
           "ToolNotFoundError", "MemoptRuntimeError",
           "MemoptWarning", "CacheWarning", "parse_diagnostic",
           "compile_error", "describe", "warn"]


class MemoptError(Exception):
    """Base class of memopt's errors; the message is one line."""

    def __init__(self, message: str):
        message = " ".join(str(message).split("\n")).strip()
        super().__init__(message)
        self.message = message


class ToolNotFoundError(MemoptError, FileNotFoundError):
    """memopt-compile or libmemopt_runtime.so cannot be found."""


class InputError(MemoptError, TypeError):
    """A sample input, spec or option `wrap` cannot use (wrong type, wrong
    rank or shape for the model, unknown dtype, ...)."""


class UnsupportedModelError(MemoptError, TypeError):
    """The model cannot be compiled: neither scriptable nor traceable, or
    its forward returns something other than tensors. `.module_path` and
    `.source` (`file:line`) say where, when known."""

    def __init__(self, message: str, *, module_path: Optional[str] = None,
                 source: Optional[str] = None):
        super().__init__(message)
        self.module_path = module_path
        self.source = source


# `memopt: error: <message>, at <path> (<file>:<line>)`; the location part
# is optional and only the last one counts.
_LOCATION = re.compile(r",? at (?P<path>[^,()]*?)\s*\((?P<source>[^()]*:\d+)\)\s*$")
_PREFIX = re.compile(r"^memopt(?:-compile)?: error: ")


def parse_diagnostic(stderr: str):
    """(message, module_path, source) of the first `memopt: error:` line of
    `stderr` (or its last non-empty line), with the location split off."""
    lines = [l.strip() for l in (stderr or "").splitlines() if l.strip()]
    line = next((l for l in lines if _PREFIX.match(l)),
                lines[-1] if lines else "memopt-compile failed")
    message = _PREFIX.sub("", line)
    path = source = None
    m = _LOCATION.search(message)
    if m:
        path = m.group("path").strip() or None
        source = m.group("source")
    return message, path, source


class CompileError(MemoptError):
    """memopt-compile failed. `.diagnostic` is its one-line message,
    `.module_path` / `.source` where it points (None when it names no
    place), `.stderr` everything it printed, `.command` the command line."""

    def __init__(self, message: str, *, diagnostic: str = "",
                 module_path: Optional[str] = None,
                 source: Optional[str] = None, stderr: str = "",
                 command: Optional[List[str]] = None,
                 returncode: Optional[int] = None):
        super().__init__(message)
        self.diagnostic = diagnostic
        self.module_path = module_path
        self.source = source
        self.stderr = stderr
        self.command = list(command or [])
        self.returncode = returncode


class InfeasibleBudgetError(CompileError, ValueError):
    """The budget is below the smallest peak the planner can reach;
    `.min_reachable_peak_bytes` is that peak when the compiler said it."""

    def __init__(self, message: str, *, min_reachable_peak_bytes=None, **kw):
        super().__init__(message, **kw)
        self.min_reachable_peak_bytes = min_reachable_peak_bytes


class InputShapeError(CompileError, InputError):
    """memopt-compile could not run the model on the sample input's shapes
    (wrong rank, wrong number of inputs, sizes the model rejects); the
    message is the compiler's, with the module path and source line."""


class MemoptRuntimeError(MemoptError, RuntimeError):
    """The compiled forward refused its inputs (e.g. an input signature a
    strict plan does not know); the message is memopt's line."""


_REACHABLE = re.compile(r"smallest reachable peak is (\d+(?:\.\d+)?) ?"
                        r"(B|KiB|MiB|GiB|TiB)\b")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
# What memopt-compile says when the sample's shapes do not fit the model.
_SHAPE_ERRORS = ("on inputs of the given shapes", "--input-shape",
                 "input spec", "the method takes", "input signature")


def compile_error(stderr: str, command: List[str], returncode: int,
                  model_name: str) -> CompileError:
    """The CompileError (InfeasibleBudgetError, InputShapeError) for a
    memopt-compile run on `model_name` that failed with `stderr`."""
    message, path, source = parse_diagnostic(stderr)
    kw = dict(diagnostic=message, module_path=path, source=source,
              stderr=stderr, command=command, returncode=returncode)
    text = f"memopt-compile failed on {model_name}: {message}"
    lower = message.lower()
    if "infeasible" in lower or "cannot meet" in lower or "cannot be met" in lower:
        m = _REACHABLE.search(message)
        reachable = (int(float(m.group(1)) * _UNITS[m.group(2)]) if m else None)
        return InfeasibleBudgetError(text, min_reachable_peak_bytes=reachable,
                                     **kw)
    if any(s in message for s in _SHAPE_ERRORS):
        return InputShapeError(text, **kw)
    return CompileError(text, **kw)


def describe(value) -> str:
    """`a 4-d tensor`, `a list`: what a message says an argument is."""
    import torch
    if isinstance(value, torch.Tensor):
        return f"a {value.dim()}-d tensor"
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


class MemoptWarning(UserWarning):
    """Something memopt did instead of what was asked (tracing instead of
    scripting, the original forward instead of a plan)."""


class CacheWarning(MemoptWarning):
    """A cache entry was damaged or stale and has been recompiled."""


def warn(message: str, category=MemoptWarning) -> None:
    """warnings.warn, attributed to the first caller outside memopt (and
    outside torch.nn.Module's call machinery)."""
    import torch.nn.modules.module as module_py
    package = os.path.dirname(os.path.abspath(__file__))
    module_file = os.path.abspath(module_py.__file__)
    frame, level = sys._getframe(1), 2
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if os.path.dirname(filename) != package and filename != module_file:
            break
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
