"""`memopt.wrap`: one call from a PyTorch model to a memory-planned one.

    import memopt
    model = torchvision.models.resnet18()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model = memopt.wrap(model, torch.randn(32, 3, 224, 224))   # the one line
    ...                                                         # train as before
    print(memopt.summary(model))

What `wrap` does, and nothing more (every planning decision is
memopt-compile's):

1. converts the model to TorchScript (`torch.jit.script`; when that fails,
   `torch.jit.trace` on the sample input, with a `MemoptWarning` saying
   why and what tracing loses), with the training flags its modules have
   now;
2. saves it and runs `memopt-compile` on it for the sample inputs' shapes
   (several samples or recorded signatures: one plan each), with the
   budget/preference options, plus `memopt-compile --analyze-only -v` for
   the baseline timeline the summary plots;
3. loads the result (`torch.ops.load_library` of the runtime, then
   `torch.jit.load`) and binds the model's own `Parameter` and buffer
   objects into it, so the compiled forward reads and updates exactly the
   tensors the optimizer holds;
4. caches the result on disk (memopt/cache.py).

The returned `MemoptModule` shares everything with the model: its
`named_parameters()` are the model's objects, `state_dict()` /
`load_state_dict()` are the model's, `train()` / `eval()` set the model's
flags. Its forward runs

* the model's own forward when autograd is off (`torch.no_grad()`,
  `torch.inference_mode()`): without a backward there is nothing to plan;
* otherwise the plan compiled for the modules' current training flags
  (compiled on first use for flags not seen before, then kept; switching
  costs nothing), or, when no plan can be compiled for those flags, the
  model's own forward with a one-time `MemoptWarning`.

`memopt.detach(wrapped)` gives the model back.
"""
import copy
import dataclasses
import inspect
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn as nn

from . import cache as _cache
from .errors import (CacheWarning, CompileError, InfeasibleBudgetError,
                     InputError, InputShapeError, MemoptError, MemoptWarning,
                     UnsupportedModelError, parse_diagnostic)
from .locate import compiler_path, runtime_library_path

__all__ = ["wrap", "detach", "MemoptModule", "MemoptRuntimeError",
           "load_runtime", "PREFERENCES"]

PREFERENCES = ("speed", "balanced", "memory")

#: memopt's input dtype names (docs/compile.md), as the recorder writes them.
_DTYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.float64: "f64", torch.int64: "i64", torch.int32: "i32",
    torch.bool: "i1",
}
_DTYPE_OF_NAME = {v: k for k, v in _DTYPES.items()}


class MemoptRuntimeError(MemoptError, RuntimeError):
    """The compiled forward refused its inputs (e.g. an input signature a
    strict plan does not know); the message is memopt's line."""


# ---------------------------------------------------------------------------
# The runtime library
# ---------------------------------------------------------------------------

_runtime_lock = threading.Lock()
_runtime_loaded = False


def _runtime_registered() -> bool:
    try:
        torch.ops.memopt.enable_memory_stats  # noqa: B018 (a lookup)
        return True
    except (RuntimeError, AttributeError):
        return False


def load_runtime() -> pathlib.Path:
    """Loads libmemopt_runtime.so into this process once (unless another
    copy registered memopt's operators already) and returns its path."""
    global _runtime_loaded
    path = runtime_library_path()
    with _runtime_lock:
        if not _runtime_loaded:
            if not _runtime_registered():
                torch.ops.load_library(str(path))
            _runtime_loaded = True
    return path


# ---------------------------------------------------------------------------
# Inputs: samples and signatures
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class _Input:
    name: str
    shape: Tuple[int, ...]
    dtype: str

    def spec(self) -> str:
        return f"{self.name}:{'x'.join(map(str, self.shape))}:{self.dtype}"


def _forward_signature(model: nn.Module) -> Optional[inspect.Signature]:
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError):
        return None


def _forward_names(model: nn.Module) -> List[str]:
    signature = _forward_signature(model)
    if signature is not None:
        return [p.name for p in signature.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD,
                              p.KEYWORD_ONLY)]
    schema = getattr(model.forward, "schema", None)
    if schema is not None:
        return [a.name for a in schema.arguments][1:]
    return []


def _describe(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dim()}-d tensor"
    return f"a {type(value).__name__}"


def _normalize_samples(sample_input) -> List[Tuple[tuple, dict]]:
    """[(args, kwargs)] of the sample inputs; InputError on anything else."""
    if sample_input is None:
        return []
    several = isinstance(sample_input, list)
    items = sample_input if several else [sample_input]
    if several and not items:
        raise InputError("sample_input is an empty list: give a tensor, a "
                         "tuple of tensors or a dict of keyword tensors "
                         "(a list gives several samples)")
    samples = []
    for i, item in enumerate(items):
        where = f"sample_input[{i}]" if several else "sample_input"
        if isinstance(item, torch.Tensor):
            samples.append(((item,), {}))
        elif isinstance(item, tuple):
            if not item:
                raise InputError(f"{where} is an empty tuple")
            for j, value in enumerate(item):
                if not isinstance(value, torch.Tensor):
                    raise InputError(
                        f"{where}[{j}] is {_describe(value)}: memopt compiles "
                        f"forward's tensor inputs only (a tuple holds one "
                        f"tensor per positional input)")
            samples.append((item, {}))
        elif isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str) or not isinstance(value, torch.Tensor):
                    raise InputError(
                        f"{where}[{key!r}] is {_describe(value)}: a dict sample "
                        f"maps forward's argument names to tensors")
            samples.append(((), dict(item)))
        else:
            hint = (" (several samples are a list of tensors, tuples or dicts)"
                    if several else
                    " (a list gives several samples)")
            raise InputError(
                f"{where} is {_describe(item)}: expected a tensor, a tuple "
                f"of tensors or a dict of keyword tensors{hint}")
    return samples


