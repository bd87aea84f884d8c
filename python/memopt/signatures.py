"""Sample inputs and input signatures: what `memopt.wrap` tells
memopt-compile about the model's inputs.

`collect_signatures(model, sample_input, specs)` checks wrap's
`sample_input` (a tensor, a tuple of tensors, a dict of keyword tensors, or
a list of those) and `specs` (spec strings, recorder `Signature`s, a
`SignatureRecorder`, recorded signature files), names every input after
forward's arguments and returns a `Signatures`: the `--spec` and
`--signatures` arguments, and inputs to trace with when the model does not
script. Only shapes and dtypes are used.
"""
import dataclasses
import inspect
import json
import os
import pathlib
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn as nn

from .errors import InputError, describe
from .recorder import DTYPE_NAMES, InputShape, Signature, SignatureRecorder

__all__ = ["Signatures", "collect_signatures", "forward_signature"]

_DTYPE_OF_NAME = {name: dtype for dtype, name in DTYPE_NAMES.items()}
_FLOAT_NAMES = {"f32", "f16", "bf16", "f64"}

#: A sample: (positional inputs, keyword inputs).
Sample = Tuple[tuple, dict]


def forward_signature(model: nn.Module) -> Optional[inspect.Signature]:
    """inspect's signature of the model's forward (None for a TorchScript
    method, which has a schema instead)."""
    try:
        return inspect.signature(model.forward)
    except (TypeError, ValueError):
        return None


@dataclasses.dataclass
class Signatures:
    """What memopt-compile is told about the inputs."""
    specs: List[str]                      # --spec arguments
    files: List[Tuple[str, str]]          # (name, text) of --signatures files
    example: Optional[Sample]             # inputs to trace with

    def arguments(self, directory: pathlib.Path) -> List[str]:
        """memopt-compile's arguments; writes the signature files into
        `directory`."""
        args = []
        for spec in self.specs:
            args += ["--spec", spec]
        for name, text in self.files:
            path = directory / name
            path.write_text(text)
            args += ["--signatures", str(path)]
        return args

    def retyped(self, dtype: torch.dtype) -> "Signatures":
        """The same signatures with floating-point inputs of `dtype` (the
        model was converted: `.double()`, `.half()`)."""
        new = DTYPE_NAMES.get(dtype)
        if new is None:
            return self

        def convert(spec: str) -> str:
            inputs, sep, settings = spec.partition(";")
            parts = []
            for part in inputs.split(","):
                fields = part.split(":")
                if len(fields) == 2:
                    fields.append("f32")
                if len(fields) == 3 and fields[2] in _FLOAT_NAMES:
                    fields[2] = new
                parts.append(":".join(fields))
            return ",".join(parts) + sep + settings
        example = self.example
        if example is not None:
            args, kwargs = example
            cast = (lambda t: t.to(dtype) if t.is_floating_point() else t)
            example = (tuple(cast(a) for a in args),
                       {k: cast(v) for k, v in kwargs.items()})
        return Signatures([convert(s) for s in self.specs], self.files,
                          example)

    def describe(self) -> str:
        """The first few signatures, for wrap's progress line."""
        text = "; ".join(s.split(";")[0] for s in self.specs[:3])
        if len(self.specs) > 3:
            text += f"; ... ({len(self.specs)} signatures)"
        if self.files:
            text += ("; " if text else "") + f"{len(self.files)} signature file(s)"
        return text


def _normalize_samples(sample_input) -> List[Sample]:
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
                        f"{where}[{j}] is {describe(value)}: memopt compiles "
                        f"forward's tensor inputs only (a tuple holds one "
                        f"tensor per positional input)")
            samples.append((item, {}))
        elif isinstance(item, dict):
            for key, value in item.items():
                if not isinstance(key, str) or not isinstance(value, torch.Tensor):
                    raise InputError(
                        f"{where}[{key!r}] is {describe(value)}: a dict sample "
                        f"maps forward's argument names to tensors")
            samples.append(((), dict(item)))
        else:
            hint = (" (several samples are a list of tensors, tuples or dicts)"
                    if several else
                    " (a list gives several samples)")
            raise InputError(
                f"{where} is {describe(item)}: expected a tensor, a tuple "
                f"of tensors or a dict of keyword tensors{hint}")
    return samples


