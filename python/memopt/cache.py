"""The on-disk cache of compiled plans (`memopt.wrap`).

An entry is a directory named by a key, the SHA-256 of everything the plan
depends on:

* the model's code: the source files defining the classes of all its
  modules and the Python functions their `forward` calls by name (followed
  three calls deep, torch's own code excluded: the PyTorch version stands
  for it), or the generated code of an FX GraphModule;
* its structure: every module's path, class and simple attributes (ints,
  floats, strings, ... such as a layer's `steps` or `p`), every parameter's
  and buffer's name, shape, dtype, device and `requires_grad`, and the
  training flags the plan is compiled for;
* the input signatures and the compile options;
* the PyTorch version and memopt's version: this package's version and the
  identity (path, size, modification time) of memopt-compile and the
  runtime library, so a rebuilt compiler never reuses an old plan.

Parameter and buffer *values* are not part of the key (a plan does not
depend on them) and are not stored: the cached module holds empty tensors
and `wrap` binds the model's own tensors into it.

    <cache dir>/<key>/model.memopt.pt   the compiled module (weights emptied)
                      report.json       memopt-compile's --report with --timeline
                                        (everything memopt.summary shows)
                      meta.json         the key's parts and the SHA-256 of each file
    <cache dir>/kernel-marks/<hash>.txt  convolution workspaces measured on
                                        a GPU, one file per GPU and cuDNN
                                        settings (memopt/kernel_marks.py)

An entry whose files do not match their checksums, or that does not load,
is removed and compiled again (`CacheWarning`), never used. Entries are
written into a temporary directory and renamed into place, so a crash or
a concurrent process never leaves half an entry under its key.

The cache directory is `cache_dir` of `wrap`, else `MEMOPT_CACHE_DIR`, else
`$XDG_CACHE_HOME/memopt` (`~/.cache/memopt`). `clear(path)` empties it.
"""
import hashlib
import inspect
import json
import os
import pathlib
import shutil
import sys
import tempfile
import time
import types
from typing import Dict, Iterable, List, Optional

__all__ = ["default_dir", "model_fingerprint", "is_simple_value",
           "make_key", "tool_identity", "Entry", "DamagedEntry", "lookup",
           "new_directory", "store", "remove", "clear", "FORMAT", "MODULE",
           "REPORT"]

#: Bumped whenever what is stored or how it is keyed changes (it is part of
#: the key and of meta.json). 2: the report holds the timelines and the
#: recommendation; no compile.log / baseline.log.
FORMAT = 2

MODULE = "model.memopt.pt"
REPORT = "report.json"
FILES = (MODULE, REPORT)