def _bind_sample(model: nn.Module, args: tuple, kwargs: dict,
                 where: str) -> Tuple[_Input, ...]:
    """The named inputs of one sample, in forward's order."""
    signature = _forward_signature(model)
    if signature is not None:
        params = [p for p in signature.parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise InputError(
                f"{where} does not fit {type(model).__name__}.forward"
                f"{signature}: {e}") from None
        missing = [p.name for p in params if p.name not in bound.arguments]
        if missing:
            raise InputError(
                f"{where} gives no tensor for forward's input(s) "
                f"{', '.join(missing)}: memopt compiles every input of "
                f"forward, give a sample for each")
        named = list(bound.arguments.items())
        flat = []
        for name, value in named:
            kind = signature.parameters[name].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                flat += [(f"{name}{i}", v) for i, v in enumerate(value)]
            elif kind == inspect.Parameter.VAR_KEYWORD:
                flat += list(value.items())
            else:
                flat.append((name, value))
        named = flat
    else:
        names = _forward_names(model)
        named = [(names[i] if i < len(names) else f"input{i}", a)
                 for i, a in enumerate(args)] + list(kwargs.items())
    inputs = []
    for name, value in named:
        if value.dtype not in _DTYPES:
            raise InputError(
                f"{where}: input '{name}' has dtype {value.dtype}, which "
                f"memopt cannot compile (one of "
                f"{', '.join(str(d).replace('torch.', '') for d in _DTYPES)})")
        inputs.append(_Input(name, tuple(int(s) for s in value.shape),
                             _DTYPES[value.dtype]))
    return tuple(inputs)


@dataclasses.dataclass
class _Signatures:
    """What memopt-compile is told about the inputs."""
    specs: List[str]                      # --spec arguments
    files: List[Tuple[str, str]]          # (name, text) of --signatures files
    example: Optional[Tuple[tuple, dict]]  # inputs to trace with

    def arguments(self, directory: pathlib.Path) -> List[str]:
        args = []
        for spec in self.specs:
            args += ["--spec", spec]
        for name, text in self.files:
            path = directory / name
            path.write_text(text)
            args += ["--signatures", str(path)]
        return args

    def retyped(self, dtype: torch.dtype) -> "_Signatures":
        """The same signatures with floating-point inputs of `dtype` (the
        model was converted: `.double()`, `.half()`)."""
        new = _DTYPES.get(dtype)
        if new is None:
            return self
        floats = {"f32", "f16", "bf16", "f64"}

        def convert(spec: str) -> str:
            inputs, sep, settings = spec.partition(";")
            parts = []
            for part in inputs.split(","):
                fields = part.split(":")
                if len(fields) == 2:
                    fields.append("f32")
                if len(fields) == 3 and fields[2] in floats:
                    fields[2] = new
                parts.append(":".join(fields))
            return ",".join(parts) + sep + settings
        example = self.example
        if example is not None:
            args, kwargs = example
            cast = (lambda t: t.to(dtype) if t.is_floating_point() else t)
            example = (tuple(cast(a) for a in args),
                       {k: cast(v) for k, v in kwargs.items()})
        return _Signatures([convert(s) for s in self.specs], self.files,
                           example)

    def describe(self) -> str:
        text = "; ".join(s.split(";")[0] for s in self.specs[:3])
        if len(self.specs) > 3:
            text += f"; ... ({len(self.specs)} signatures)"
        if self.files:
            text += ("; " if text else "") + f"{len(self.files)} signature file(s)"
        return text


def _collect_signatures(model: nn.Module, sample_input, specs) -> _Signatures:
    samples = _normalize_samples(sample_input)
    counts: Dict[Tuple[_Input, ...], int] = {}
    for i, (args, kwargs) in enumerate(samples):
        where = ("sample_input" if len(samples) == 1 and
                 not isinstance(sample_input, list) else f"sample_input[{i}]")
        key = _bind_sample(model, args, kwargs, where)
        counts[key] = counts.get(key, 0) + 1
    spec_args = [",".join(i.spec() for i in key) + f";count={n}"
                 for key, n in counts.items()]
    files: List[Tuple[str, str]] = []
    example = samples[0] if samples else None

    items: List[Any]
    if specs is None:
        items = []
    elif isinstance(specs, (list, tuple)):
        items = list(specs)
    else:
        items = [specs]
    from .recorder import Signature, SignatureRecorder
    for item in items:
        if isinstance(item, SignatureRecorder):
            spec_args += [s.spec() for s in item.signatures()]
        elif isinstance(item, Signature):
            spec_args.append(item.spec())
        elif isinstance(item, (str, os.PathLike)):
            text = os.fspath(item)
            if text.endswith(".json") or os.path.isfile(text):
                try:
                    content = pathlib.Path(text).read_text()
                except OSError as e:
                    raise InputError(f"cannot read signature file '{text}': "
                                     f"{e.strerror}") from None
                files.append((f"signatures{len(files)}.json", content))
            else:
                spec_args.append(text)
        else:
            raise InputError(
                f"specs holds {_describe(item)}: expected spec strings "
                f"('x:8x3x32x32'), recorder Signatures, a SignatureRecorder "
                f"or the path of a recorded signature file")
    if not spec_args and not files:
        raise InputError("wrap needs the input shapes: give sample_input (a "
                         "tensor, a tuple or a dict of tensors) or specs")
    if example is None:
        example = _example_from_spec(model, spec_args, files)
    return _Signatures(spec_args, files, example)


def _example_from_spec(model, spec_args, files) -> Optional[Tuple[tuple, dict]]:
    """Inputs of the first signature (for tracing a model that does not
    script): zeros for integer inputs, standard normal for floats."""
    inputs = []
    if spec_args:
        for part in spec_args[0].split(";")[0].split(","):
            fields = part.split(":")
            if len(fields) < 2:
                return None
            try:
                shape = [int(s) for s in fields[1].split("x") if s]
            except ValueError:
                return None
            dtype = _DTYPE_OF_NAME.get(fields[2] if len(fields) > 2 else "f32")
            if dtype is None:
                return None
            inputs.append((fields[0], shape, dtype))
    else:
        import json
        try:
            first = json.loads(files[0][1])["signatures"][0]["inputs"]
            inputs = [(i["name"], i["shape"], _DTYPE_OF_NAME[i.get("dtype", "f32")])
                      for i in first]
        except (ValueError, KeyError, IndexError, TypeError):
            return None
    gen = torch.Generator().manual_seed(0)
    tensors = {name: (torch.randn(*shape, generator=gen).to(dtype)
                      if dtype.is_floating_point else
                      torch.zeros(*shape, dtype=dtype))
               for name, shape, dtype in inputs}
    return (), tensors


# ---------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------

def _paths_option(value, option: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple, set)):
        parts = []
        for p in value:
            if not isinstance(p, str):
                raise InputError(f"{option} holds {_describe(p)}: expected "
                                 f"module paths such as 'layer1.0'")
            parts.append(p)
    else:
        raise InputError(f"{option} is {_describe(value)}: expected a module "
                         f"path, a comma-separated string or a list of them")
    return ",".join(parts) if parts else None


