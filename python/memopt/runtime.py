"""libmemopt_runtime.so, the operators compiled modules call: loaded into
the process once, before the first compiled module is."""
import os
import pathlib
import struct
import threading
from typing import Dict, List, Optional, Tuple

import torch

from .locate import runtime_library_path

__all__ = ["load_runtime", "operator_libraries", "python_only_libraries"]

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


def _dynamic_names(path: str) -> Optional[Tuple[List[str], List[str]]]:
    """The undefined dynamic symbols and the needed libraries (DT_NEEDED)
    of a 64-bit little-endian ELF shared library; None when the file is
    not one (read with the standard library: binutils may not be
    installed)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or \
            data[5] != 1:
        return None

    def string(table_at: int, offset: int) -> str:
        end = data.index(b"\0", table_at + offset)
        return data[table_at + offset:end].decode("ascii", "replace")

    try:
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", data,
                                       shoff + i * shentsize)
                    for i in range(shnum)]
        undefined, needed = [], []
        for (_, kind, _, _, offset, size, link, _, _, entsize) in sections:
            if not entsize:
                continue
            strings_at = sections[link][4]
            for at in range(offset, offset + size, entsize):
                if kind == 11:  # SHT_DYNSYM: Elf64_Sym
                    name, _, _, shndx = struct.unpack_from("<IBBH", data, at)
                    if shndx == 0 and name:  # SHN_UNDEF
                        undefined.append(string(strings_at, name))
                elif kind == 6:  # SHT_DYNAMIC: Elf64_Dyn
                    tag, value = struct.unpack_from("<qQ", data, at)
                    if tag == 1:  # DT_NEEDED
                        needed.append(string(strings_at, value))
        return undefined, needed
    except (struct.error, IndexError, ValueError):
        return None


_needs_python_memo: Dict[Tuple[str, int, int], bool] = {}


def needs_python(path: str) -> bool:
    """Whether a shared library refers to the Python interpreter's symbols
    or needs a library that does (LibTorch's Python bindings, libpython:
    what torch.utils.cpp_extension links unless told not to): such a
    library loads only into a Python process, never into memopt-compile."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
    if key not in _needs_python_memo:
        undefined, needed = _dynamic_names(path) or ([], [])
        _needs_python_memo[key] = any(
            name.startswith(("Py", "_Py")) for name in undefined) or any(
            name.startswith(("libtorch_python", "libpython"))
            for name in needed)
    return _needs_python_memo[key]


def python_only_libraries() -> List[str]:
    """The libraries torch.ops.load_library loaded that need the Python
    interpreter (not passed to memopt-compile)."""
    loaded = getattr(torch.ops, "loaded_libraries", set())
    return sorted(path for path in loaded if needs_python(path))


def operator_libraries() -> List[str]:
    """Every library torch.ops.load_library loaded into this process
    (torchvision's, a team's C++ extensions), memopt's runtime and those
    that need the Python interpreter (torchvision 0.21's image decoders)
    excepted: what memopt-compile loads (--load-library) to import and run
    a model that calls their operators."""
    runtime = os.path.realpath(runtime_library_path())
    loaded = getattr(torch.ops, "loaded_libraries", set())
    return sorted(path for path in loaded
                  if os.path.realpath(path) != runtime and
                  not needs_python(path))
