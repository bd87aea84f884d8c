"""memopt: an ahead-of-time training-memory compiler for PyTorch.

    import memopt
    model = memopt.wrap(model, sample_input)   # same parameters, same optimizer
    print(memopt.summary(model))
    eager = memopt.detach(model)

`wrap`, `summary`, `detach` and the exceptions are loaded on first use, and
so are the submodules (e.g. `import memopt.fx`), so that importing the
package needs nothing but PyTorch. docs/python.md describes the front end.
"""
import importlib

__version__ = "0.1.0"

# name -> submodule that defines it
_EXPORTS = {
    "wrap": "wrapping", "detach": "wrapping", "MemoptModule": "wrapped_module",
    "MemoptRuntimeError": "errors",
    "summary": "plan_summary", "Summary": "plan_summary",
    "MemoptError": "errors", "CompileError": "errors",
    "InfeasibleBudgetError": "errors", "UnsupportedModelError": "errors",
    "InputError": "errors", "InputShapeError": "errors",
    "ToolNotFoundError": "errors",
    "MemoptWarning": "errors", "CacheWarning": "errors",
    "clear_cache": "cache",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memopt' has no attribute '{name}'")
    if name == "clear_cache":
        value = importlib.import_module(".cache", __name__).clear
    else:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))