def _budget_text(budget) -> Optional[str]:
    if budget is None:
        return None
    if isinstance(budget, bool):
        raise InputError("budget is a bool: give bytes (int), a fraction of "
                         "the baseline peak (0.4) or a string ('40%', '1.5GiB')")
    if isinstance(budget, int):
        if budget <= 0:
            raise InputError(f"budget {budget} is not a positive number of bytes")
        return str(budget)
    if isinstance(budget, float):
        if not 0.0 < budget <= 1.0:
            raise InputError(f"budget {budget} is no fraction of the baseline "
                             f"peak (0 < budget <= 1); give bytes as an int")
        return f"{budget * 100:g}%"
    if isinstance(budget, str):
        return budget.strip()
    raise InputError(f"budget is {_describe(budget)}: give bytes (int), a "
                     f"fraction (0.4) or a string ('40%', '1.5GiB')")


def _device_of(model: nn.Module, device) -> str:
    if device is not None:
        text = str(device.type if isinstance(device, torch.device) else device)
        text = text.split(":")[0]
        if text not in ("cpu", "cuda"):
            raise InputError(f"device '{device}' is neither cpu nor cuda")
        return text
    for tensor in list(model.parameters()) + list(model.buffers()):
        return "cuda" if tensor.device.type == "cuda" else "cpu"
    return "cpu"


# ---------------------------------------------------------------------------
# TorchScript
# ---------------------------------------------------------------------------

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def _where(model: nn.Module, text: str) -> str:
    """` at <module path> (<file>:<line>)` for the first source location in
    a TorchScript error that lies in one of the model's classes."""
    locations = _FILE_LINE.findall(text)
    if not locations:
        return ""
    classes = []
    for path, module in model.named_modules():
        try:
            source = inspect.getsourcefile(type(module))
            lines, start = inspect.getsourcelines(type(module))
        except (TypeError, OSError):
            continue
        if source:
            classes.append((path, source, start, start + len(lines)))
    for filename, line in locations:
        line = int(line)
        for path, source, start, end in classes:
            if start <= line < end and _same_file(source, filename):
                return (f", at {path or '<root>'} "
                        f"({os.path.basename(filename)}:{line})")
    filename, line = locations[0]
    return f", at {os.path.basename(filename)}:{line}"


def _first_line(error: BaseException, limit: int = 160) -> str:
    lines = [l.strip() for l in str(error).splitlines() if l.strip()]
    text = lines[0] if lines else type(error).__name__
    text = text.rstrip(":")
    return text if len(text) <= limit else text[:limit - 3] + "..."


_AT = re.compile(r", at (?:(?P<path>[^ ()]+) )?\((?P<source>[^()]+:\d+)\)$"
                 r"|, at (?P<bare>[^ ()]+:\d+)$")


def _location(text: str):
    """(module path, source) of a `, at <path> (<file>:<line>)` suffix."""
    m = _AT.search(text)
    if not m:
        return None, None
    if m.group("bare"):
        return None, m.group("bare")
    return m.group("path"), m.group("source")


class _PreservedState:
    """Restores the model's buffers (batch-norm statistics) and training
    flags, and the global RNG, after running it (tracing runs forward
    once; parameters it does not change)."""

    def __init__(self, model: nn.Module):
        self.model = model

    def __enter__(self):
        self.values = [(t, t.detach().clone()) for t in self.model.buffers()]
        self.flags = [(m, m.training) for m in self.model.modules()]
        self.rng = torch.random.get_rng_state()
        self.cuda_rng = (torch.cuda.get_rng_state_all()
                         if torch.cuda.is_available() else None)
        return self

    def __exit__(self, *exc):
        with torch.no_grad():
            for tensor, value in self.values:
                tensor.copy_(value)
        for module, flag in self.flags:
            module.training = flag
        torch.random.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)


_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks")


def _hooked_modules(model: nn.Module) -> List[str]:
    return [path or "<root>" for path, m in model.named_modules()
            if any(getattr(m, h, None) for h in _HOOKS)]


class _PreservedAttributes:
    """Converts the model without its hooks (TorchScript would try to
    compile them; the compiled forward does not run Python hooks) and
    removes the attributes scripting adds to the model's modules
    (TorchScript records `__overloads__` on every module it visits)."""

    def __init__(self, model: nn.Module):
        self.before = [(m, set(vars(m))) for m in model.modules()]
        self.hooks = [(m, h, getattr(m, h)) for m in model.modules()
                      for h in _HOOKS if getattr(m, h, None)]

    def __enter__(self):
        import collections
        for module, name, _ in self.hooks:
            setattr(module, name, collections.OrderedDict())
        return self

    def __exit__(self, *exc):
        for module, name, hooks in self.hooks:
            setattr(module, name, hooks)
        for module, names in self.before:
            for name in set(vars(module)) - names:
                try:
                    delattr(module, name)
                except AttributeError:
                    pass


