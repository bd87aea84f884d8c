"""libmemopt_runtime.so, the operators compiled modules call: loaded into
the process once, before the first compiled module is."""
import pathlib
import threading

import torch

from .locate import runtime_library_path

__all__ = ["load_runtime"]

_lock = threading.Lock()
_loaded = False


def _registered() -> bool:
    try:
        torch.ops.memopt.enable_memory_stats  # noqa: B018 (a lookup)
        return True
    except (RuntimeError, AttributeError):
        return False


def load_runtime() -> pathlib.Path:
    """Loads libmemopt_runtime.so into this process once (unless another
    copy registered memopt's operators already) and returns its path."""
    global _loaded
    path = runtime_library_path()
    with _lock:
        if not _loaded:
            if not _registered():
                torch.ops.load_library(str(path))
            _loaded = True
    return path
