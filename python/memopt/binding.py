"""The model's own tensors in the compiled module.

The cache stores compiled modules without weights (`strip`). A `Plan` is a
loaded module for one set of training flags with every parameter and buffer
slot set to the model's tensor at the same path, verified one to one
(`Stale` when the two do not fit), so the compiled forward reads and updates
exactly the tensors the optimizer holds. Calling it runs the compiled
forward as memopt-compile wrote it and copies attributes the compiled code
reassigns (`self.calls = self.calls + 1`) back to the model, as eager
would.
"""
from typing import List, Optional, Tuple

import torch
import torch.nn as nn

from . import cache
from .flags import Flags, module_table

__all__ = ["Stale", "strip", "Plan"]


class Stale(Exception):
    """The compiled module does not fit the model (one line)."""


def _state_slots(model: nn.Module):
    """(path, dict, name, tensor) of every parameter and buffer (each
    occurrence, tied ones too)."""
    for path, module in model.named_modules(remove_duplicate=False):
        for kind in ("_parameters", "_buffers"):
            table = getattr(module, kind)
            for name, tensor in table.items():
                if tensor is not None:
                    yield path, table, name, tensor


def strip(loaded) -> None:
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
    the same path; returns the bindings (owner dict, name, tensor,
    requires_grad). Raises Stale when the two do not correspond one to
    one."""
    table = module_table(loaded)
    bindings = []
    bound = set()
    for path, slots, name, tensor in _state_slots(model):
        target = table.get(path)
        where = f"{path}.{name}" if path else name
        if target is None or not target._c.hasattr(name):
            raise Stale(f"the compiled module has no '{where}'")
        current = target._c.getattr(name)
        if not isinstance(current, torch.Tensor) or current.dtype != tensor.dtype:
            raise Stale(f"'{where}' has another type in the compiled module")
        target._c.setattr(name, tensor)
        bindings.append((slots, name, tensor, tensor.requires_grad))
        bound.add(where)
    for kind in ("named_parameters", "named_buffers"):
        for where, tensor in getattr(loaded, kind)():
            if where not in bound:
                raise Stale(f"the compiled module's '{where}' is not the model's")
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


class Plan:
    """A compiled module (loaded from the cache `entry`) for one set of
    training flags, bound to the model's tensors; Stale when it does not fit
    the model. `seconds` is what compiling or loading it took."""

    def __init__(self, module, model: nn.Module, entry: cache.Entry,
                 flags: Flags, cache_hit: bool):
        self.bindings = _bind(model, module)
        self.module = module
        self.entry = entry
        self.flags = flags
        self.cache_hit = cache_hit
        self.seconds = 0.0
        table = module_table(module)
        model_table = module_table(model)
        where = {(id(slots), name): i
                 for i, (slots, name, _, _) in enumerate(self.bindings)}
        self.copy_back = []
        for path, name in _set_attrs(module):
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
        """memopt-compile's JSON report of this plan (docs/compile.md)."""
        if self._report is None:
            self._report = self.entry.report()
        return self._report

    def planned_threads(self) -> Optional[int]:
        """The intra-op thread count a CPU plan was made for (None: a CUDA
        plan, or a report from before the option)."""
        return ((self.report or {}).get("options") or {}).get("threads")

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