def _to_torchscript(model: nn.Module, example, verbose: bool,
                    warn: bool = True):
    """(ScriptModule, how): scripted, else traced on `example` with a
    warning; UnsupportedModelError (one line) when neither works. The model
    is left as it was (values, flags, attributes, RNG)."""
    with _PreservedAttributes(model):
        return _to_torchscript_inner(model, example, warn)


def _to_torchscript_inner(model: nn.Module, example, warn: bool):
    name = type(model).__name__
    if isinstance(model, torch.jit.ScriptModule):
        return model, "torchscript"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.jit.script(model), "script"
    except Exception as e:  # TorchScript raises many types
        script_error = _first_line(e) + _where(model, str(e))
    path, source = _location(script_error)
    if example is None:
        raise UnsupportedModelError(
            f"cannot script {name}: {script_error}; and without a sample "
            f"input it cannot be traced either", module_path=path,
            source=source) from None
    args, kwargs = example
    if kwargs:
        signature = _forward_signature(model)
        names = list(signature.parameters) if signature else []
        if names[:len(kwargs)] == list(kwargs):
            args, kwargs = tuple(kwargs[n] for n in names[:len(kwargs)]), {}
        else:
            raise UnsupportedModelError(
                f"cannot script {name}: {script_error}; and PyTorch "
                f"{torch.__version__} cannot trace keyword inputs",
                module_path=path, source=source) from None
    try:
        # with autograd on, as in training (some modules take other paths
        # without it, e.g. nn.TransformerEncoderLayer's fast path)
        with _PreservedState(model), warnings.catch_warnings(), \
                torch.enable_grad():
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(model, args, check_trace=False)
    except Exception as e:
        trace_error = _first_line(e, 100) + _where(model, str(e))
        if path is None and source is None:
            path, source = _location(trace_error)
        raise UnsupportedModelError(
            f"{name} can be neither scripted ({script_error}) nor traced "
            f"({trace_error})", module_path=path, source=source) from None
    if warn:
        _warn(
            f"memopt.wrap: torch.jit.script failed on {name} ({script_error}); "
            f"traced it on the sample input instead. A trace records only the "
            f"operations that input ran: Python control flow is fixed to the "
            f"branches it took, and inputs that would take others run them "
            f"wrong")
    return traced, "trace"


def _return_types(scripted) -> List[str]:
    """The TorchScript return type(s) of forward, as strings."""
    try:
        schema = scripted.forward.schema
    except (AttributeError, RuntimeError):
        return []
    return [str(r.type) for r in schema.returns]


_TENSOR_RESULT = re.compile(r"^(Tensor|Tuple\[(Tensor(, )?)+\]|\((Tensor(, )?)+\))$")


def _check_outputs(model: nn.Module, scripted) -> None:
    for text in _return_types(scripted):
        if not _TENSOR_RESULT.match(text.replace(" ", "").replace(",", ", ")):
            source = None
            try:
                forward = type(model).forward
                _, line = inspect.getsourcelines(forward)
                source = f"{os.path.basename(inspect.getsourcefile(forward))}:{line}"
            except (TypeError, OSError):
                pass
            where = f", at <root> ({source})" if source else ""
            raise UnsupportedModelError(
                f"{type(model).__name__}.forward returns {text}: memopt "
                f"compiles models whose forward returns a tensor or a tuple "
                f"of tensors{where}", module_path="<root>",
                source=source) from None


def _module_table(root) -> Dict[str, Any]:
    return dict(root.named_modules(remove_duplicate=False))


def _flags_of(model: nn.Module) -> Tuple[bool, ...]:
    return tuple(m.training for m in model.modules())


def _describe_flags(model: nn.Module, flags: Tuple[bool, ...]) -> str:
    if all(flags):
        return "train mode"
    if not any(flags):
        return "eval mode"
    paths = [p for (p, _), f in zip(model.named_modules(), flags) if not f]
    shown = ", ".join(p or "<root>" for p in paths[:4])
    more = f" and {len(paths) - 4} more" if len(paths) > 4 else ""
    return f"train mode, eval in {shown}{more}"


def _apply_flags(model: nn.Module, scripted) -> None:
    """Gives every module of `scripted` the training flag of the module at
    the same path of `model`."""
    table = _module_table(scripted)
    for path, module in model.named_modules(remove_duplicate=False):
        target = table.get(path)
        if target is not None:
            target._c.setattr("training", bool(module.training))


# ---------------------------------------------------------------------------
# Binding the model's tensors into the compiled module
# ---------------------------------------------------------------------------

class _Stale(Exception):
    """The compiled module does not fit the model (one line)."""


def _state_slots(model: nn.Module):
    """(path, owner module, dict, name, tensor) of every parameter and buffer
    (each occurrence, tied ones too)."""
    for path, module in model.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            table = getattr(module, kind)
            for name, tensor in table.items():
                if tensor is not None:
                    yield path, module, table, name, tensor


def _strip(loaded) -> None:
    """Replaces every parameter and buffer of `loaded` by an empty tensor of
    its dtype (what the cache stores: weights are bound at load)."""
    for _, module in loaded.named_modules(remove_duplicate=False):
        for name in list(module._parameters.keys()) + list(module._buffers.keys()):
            value = module._c.getattr(name)
            if isinstance(value, torch.Tensor):
                empty = torch.empty(0, dtype=value.dtype)
                if value.requires_grad:
                    empty.requires_grad_(True)
                module._c.setattr(name, empty)


