"""From the model to TorchScript, which is what memopt-compile reads.

`to_torchscript` scripts the model (`torch.jit.script`); when that fails it
traces it on the sample input, with a `MemoptWarning` saying why and what
tracing loses, and when neither works raises a one-line
`UnsupportedModelError` naming the module and source line. Either way the
model is left as it was: its hooks are set aside while converting (the
compiled forward does not run Python hooks), the attributes TorchScript adds
to modules are removed again, and the buffers, training flags and RNG state
a trace changes are restored. What forward returns is memopt-compile's
concern (tensors, scalars and strings, in tuples, lists and dicts, nested):
nothing here restricts it.
"""
import collections
import inspect
import os
import re
import warnings
from typing import List, Optional, Tuple

import torch
import torch.nn as nn

from .errors import UnsupportedModelError, warn
from .signatures import Sample, forward_signature

__all__ = ["to_torchscript", "hooked_modules", "first_line",
           "calls_library_operators", "BUILTIN_NAMESPACES"]

_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_HOOKS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks")


def hooked_modules(model: nn.Module) -> List[str]:
    """Paths of the model's modules that have hooks registered."""
    return [path or "<root>" for path, m in model.named_modules()
            if any(getattr(m, h, None) for h in _HOOKS)]


# ---------------------------------------------------------------------------
# One-line errors with where they happened
# ---------------------------------------------------------------------------

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


def first_line(error: BaseException, limit: int = 160) -> str:
    """The first line of an exception's message, at most `limit` long."""
    lines = [l.strip() for l in str(error).splitlines() if l.strip()]
    text = lines[0] if lines else type(error).__name__
    text = text.rstrip(":")
    return text if len(text) <= limit else text[:limit - 3] + "..."


_AT = re.compile(r", at (?:(?P<path>[^ ()]+) )?\((?P<source>[^()]+:\d+)\)$"
                 r"|, at (?P<bare>[^ ()]+:\d+)$")


def _location(text: str) -> Tuple[Optional[str], Optional[str]]:
    """(module path, source) of a `, at <path> (<file>:<line>)` suffix."""
    m = _AT.search(text)
    if not m:
        return None, None
    if m.group("bare"):
        return None, m.group("bare")
    return m.group("path"), m.group("source")


# ---------------------------------------------------------------------------
# Converting without a trace on the model
# ---------------------------------------------------------------------------

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


def to_torchscript(model: nn.Module, example: Optional[Sample],
                   warn_trace: bool = True):
    """(ScriptModule, how): `how` is "torchscript" (given one), "script", or
    "trace" (on `example`, with a warning unless `warn_trace` is False);
    UnsupportedModelError (one line) when neither works. The model is left
    as it was (values, flags, attributes, RNG)."""
    with _PreservedAttributes(model):
        return _convert(model, example, warn_trace)


def _convert(model: nn.Module, example: Optional[Sample], warn_trace: bool):
    name = type(model).__name__
    if isinstance(model, torch.jit.ScriptModule):
        return model, "torchscript"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scripted = torch.jit.script(model)
    except Exception as e:  # TorchScript raises many types
        script_error = first_line(e) + _where(model, str(e))
    else:
        _check_script_keeps_eager(model)
        return scripted, "script"
    path, source = _location(script_error)
    if example is None:
        raise UnsupportedModelError(
            f"cannot script {name}: {script_error}; and without a sample "
            f"input it cannot be traced either", module_path=path,
            source=source) from None
    args, kwargs = example
    if kwargs:
        signature = forward_signature(model)
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
            # strict=False: lists and dicts in the result (their
            # structure is the sample's, as everything in a trace)
            traced = torch.jit.trace(model, args, check_trace=False,
                                     strict=False)
    except Exception as e:
        trace_error = first_line(e, 100) + _where(model, str(e))
        if path is None and source is None:
            path, source = _location(trace_error)
        raise UnsupportedModelError(
            f"{name} can be neither scripted ({script_error}) nor traced "
            f"({trace_error})", module_path=path, source=source) from None
    _check_trace_gradients(model, traced, args, name, script_error, path,
                           source)
    if warn_trace:
        warn(
            f"memopt.wrap: torch.jit.script failed on {name} ({script_error}); "
            f"traced it on the sample input instead. A trace records only the "
            f"operations that input ran: Python control flow is fixed to the "
            f"branches it took, and inputs that would take others run them "
            f"wrong")
    return traced, "trace"


