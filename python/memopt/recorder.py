"""Record the input signatures a model is trained with.

memopt compiles one plan per input signature (the shapes and dtypes of the
forward's tensor inputs) and dispatches between them at run time. Which
signatures matter is best learnt from a few real training iterations:

    from memopt.recorder import SignatureRecorder

    with SignatureRecorder(model) as recorder:
        for x, y in itertools.islice(loader, 50):
            loss_fn(model(x), y).backward()
    recorder.save("signatures.json")
    # memopt-translate --import-torchscript model.pt --signatures-file signatures.json

Each distinct tuple of (shape, dtype) of the tensor inputs is counted by a
forward pre-hook on `model`; input names come from the signature of its
`forward`. The file is what `--signatures-file` (and
`mlir::memopt::readSignatureFile`) reads:

    {"version": 1, "signatures": [
      {"inputs": [{"name": "x", "shape": [8, 3, 224, 224], "dtype": "f32"}],
       "count": 37}, ...]}

sorted by decreasing count (ties: the order first seen). Nothing here needs
the rest of memopt.
"""
import collections
import dataclasses
import inspect
import json
from typing import Dict, List, Optional, Tuple

import torch

__all__ = ["InputShape", "Signature", "SignatureRecorder", "DTYPE_NAMES"]

#: The dtype names memopt's input specs accept (parseInputSpec).
DTYPE_NAMES: Dict[torch.dtype, str] = {
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.float64: "f64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.bool: "i1",
}

FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class InputShape:
    """One tensor input: its name in forward, sizes and memopt dtype name
    (a `torch.*` name when memopt has none for it)."""
    name: str
    shape: Tuple[int, ...]
    dtype: str

    def spec(self) -> str:
        """`x:8x3x32x32:f32`, as memopt-translate's --input-shape takes it."""
        return f"{self.name}:{'x'.join(str(s) for s in self.shape)}:{self.dtype}"


@dataclasses.dataclass(frozen=True)
class Signature:
    """A distinct input signature and how often forward was called with it."""
    inputs: Tuple[InputShape, ...]
    count: int

    def spec(self) -> str:
        """`x:8x3x32x32:f32;count=37`, as memopt-translate's --signature
        takes it."""
        return ",".join(i.spec() for i in self.inputs) + f";count={self.count}"

    def to_json(self) -> dict:
        return {
            "inputs": [{"name": i.name, "shape": list(i.shape), "dtype": i.dtype}
                       for i in self.inputs],
            "count": self.count,
        }


def _dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype))


def _parameter_names(module: torch.nn.Module) -> Optional[List[str]]:
    """Names of forward's parameters (without self), or None if unknown."""
    forward = module.forward
    try:
        return list(inspect.signature(forward).parameters)
    except (TypeError, ValueError):
        pass
    schema = getattr(forward, "schema", None)  # a TorchScript method
    if schema is not None:
        return [a.name for a in schema.arguments][1:]
    return None


class SignatureRecorder:
    """Counts the input signatures of `module`'s forward while active.

    Use it as a context manager (or call `start()` / `stop()`) around a few
    real training iterations. Calls whose inputs contain no tensor are not
    counted; tensors nested in lists or tuples are not inputs memopt can
    specialize on and are ignored. Recording more than once accumulates.
    On PyTorch 1.x, pre-hooks see positional inputs only: pass tensors
    positionally while recording (2.x sees keyword inputs too).
    """

    def __init__(self, module: torch.nn.Module):
        if not isinstance(module, torch.nn.Module):
            raise TypeError(f"SignatureRecorder needs a torch.nn.Module, got "
                            f"{type(module).__name__}")
        self.module = module
        self._names = _parameter_names(module)
        try:
            self._bind = inspect.signature(module.forward).bind
        except (TypeError, ValueError):
            self._bind = None
        self._counts: "collections.OrderedDict[Tuple[InputShape, ...], int]" = (
            collections.OrderedDict())
        self._handle = None

    # -- recording ---------------------------------------------------------
    def start(self) -> "SignatureRecorder":
        if self._handle is not None:
            return self
        if isinstance(self.module, torch.jit.ScriptModule):
            raise TypeError(
                "SignatureRecorder cannot hook a ScriptModule (TorchScript "
                "modules take no Python hooks): record the eager model it was "
                "scripted from, or call recorder.record(*inputs) yourself")
        register = self.module.register_forward_pre_hook
        try:
            kwargs_supported = "with_kwargs" in inspect.signature(register).parameters
        except (TypeError, ValueError):
            kwargs_supported = False
        if kwargs_supported:  # PyTorch >= 2.0: keyword inputs too
            self._handle = register(
                lambda _m, args, kwargs: self._record(args, kwargs),
                with_kwargs=True)
        else:
            self._handle = register(lambda _m, args: self._record(args, {}))
        return self

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None

    def __enter__(self) -> "SignatureRecorder":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _named_inputs(self, args, kwargs):
        if self._bind is not None:
            try:
                return list(self._bind(*args, **kwargs).arguments.items())
            except TypeError:
                pass  # let forward raise its own error; name by position
        names = self._names or []
        named = [(names[i] if i < len(names) else f"input{i}", a)
                 for i, a in enumerate(args)]
        return named + list(kwargs.items())

    def record(self, *args, **kwargs) -> None:
        """Counts one call of forward with these inputs, without calling it
        (for modules that cannot be hooked)."""
        self._record(args, kwargs)

    def _record(self, args, kwargs):
        key = tuple(
            InputShape(name, tuple(int(s) for s in value.shape),
                       _dtype_name(value.dtype))
            for name, value in self._named_inputs(args, kwargs)
            if isinstance(value, torch.Tensor))
        if key:
            self._counts[key] = self._counts.get(key, 0) + 1
        return None  # leave the inputs alone

    # -- results -----------------------------------------------------------
    def signatures(self) -> List[Signature]:
        """Distinct signatures by decreasing count (ties: first seen first)."""
        recorded = [Signature(k, c) for k, c in self._counts.items()]
        return sorted(recorded, key=lambda s: -s.count)  # sorted() is stable

    def clear(self) -> None:
        self._counts.clear()

    def to_json(self) -> dict:
        """The signature file's content. Raises ValueError when nothing was
        recorded or an input has a dtype memopt cannot compile."""
        signatures = self.signatures()
        if not signatures:
            raise ValueError("no signature was recorded: run forward at least "
                             "once while the recorder is active")
        for signature in signatures:
            for i in signature.inputs:
                if i.dtype not in DTYPE_NAMES.values():
                    raise ValueError(
                        f"input '{i.name}' has dtype {i.dtype}, which memopt "
                        f"cannot compile (one of "
                        f"{', '.join(DTYPE_NAMES.values())})")
        return {"version": FORMAT_VERSION,
                "signatures": [s.to_json() for s in signatures]}

    def save(self, path) -> None:
        """Writes the signature file (see the module docstring)."""
        data = self.to_json()
        with open(path, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