def _bind(model: nn.Module, loaded) -> List[tuple]:
    """Sets every parameter/buffer slot of `loaded` to the model's tensor at
    the same path; returns the bindings (owner dict, name, tensor). Raises
    _Stale when the two do not correspond one to one."""
    table = _module_table(loaded)
    bindings = []
    bound = set()
    for path, owner, slots, name, tensor in _state_slots(model):
        target = table.get(path)
        where = f"{path}.{name}" if path else name
        if target is None or not target._c.hasattr(name):
            raise _Stale(f"the compiled module has no '{where}'")
        current = target._c.getattr(name)
        if not isinstance(current, torch.Tensor) or current.dtype != tensor.dtype:
            raise _Stale(f"'{where}' has another type in the compiled module")
        target._c.setattr(name, tensor)
        bindings.append((slots, name, tensor, tensor.requires_grad))
        bound.add(where)
    for kind in ("named_parameters", "named_buffers"):
        for where, tensor in getattr(loaded, kind)():
            if where not in bound:
                raise _Stale(f"the compiled module's '{where}' is not the model's")
    return bindings


def _set_attrs(loaded) -> List[Tuple[str, str]]:
    """(module path, attribute) of every prim::SetAttr in the compiled
    methods: attributes the compiled code reassigns, copied back to the
    model after each call."""
    found = []
    for method in ("forward",) + tuple(
            n for n in getattr(loaded._c, "_method_names", lambda: [])()
            if n.startswith("forward_")):
        try:
            graph = getattr(loaded, method).graph
        except (AttributeError, RuntimeError):
            continue
        owners = {}
        self_value = list(graph.inputs())[0]
        owners[self_value.debugName()] = ""

        def walk(block):
            for node in block.nodes():
                if node.kind() == "prim::GetAttr":
                    base = node.inputsAt(0).debugName()
                    if base in owners:
                        prefix = owners[base]
                        name = node.s("name")
                        owners[node.output().debugName()] = (
                            f"{prefix}.{name}" if prefix else name)
                elif node.kind() == "prim::SetAttr":
                    base = node.inputsAt(0).debugName()
                    if base in owners:
                        found.append((owners[base], node.s("name")))
                for sub in node.blocks():
                    walk(sub)
        walk(graph)
    return sorted(set(found))


# ---------------------------------------------------------------------------
# Compiling
# ---------------------------------------------------------------------------

def _format_bytes(n) -> str:
    if n is None:
        return "-"
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


_REACHABLE = re.compile(r"smallest reachable peak is (\d+(?:\.\d+)?) ?"
                        r"(B|KiB|MiB|GiB|TiB)\b")
_UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
# What memopt-compile says when the sample's shapes do not fit the model.
_SHAPE_ERRORS = ("on inputs of the given shapes", "--input-shape",
                 "input spec", "the method takes", "input signature")


def _compile_error(stderr: str, cmd: List[str], returncode: int,
                   model_name: str) -> CompileError:
    message, path, source = parse_diagnostic(stderr)
    kw = dict(diagnostic=message, module_path=path, source=source,
              stderr=stderr, command=cmd, returncode=returncode)
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


@dataclasses.dataclass
class _Options:
    budget: Optional[str]
    prefer: str
    device: str
    checkpoint: Optional[str]
    no_checkpoint: Optional[str]
    assume_binary: Optional[str]

    def arguments(self) -> List[str]:
        args = ["--prefer", self.prefer, "--device", self.device]
        if self.budget is not None:
            args += ["--budget", self.budget]
        for option, value in (("--checkpoint", self.checkpoint),
                              ("--no-checkpoint", self.no_checkpoint),
                              ("--assume-binary", self.assume_binary)):
            if value:
                args += [option, value]
        return args


class _Plan:
    """A compiled module for one set of training flags, bound to the
    model's tensors."""

    def __init__(self, module, entry: _cache.Entry, flags, bindings,
                 set_attrs, cache_hit: bool, seconds: float, model_table):
        self.module = module
        self.entry = entry
        self.flags = flags
        self.bindings = bindings
        self.cache_hit = cache_hit
        self.seconds = seconds
        table = _module_table(module)
        where = {(id(slots), name): i
                 for i, (slots, name, _, _) in enumerate(bindings)}
        self.copy_back = []
        for path, name in set_attrs:
            if path in table and path in model_table:
                target = model_table[path]
                index = None
                for kind in ("_buffers", "_parameters"):
                    if name in getattr(target, kind):
                        index = where.get((id(getattr(target, kind)), name))
                self.copy_back.append((table[path], target, name, index))
        self._report = None

    @property
    def report(self) -> dict:
        if self._report is None:
            self._report = self.entry.report()
        return self._report

    def in_sync(self) -> bool:
        """Whether the model still holds the tensors the plan was bound to
        (none replaced, none frozen or unfrozen since)."""
        for slots, name, tensor, requires_grad in self.bindings:
            if slots.get(name) is not tensor or \
                    tensor.requires_grad is not requires_grad:
                return False
        return True

    def __call__(self, args, kwargs):
        optimize = torch._C._get_graph_executor_optimize()
        # The plan is what memopt-compile wrote: run it as written (the
        # profiling executor would re-optimize the graph and, from the
        # second call on, draw dropout masks differently from eager).
        torch._C._set_graph_executor_optimize(False)
        try:
            out = self.module(*args, **kwargs)
        finally:
            torch._C._set_graph_executor_optimize(optimize)
        for source, target, name, index in self.copy_back:
            # The compiled code reassigned the attribute: so does eager.
            value = source._c.getattr(name)
            if name in target._buffers:
                target._buffers[name] = value
            elif name in target._parameters:
                target._parameters[name] = value
            else:
                setattr(target, name, value)
            if index is not None:
                slots = self.bindings[index][0]
                self.bindings[index] = (slots, name, value,
                                        getattr(value, "requires_grad", False))
        return out


def _warn(message: str, category=MemoptWarning) -> None:
    """warnings.warn, attributed to the first caller outside memopt."""
    package = os.path.dirname(os.path.abspath(__file__))
    module_py = os.path.abspath(nn.modules.module.__file__)
    frame, level = sys._getframe(1), 2
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if os.path.dirname(filename) != package and filename != module_py:
            break
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


_MEMOPT_LINE = re.compile(r"(memopt: [^\n]*)")