def _check_script_keeps_eager(model: nn.Module) -> None:
    """Configurations whose scripted forward computes otherwise than eager,
    with no trace of it in the graph memopt reads: F.embedding's max_norm
    renormalizes rows of the table in place (under no_grad) before the
    lookup in eager, and TorchScript drops that call as an unused result
    (aten::_no_grad_embedding_renorm_ has no write in its schema).
    UnsupportedModelError naming the module, rather than a compiled model
    that trains otherwise."""
    for path, module in model.named_modules():
        max_norm = getattr(module, "max_norm", None)
        if isinstance(module, (nn.Embedding, nn.EmbeddingBag)) and \
                max_norm is not None:
            raise UnsupportedModelError(
                f"{type(module).__name__} '{path or type(model).__name__}' "
                f"has max_norm={max_norm}: TorchScript drops the in-place "
                f"renormalization eager applies to the looked-up rows, so a "
                f"compiled model would train otherwise; renormalize the "
                f"table before each step (torch.embedding_renorm_ under "
                f"torch.no_grad()) and build it without max_norm",
                module_path=path or None)


def _tensors_in(value):
    """The tensors of a forward's result, in order: tuples, lists and dict
    values (insertion order), nested."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors_in(item)


def _gradients(module: nn.Module, args: tuple) -> Tuple[list, dict]:
    """Outputs of one forward on `args`, and each trainable parameter's
    gradient (None where it gets none) for fixed pseudo-random output
    gradients."""
    outputs = list(_tensors_in(module(*args)))
    params = {n: p for n, p in module.named_parameters() if p.requires_grad}
    roots = [o for o in outputs if o.requires_grad]
    grads = dict.fromkeys(params)
    if roots and params:
        generator = torch.Generator().manual_seed(20261127)
        seeds = [torch.randn(o.shape, generator=generator).to(o)
                 for o in roots]
        found = torch.autograd.grad(roots, list(params.values()), seeds,
                                    allow_unused=True)
        grads = dict(zip(params, found))
    return [o.detach() for o in outputs], grads


def _differ(a: Optional[torch.Tensor], b: Optional[torch.Tensor]) -> bool:
    # Not bitwise: TorchScript may round an expression otherwise than
    # eager. What a trace loses (code under torch.no_grad(), which it
    # records as ordinary operations) changes gradients far more.
    if (a is None) != (b is None):
        return True
    if a is None:
        return False
    if a.shape != b.shape:
        return True
    scale = float(a.abs().max()) if a.numel() else 0.0
    return not torch.allclose(a.float(), b.float(), rtol=1e-3,
                              atol=1e-5 * max(scale, 1e-12), equal_nan=True)


def _check_trace_gradients(model: nn.Module, traced, args: tuple, name: str,
                           script_error: str, path: Optional[str],
                           source: Optional[str]) -> None:
    """A trace records no grad mode: what forward computes under
    torch.no_grad() runs with autograd in the trace, and gradients flow
    where eager's do not. One forward and backward of each on the sample
    input (state restored after each, so both draw the same random
    numbers) must give the same outputs and parameter gradients; else
    UnsupportedModelError, rather than a compiled model that trains
    differently."""
    if not model.training or not any(p.requires_grad
                                     for p in model.parameters()):
        return
    try:
        with _PreservedState(model), torch.enable_grad():
            eager_out, eager_grads = _gradients(model, args)
        with _PreservedState(model), torch.enable_grad():
            traced_out, traced_grads = _gradients(traced, args)
    except Exception:  # the trace fails on its own input: compile says why
        return
    differs = [f"output {i}" for i, (a, b) in
               enumerate(zip(eager_out, traced_out)) if _differ(a, b)]
    differs += [n for n in eager_grads
                if _differ(eager_grads[n], traced_grads.get(n))]
    if len(eager_out) != len(traced_out) or differs:
        first = differs[0] if differs else "the outputs"
        raise UnsupportedModelError(
            f"cannot script {name} ({script_error}), and its trace computes "
            f"other gradients than eager on the sample input (first: "
            f"{first}): a trace records code under torch.no_grad() as "
            f"ordinary operations; make forward scriptable",
            module_path=path, source=source)


#: Operator namespaces LibTorch registers itself (and memopt's runtime).
BUILTIN_NAMESPACES = {"aten", "prim", "memopt", "profiler", "cuda",
                       "quantized", "_quantized", "_caffe2", "mkldnn"}


def _node_kinds(block):
    for node in block.nodes():
        yield node.kind()
        for inner in node.blocks():
            yield from _node_kinds(inner)


def calls_library_operators(scripted) -> bool:
    """Whether the scripted model's forward (its calls inlined) calls an
    operator that a loaded library registered (torchvision::roi_align, a
    C++ extension's), not LibTorch."""
    try:
        graph = scripted.forward.inlined_graph
    except (AttributeError, RuntimeError):
        return False
    return any(kind.split("::")[0] not in BUILTIN_NAMESPACES
               for kind in _node_kinds(graph.block()))