def default_dir() -> pathlib.Path:
    if os.environ.get("MEMOPT_CACHE_DIR"):
        return pathlib.Path(os.environ["MEMOPT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "memopt"


# ---------------------------------------------------------------------------
# The model's code and structure
# ---------------------------------------------------------------------------

_FILE_HASHES: Dict[str, str] = {}


def _file_hash(path: str) -> Optional[str]:
    if path in _FILE_HASHES:
        return _FILE_HASHES[path]
    try:
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None
    _FILE_HASHES[path] = digest
    return digest


def _code_hash(code: types.CodeType, h) -> None:
    """Feeds a code object (and the code objects nested in it) to `h`."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_hash(const, h)
        else:
            h.update(repr(const).encode())


def _is_torch(module_name: str) -> bool:
    root = module_name.split(".")[0]
    return root in ("torch", "builtins", "typing", "collections", "math",
                    "functools", "itertools", "numbers", "abc", "warnings")


class _CodeDigest:
    """Collects the code a model's forward depends on."""

    def __init__(self):
        self.h = hashlib.sha256()
        self.seen_files = set()
        self.seen_objects = set()

    def add_object(self, obj, depth: int = 0) -> None:
        key = id(obj)
        if key in self.seen_objects:
            return
        self.seen_objects.add(key)
        module_name = getattr(obj, "__module__", None) or ""
        if _is_torch(module_name):
            return  # PyTorch's own code: covered by its version
        path = digest = None
        try:
            path = inspect.getsourcefile(obj)
        except (TypeError, OSError):
            path = None
        if path and module_name == "__main__":
            # The running script: its own text, so that editing the training
            # loop around the model does not invalidate the plan.
            try:
                text = inspect.getsource(obj)
                digest = hashlib.sha256(text.encode()).hexdigest()
                path = f"{path}:{getattr(obj, '__qualname__', '')}"
            except (TypeError, OSError):
                digest = None
        elif path:
            digest = _file_hash(path)
        if digest is not None:
            if path not in self.seen_files:
                self.seen_files.add(path)
                self.h.update(f"file {os.path.basename(path)} {digest}\n".encode())
        else:
            # No source file (defined interactively, in __main__ of -c, ...):
            # hash the byte code instead.
            self.h.update(f"code {module_name}.{getattr(obj, '__qualname__', '')}\n"
                          .encode())
            functions = []
            if isinstance(obj, type):
                functions = [v for v in vars(obj).values()
                             if isinstance(v, types.FunctionType)]
            elif isinstance(obj, types.FunctionType):
                functions = [obj]
            for f in functions:
                _code_hash(f.__code__, self.h)
        if depth >= 3:
            return
        for f in self._functions_of(obj):
            for name in self._names(f.__code__):
                target = f.__globals__.get(name)
                if isinstance(target, (types.FunctionType, type)):
                    self.add_object(target, depth + 1)

    @staticmethod
    def _functions_of(obj) -> List[types.FunctionType]:
        if isinstance(obj, types.FunctionType):
            return [obj]
        if isinstance(obj, type):
            found = []
            for klass in obj.__mro__:
                if _is_torch(klass.__module__):
                    continue
                found += [v for v in vars(klass).values()
                          if isinstance(v, types.FunctionType)]
            return found
        return []

    @staticmethod
    def _names(code: types.CodeType) -> Iterable[str]:
        yield from code.co_names
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                yield from _CodeDigest._names(const)


_SIMPLE = (bool, int, float, str, type(None))


def is_simple_value(value) -> bool:
    """Whether an attribute is part of the structure the key covers (ints,
    floats, strings, ... and short tuples and lists of them)."""
    if isinstance(value, _SIMPLE):
        return True
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return all(is_simple_value(v) for v in value)
    return False


def model_fingerprint(model) -> str:
    """SHA-256 of the model's code and structure (not of its weights, nor
    of its training flags: `make_key` adds those)."""
    import torch
    digest = _CodeDigest()
    lines = []
    for path, module in model.named_modules(remove_duplicate=False):
        cls = type(module)
        digest.add_object(cls)
        lines.append(f"module {path} {cls.__module__}.{cls.__qualname__}")
        if isinstance(module, torch.fx.GraphModule):
            lines.append("fx " + hashlib.sha256(module.code.encode()).hexdigest())
        for name, value in sorted(vars(module).items()):
            if name.startswith("_") or name == "training":
                continue
            if is_simple_value(value):
                lines.append(f"  attr {name}={value!r}")
        for name, p in module._parameters.items():
            lines.append(f"  param {name} " + (
                "None" if p is None else
                f"{tuple(p.shape)} {p.dtype} {p.device.type} {p.requires_grad}"))
        for name, b in module._buffers.items():
            persistent = name not in module._non_persistent_buffers_set
            lines.append(f"  buffer {name} " + (
                "None" if b is None else
                f"{tuple(b.shape)} {b.dtype} {b.device.type} {persistent}"))
    digest.h.update("\n".join(lines).encode())
    return digest.h.hexdigest()


def _identity(path) -> str:
    try:
        st = os.stat(path)
    except OSError:
        return f"{path} missing"
    return f"{os.path.realpath(path)} {st.st_size} {st.st_mtime_ns}"


def make_key(parts: Dict[str, object]) -> str:
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def file_identity(path) -> str:
    """A file in the key: its real path, size and modification time."""
    return _identity(path)


def content_identity(path) -> str:
    """A small file in the key by its bytes (a cost-model fit)."""
    return _sha256(pathlib.Path(path))


def tool_identity(compiler, runtime) -> str:
    """What stands for memopt's version in the key."""
    from . import __version__
    return f"memopt {__version__}; {_identity(compiler)}; {_identity(runtime)}"


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------

def _sha256(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Entry:
    """One cache entry (a directory)."""

    def __init__(self, directory: pathlib.Path, meta: dict):
        self.directory = pathlib.Path(directory)
        self.meta = meta

    def path(self, name: str) -> pathlib.Path:
        return self.directory / name

    @property
    def module_path(self) -> pathlib.Path:
        return self.path(MODULE)

    def read_text(self, name: str) -> str:
        return self.path(name).read_text(errors="replace")

    def report(self) -> dict:
        return json.loads(self.read_text(REPORT))


class DamagedEntry(Exception):
    """Why an entry cannot be used (one line)."""


def lookup(root: pathlib.Path, key: str) -> Optional[Entry]:
    """The entry under `key`, None when there is none. Raises DamagedEntry
    when one is there but does not check out."""
    directory = pathlib.Path(root) / key
    if not directory.exists():
        return None
    meta_path = directory / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as e:
        raise DamagedEntry(f"meta.json unreadable ({type(e).__name__})")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or \
            meta.get("key") != key:
        raise DamagedEntry("meta.json does not describe this key")
    files = meta.get("files") or {}
    for name in FILES:
        path = directory / name
        if name not in files:
            raise DamagedEntry(f"{name} has no checksum")
        if not path.is_file():
            raise DamagedEntry(f"{name} is missing")
        if _sha256(path) != files[name]:
            raise DamagedEntry(f"{name} does not match its checksum")
    return Entry(directory, meta)


def remove(root: pathlib.Path, key: str) -> None:
    shutil.rmtree(pathlib.Path(root) / key, ignore_errors=True)


def new_directory(root: pathlib.Path, key: str) -> pathlib.Path:
    """A fresh private directory next to where the entry will go."""
    root = pathlib.Path(root)
    root.mkdir(parents=True, exist_ok=True)
    return pathlib.Path(tempfile.mkdtemp(prefix=f".{key[:16]}.", dir=root))


def store(root: pathlib.Path, key: str, work: pathlib.Path,
          parts: dict, extra: Optional[dict] = None) -> Entry:
    """Checksums the files of `work` (a new_directory), writes meta.json and
    renames it to the entry of `key` (replacing a damaged one)."""
    root, work = pathlib.Path(root), pathlib.Path(work)
    meta = {"format": FORMAT, "key": key, "created": time.time(),
            "python": sys.version.split()[0], "parts": parts,
            "files": {name: _sha256(work / name) for name in FILES}}
    meta.update(extra or {})
    tmp = work / "meta.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1, default=str) + "\n")
    os.replace(tmp, work / "meta.json")
    for name in os.listdir(work):  # leave only what the entry consists of
        if name not in FILES and name != "meta.json":
            path = work / name
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
    target = root / key
    try:
        os.replace(work, target)
    except OSError:
        # Another process stored the same key meanwhile (a non-empty
        # directory cannot be replaced): use ours from where it is.
        if target.exists():
            shutil.rmtree(target, ignore_errors=True)
            try:
                os.replace(work, target)
            except OSError:
                return Entry(work, meta)
        else:
            raise
    return Entry(target, meta)


def clear(root=None) -> int:
    """Removes every entry under `root` (default: the default directory);
    returns how many there were."""
    root = pathlib.Path(root) if root is not None else default_dir()
    if not root.is_dir():
        return 0
    count = 0
    for child in root.iterdir():
        if child.is_dir() and len(child.name) == 64:
            count += 1
        if child.is_dir():
            shutil.rmtree(child, ignore_errors=True)
    return count