class _Compiler:
    """Everything needed to compile the model for some training flags."""

    def __init__(self, model, signatures: _Signatures, options: _Options,
                 cache_dir, verbose: bool):
        self.model = model
        self.name = type(model).__name__
        self.signatures = signatures
        self.options = options
        self.verbose = verbose
        self.cache_root = None
        self._tmp_root = None
        if cache_dir is False:
            import atexit
            self._tmp_root = tempfile.mkdtemp(prefix="memopt-wrap-")
            self.cache_root = pathlib.Path(self._tmp_root)
            atexit.register(shutil.rmtree, self._tmp_root, True)
        else:
            self.cache_root = pathlib.Path(cache_dir) if cache_dir is not None \
                else _cache.default_dir()
        self.compiler = compiler_path()
        self.runtime = runtime_library_path()
        self.scripted = None
        self.scripted_flags = None
        self.warned_trace = False
        self.how = None
        self._fingerprint = None

    # -- keys ---------------------------------------------------------------
    def fingerprint(self, refresh: bool = False) -> str:
        if self._fingerprint is None or refresh:
            self._fingerprint = _cache.model_fingerprint(self.model)
        return self._fingerprint

    def key_parts(self, flags) -> dict:
        return {
            "format": _cache.FORMAT,
            "model": self.fingerprint(),
            "class": f"{type(self.model).__module__}.{type(self.model).__qualname__}",
            "flags": "".join("1" if f else "0" for f in flags),
            "specs": self.signatures.specs,
            "signature_files": [t for _, t in self.signatures.files],
            "options": self.options.arguments(),
            "torch": torch.__version__,
            "memopt": _cache.tool_identity(self.compiler, self.runtime),
        }

    def _say(self, text: str) -> None:
        if self.verbose:
            print(f"memopt: {text}", file=sys.stderr, flush=True)

    # -- the plan for some flags --------------------------------------------
    def plan(self, flags) -> _Plan:
        t0 = time.perf_counter()
        load_runtime()
        parts = self.key_parts(flags)
        key = _cache.make_key(parts)
        what = _describe_flags(self.model, flags)
        try:
            entry = _cache.lookup(self.cache_root, key)
        except _cache.DamagedEntry as e:
            _warn(f"memopt.wrap: cache entry {self.cache_root / key} "
                  f"is damaged ({e}); compiling again", CacheWarning)
            _cache.remove(self.cache_root, key)
            entry = None
        if entry is not None:
            try:
                plan = self._load(entry, flags, cache_hit=True, t0=t0)
                self._say(f"{self.name} ({what}): plan loaded from the cache "
                          f"in {time.perf_counter() - t0:.2f} s"
                          + self._peaks(plan))
                return plan
            except _Stale as e:
                _warn(f"memopt.wrap: cache entry {entry.directory} is "
                      f"stale ({e}); compiling again", CacheWarning)
                _cache.remove(self.cache_root, key)
        entry = self._compile(key, parts, flags, what)
        try:
            plan = self._load(entry, flags, cache_hit=False, t0=t0)
        except _Stale as e:
            _cache.remove(self.cache_root, key)
            raise CompileError(f"the module memopt-compile wrote for "
                               f"{self.name} does not fit it: {e}") from None
        self._say(f"{self.name} ({what}): compiled in "
                  f"{time.perf_counter() - t0:.1f} s" + self._peaks(plan))
        return plan

    @staticmethod
    def _peaks(plan: _Plan) -> str:
        try:
            report = plan.report
            base = report["baseline"]["predicted_peak_bytes"]
            planned = (report.get("planned") or {}).get("predicted_peak_bytes")
        except (KeyError, TypeError, ValueError, OSError):
            return ""
        if not base or planned is None:
            return ""
        return (f": predicted peak {_format_bytes(base)} -> "
                f"{_format_bytes(planned)} ({(planned - base) / base:+.0%})")

    def _load(self, entry: _cache.Entry, flags, cache_hit: bool, t0) -> _Plan:
        try:
            loaded = torch.jit.load(str(entry.module_path),
                                    map_location=self.options.device)
        except Exception as e:
            raise _Stale(f"it does not load: {_first_line(e)}") from None
        bindings = _bind(self.model, loaded)
        loaded.train(True)
        _apply_flags(self.model, loaded)
        return _Plan(loaded, entry, flags, bindings, _set_attrs(loaded),
                     cache_hit, time.perf_counter() - t0,
                     _module_table(self.model))

    def _torchscript(self, flags):
        # A trace fixes the training flags it ran with (dropout's `train`
        # argument, batch norm's branch): trace again for other flags.
        if self.scripted is not None and self.how == "trace" and \
                flags != self.scripted_flags:
            self.scripted = None
        if self.scripted is None:
            self.scripted, self.how = _to_torchscript(
                self.model, self.signatures.example, self.verbose,
                warn=not self.warned_trace)
            self.warned_trace |= self.how == "trace"
            self.scripted_flags = flags
            _check_outputs(self.model, self.scripted)
        return self.scripted

    def _compile(self, key: str, parts: dict, flags, what: str) -> _cache.Entry:
        scripted = self._torchscript(flags)
        try:
            work = _cache.new_directory(self.cache_root, key)
        except OSError as e:
            import atexit
            fallback = pathlib.Path(tempfile.mkdtemp(prefix="memopt-wrap-"))
            atexit.register(shutil.rmtree, str(fallback), True)
            _warn(f"memopt.wrap: cannot write the cache directory "
                  f"{self.cache_root} ({e.strerror}); plans are kept in "
                  f"{fallback} until the process exits")
            self.cache_root = fallback
            work = _cache.new_directory(self.cache_root, key)
        try:
            _apply_flags(self.model, scripted)
            source = work / "source.pt"
            scripted.save(str(source))
            signature_args = self.signatures.arguments(work)
            compile_cmd = [str(self.compiler), str(source),
                           "-o", str(work / "model.memopt.pt"),
                           "--report", str(work / "report.json"), "-v",
                           *signature_args, *self.options.arguments()]
            baseline_cmd = [str(self.compiler), str(source), "--analyze-only",
                            "-v", *signature_args,
                            "--device", self.options.device]
            self._say(f"compiling {self.name} ({what}) for "
                      f"{self.signatures.describe()} with memopt-compile "
                      f"{' '.join(self.options.arguments())} ...")
            self._run(compile_cmd, baseline_cmd, work)
            # The cache keeps no weights: the model's are bound at load.
            compiled = torch.jit.load(str(work / "model.memopt.pt"),
                                      map_location="cpu")
            _strip(compiled)
            compiled.save(str(work / "model.memopt.pt"))
            del compiled
            return _cache.store(self.cache_root, key, work, parts,
                                {"model_class": self.name, "how": self.how,
                                 "flags": what})
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    def _run(self, compile_cmd, baseline_cmd, work: pathlib.Path) -> None:
        env = dict(os.environ)
        with open(work / "compile.log", "w") as clog, \
                open(work / "baseline.log", "w") as blog:
            try:
                main = subprocess.Popen(compile_cmd, stdout=subprocess.DEVNULL,
                                        stderr=clog, env=env)
                base = subprocess.Popen(baseline_cmd, stdout=subprocess.DEVNULL,
                                        stderr=blog, env=env)
            except OSError as e:
                raise CompileError(f"cannot run {compile_cmd[0]}: "
                                   f"{e.strerror}") from None
            started = time.perf_counter()
            next_note = 10.0
            while True:
                try:
                    main.wait(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.perf_counter() - started
                    if elapsed >= next_note:
                        self._say(f"  ... still compiling ({elapsed:.0f} s)")
                        next_note += 10.0
            if main.returncode != 0:
                base.kill()
                base.wait()
        stderr = (work / "compile.log").read_text(errors="replace")
        if main.returncode != 0:
            raise _compile_error(stderr, compile_cmd, main.returncode,
                                 self.name) from None
        base.wait()
        if base.returncode != 0:
            _warn("memopt.wrap: the baseline timeline could not be "
                  "computed (" + parse_diagnostic(
                      (work / "baseline.log").read_text())[0] +
                  "); summary plots show the planned step only")


# ---------------------------------------------------------------------------
# The wrapped module
# ---------------------------------------------------------------------------

_MISSING = object()


def _float_dtype(model: nn.Module) -> Optional[torch.dtype]:
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return None


def _simple_attributes(modules) -> List[tuple]:
    """(instance dict, name, value) of the modules' plain attributes (the
    ones the cache key covers: ints, floats, strings, tuples of them)."""
    found = []
    for module in modules:
        values = vars(module)
        for name, value in values.items():
            if not name.startswith("_") and name != "training" and \
                    _cache._simple(value):
                # a copy of a list: an in-place change must show
                found.append((values, name,
                              copy.deepcopy(value) if isinstance(value, list)
                              else value))
    return found


class MemoptModule(nn.Module):
    """The model, trained through memopt's compiled plans. See the module
    docstring; build it with `memopt.wrap`."""

    def __init__(self, model: nn.Module, compiler: _Compiler):
        super().__init__()
        d = self.__dict__
        d["_memopt_model"] = model
        d["_memopt_compiler"] = compiler
        d["_memopt_plans"] = {}          # flags -> _Plan or MemoptError
        d["_memopt_warned"] = set()
        d["_memopt_modules"] = list(model.modules())
        d["_memopt_attrs"] = _simple_attributes(d["_memopt_modules"])
        # Share the model's tables: parameters, buffers and submodules are
        # the model's objects, under the model's names.
        d["_parameters"] = model._parameters
        d["_buffers"] = model._buffers
        d["_non_persistent_buffers_set"] = model._non_persistent_buffers_set
        d["_modules"] = model._modules

    # -- identity with the model ------------------------------------------
    @property
    def training(self) -> bool:  # type: ignore[override]
        model = self.__dict__.get("_memopt_model")
        return True if model is None else model.training

    @training.setter
    def training(self, mode: bool) -> None:
        model = self.__dict__.get("_memopt_model")
        if model is not None:
            model.training = mode

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            model = self.__dict__.get("_memopt_model")
            if model is None:
                raise
            return getattr(model, name)

    def train(self, mode: bool = True) -> "MemoptModule":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self._memopt_model.train(mode)
        return self

    def state_dict(self, *args, **kwargs):
        return self._memopt_model.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict: bool = True):
        return self._memopt_model.load_state_dict(state_dict, strict)

    def _apply(self, fn):
        model = self._memopt_model
        before = _float_dtype(model)
        model._apply(fn)
        compiler = self._memopt_compiler
        if compiler.fingerprint() != compiler.fingerprint(refresh=True):
            # dtype or device changed (.half(), .to(...)): other plans, for
            # inputs of the parameters' new dtype.
            after = _float_dtype(model)
            if after is not None and after != before:
                compiler.signatures = compiler.signatures.retyped(after)
            self._restructure(list(model.modules()))
        return self

    def apply(self, fn):
        self._memopt_model.apply(fn)
        return self

    def extra_repr(self) -> str:
        plans = self._memopt_plans
        compiled = [p for p in plans.values() if isinstance(p, _Plan)]
        return (f"memopt plan(s) for {len(compiled)} set(s) of training "
                f"flags; model={type(self._memopt_model).__name__}")

    # -- running ------------------------------------------------------------
    def _current_plan(self) -> Optional[_Plan]:
        model = self._memopt_model
        modules = self._memopt_modules
        current = list(model.modules())
        if len(current) != len(modules) or any(
                a is not b for a, b in zip(current, modules)):
            self._restructure(current)
        for values, name, value in self._memopt_attrs:
            now = values.get(name, _MISSING)
            if now is not value and now != value:
                # e.g. a dropout's p: TorchScript folds such attributes
                # into the code, so the model changed: another plan.
                self._restructure(current)
                break
        flags = tuple(m.training for m in current)
        plan = self._memopt_plans.get(flags)
        if isinstance(plan, _Plan):
            if plan.in_sync():
                return plan
            self._restructure(current)
            plan = None
        if plan is None:
            try:
                plan = self._memopt_compiler.plan(flags)
            except MemoptError as e:
                plan = e
            self._memopt_plans[flags] = plan
        if isinstance(plan, MemoptError):
            if flags not in self._memopt_warned:
                self._memopt_warned.add(flags)
                _warn(
                    f"memopt: no plan for {type(model).__name__} in "
                    f"{_describe_flags(model, flags)} ({plan}); running its "
                    f"own forward there, memory is not optimized")
            return None
        return plan

    def _restructure(self, modules) -> None:
        """The model's modules, parameters or buffers were replaced: plans
        compiled before no longer read the model's tensors."""
        self.__dict__["_memopt_modules"] = list(modules)
        self.__dict__["_memopt_attrs"] = _simple_attributes(modules)
        self.__dict__["_memopt_plans"] = {}
        self.__dict__["_memopt_warned"] = set()
        compiler = self._memopt_compiler
        compiler.scripted = None
        compiler.fingerprint(refresh=True)

    def forward(self, *args, **kwargs):
        model = self._memopt_model
        if not torch.is_grad_enabled():
            return model(*args, **kwargs)
        for attempt in (0, 1):
            plan = self._current_plan()
            if plan is None:
                return model(*args, **kwargs)
            try:
                return plan(args, kwargs)
            except RuntimeError as e:  # torch.jit.Error is one
                lines = _MEMOPT_LINE.findall(str(e))
                if not lines:
                    raise
                line = lines[-1]
                # An attribute the plan folded (memopt.assumes) has changed,
                # e.g. a dropout's p: the guards run before any state is
                # touched, so compile for the model as it is now and retry.
                if attempt == 0 and "memopt.assumes" in line and \
                        self._memopt_compiler.fingerprint() != \
                        self._memopt_compiler.fingerprint(refresh=True):
                    self._restructure(list(model.modules()))
                    continue
                raise MemoptRuntimeError(line) from None

    # -- for summary() and detach() ------------------------------------------
    def _memopt_plan_for_summary(self) -> _Plan:
        flags = _flags_of(self._memopt_model)
        plan = self._memopt_plans.get(flags)
        if isinstance(plan, _Plan):
            return plan
        for plan in self._memopt_plans.values():
            if isinstance(plan, _Plan):
                return plan
        return self._current_plan() or self._memopt_compiler.plan(flags)