def _named_inputs(model: nn.Module, args: tuple, kwargs: dict,
                  where: str) -> List[Tuple[str, torch.Tensor]]:
    """(name, tensor) of one sample's inputs, in forward's order."""
    signature = forward_signature(model)
    if signature is None:  # a TorchScript method: its schema names them
        schema = getattr(model.forward, "schema", None)
        names = [a.name for a in schema.arguments][1:] if schema else []
        return [(names[i] if i < len(names) else f"input{i}", a)
                for i, a in enumerate(args)] + list(kwargs.items())
    params = [p for p in signature.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as e:
        raise InputError(
            f"{where} does not fit {type(model).__name__}.forward"
            f"{signature}: {e}") from None
    # Trailing inputs with defaults may be left out: memopt-compile binds
    # them to their defaults (the compiled forward refuses other values).
    given = [p.name in bound.arguments for p in params]
    last_given = max((i for i, g in enumerate(given) if g), default=-1)
    missing = [p.name for i, p in enumerate(params)
               if not given[i] and (i < last_given or p.default is p.empty)]
    if missing:
        raise InputError(
            f"{where} gives no tensor for forward's input(s) "
            f"{', '.join(missing)}: memopt compiles every input of "
            f"forward but trailing ones with defaults, give a sample for "
            f"each")
    named = []
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind == inspect.Parameter.VAR_POSITIONAL:
            named += [(f"{name}{i}", v) for i, v in enumerate(value)]
        elif kind == inspect.Parameter.VAR_KEYWORD:
            named += list(value.items())
        else:
            named.append((name, value))
    return named


def _bind_sample(model: nn.Module, args: tuple, kwargs: dict,
                 where: str) -> Tuple[InputShape, ...]:
    """The named inputs of one sample, in forward's order."""
    inputs = []
    for name, value in _named_inputs(model, args, kwargs, where):
        if value.dtype not in DTYPE_NAMES:
            raise InputError(
                f"{where}: input '{name}' has dtype {value.dtype}, which "
                f"memopt cannot compile (one of "
                f"{', '.join(str(d).replace('torch.', '') for d in DTYPE_NAMES)})")
        inputs.append(InputShape(name, tuple(int(s) for s in value.shape),
                                 DTYPE_NAMES[value.dtype]))
    return tuple(inputs)


def collect_signatures(model: nn.Module, sample_input, specs) -> Signatures:
    """wrap's `sample_input` and `specs` as memopt-compile's signatures;
    InputError (one line) for anything it cannot use."""
    samples = _normalize_samples(sample_input)
    counts: Dict[Tuple[InputShape, ...], int] = {}
    for i, (args, kwargs) in enumerate(samples):
        where = ("sample_input" if len(samples) == 1 and
                 not isinstance(sample_input, list) else f"sample_input[{i}]")
        key = _bind_sample(model, args, kwargs, where)
        counts[key] = counts.get(key, 0) + 1
    spec_args = [Signature(key, n).spec() for key, n in counts.items()]
    files: List[Tuple[str, str]] = []

    if specs is None:
        items = []
    elif isinstance(specs, (list, tuple)):
        items = list(specs)
    else:
        items = [specs]
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
            elif ";" in text or _spec_inputs(text) not in counts:
                spec_args.append(text)
            # else: a plain spec of a sample's shapes (each DDP rank passing
            # every rank's batch as specs and its own as the sample): the
            # sample gives it already.
        else:
            raise InputError(
                f"specs holds {describe(item)}: expected spec strings "
                f"('x:8x3x32x32'), recorder Signatures, a SignatureRecorder "
                f"or the path of a recorded signature file")
    if not spec_args and not files:
        raise InputError("wrap needs the input shapes: give sample_input (a "
                         "tensor, a tuple or a dict of tensors) or specs")
    example = samples[0] if samples else _example_from_spec(spec_args, files)
    return Signatures(spec_args, files, example)


def _spec_inputs(text: str) -> Optional[Tuple[InputShape, ...]]:
    """The inputs of a `--spec` string (`x:8x3x32x32,m:8:i64[;settings]`),
    or None for text memopt-compile will judge."""
    inputs = []
    for part in text.split(";")[0].split(","):
        fields = part.strip().split(":")
        if len(fields) not in (2, 3):
            return None
        try:
            shape = tuple(int(s) for s in fields[1].split("x") if s)
        except ValueError:
            return None
        inputs.append(InputShape(fields[0], shape,
                                 fields[2] if len(fields) == 3 else "f32"))
    return tuple(inputs)


def _example_from_spec(spec_args: List[str],
                       files: List[Tuple[str, str]]) -> Optional[Sample]:
    """Inputs of the first signature (for tracing a model that does not
    script): zeros for integer inputs, standard normal for floats."""
    if spec_args:
        shapes = _spec_inputs(spec_args[0])
        if shapes is None:
            return None
        inputs = [(i.name, list(i.shape), _DTYPE_OF_NAME.get(i.dtype))
                  for i in shapes]
        if any(dtype is None for _, _, dtype in inputs):
            return None
    else:
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