def wrap(model: nn.Module, sample_input=None, *, budget=None,
         prefer: str = "balanced", specs=None, checkpoint=None,
         no_checkpoint=None, assume_binary=None, device=None,
         cache_dir=None, verbose: bool = True) -> MemoptModule:
    """Compiles `model` for training with less memory; returns a module
    that shares its parameters, buffers and submodules.

    sample_input: a tensor, a tuple of tensors (positional inputs) or a
      dict of keyword tensors; a list of those compiles one plan per
      distinct shape (multi-graph). Only shapes and dtypes are used.
    budget: peak training memory to plan for: bytes (int), a fraction of
      the predicted baseline peak (float, 0.4), or memopt-compile's syntax
      ("40%", "1.5GiB").
    prefer: "speed", "balanced" or "memory" (without a budget).
    specs: more input signatures: spec strings ("x:8x3x32x32"), recorder
      Signatures, a SignatureRecorder, or a recorded signature file.
    checkpoint / no_checkpoint / assume_binary: module paths (a list or a
      comma-separated string), as memopt-compile's options.
    device: "cpu" or "cuda" (default: where the parameters are).
    cache_dir: where compiled plans are cached (default MEMOPT_CACHE_DIR or
      ~/.cache/memopt); False: no cache.
    verbose: print what is compiled or loaded (stderr).

    Raises MemoptError subclasses with one-line messages; on error the
    model is left as it was.
    """
    if isinstance(model, MemoptModule):
        raise InputError("the model is wrapped already: wrap "
                         "memopt.detach(model) to compile it again")
    if not isinstance(model, nn.Module):
        raise InputError(f"wrap takes a torch.nn.Module (or an FX "
                         f"GraphModule), got {_describe(model)}")
    if prefer not in PREFERENCES:
        raise InputError(f"unknown prefer '{prefer}' (expected speed, "
                         f"balanced or memory)")
    options = _Options(
        budget=_budget_text(budget), prefer=prefer,
        device=_device_of(model, device),
        checkpoint=_paths_option(checkpoint, "checkpoint"),
        no_checkpoint=_paths_option(no_checkpoint, "no_checkpoint"),
        assume_binary=_paths_option(assume_binary, "assume_binary"))
    signatures = _collect_signatures(model, sample_input, specs)
    compiler = _Compiler(model, signatures, options, cache_dir, verbose)
    wrapped = MemoptModule(model, compiler)
    flags = _flags_of(model)
    # Up front for the current flags: errors surface here, not in the loop.
    wrapped._memopt_plans[flags] = compiler.plan(flags)
    hooked = _hooked_modules(model)
    if hooked:
        shown = ", ".join(hooked[:4]) + (f" and {len(hooked) - 4} more"
                                         if len(hooked) > 4 else "")
        _warn(f"memopt.wrap: the hooks registered on {shown} do not run in "
              f"the compiled forward (only under torch.no_grad(), where the "
              f"model's own forward runs); hooks on the wrapped module do")
    return wrapped


def detach(wrapped: nn.Module) -> nn.Module:
    """The model `wrap` was given (the same object, with whatever training
    changed in its parameters)."""
    if not isinstance(wrapped, MemoptModule):
        raise InputError(f"detach takes what memopt.wrap returned, got "
                         f"{_describe(wrapped)}")
    return wrapped._memopt_model
