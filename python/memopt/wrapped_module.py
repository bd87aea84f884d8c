"""`MemoptModule`: what `memopt.wrap` returns.

It shares everything with the model: its `named_parameters()`, buffers and
submodules are the model's objects under the model's names,
`state_dict()` / `load_state_dict()` are the model's, `train()` / `eval()`
set the model's flags, and attributes it does not have come from the model.
Its forward runs

* the model's own forward when autograd is off (`torch.no_grad()`,
  `torch.inference_mode()`): without a backward there is nothing to plan;
* otherwise the plan compiled for the modules' current training flags
  (compiled on first use for flags not seen before, then kept; switching
  costs nothing), or, when no plan can be compiled for those flags, the
  model's own forward with a one-time `MemoptWarning`.

At every call it checks that the model is still the one the plans were
compiled for (modules, parameters, buffers, `requires_grad`, plain
attributes TorchScript folds into the code); when it is not, the plan for
the model as it is now is compiled (or loaded from the cache).
"""
import copy
import re
from typing import List, Optional

import torch
import torch.nn as nn

from .binding import Plan
from .cache import is_simple_value
from .compiler import Compiler
from .errors import (MemoptError, MemoptRuntimeError, UnsupportedModelError,
                     warn)
from .flags import describe_flags, flags_of

__all__ = ["MemoptModule"]

_MISSING = object()
_MEMOPT_LINE = re.compile(r"(memopt: [^\n]*)")


def _float_dtype(model: nn.Module) -> Optional[torch.dtype]:
    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return None


def _parameter_slots(model: nn.Module) -> List[tuple]:
    """(module, name, path) of every parameter the model registers."""
    return [(module, name, f"{prefix}.{name}" if prefix else name)
            for prefix, module in model.named_modules()
            for name, p in module._parameters.items() if p is not None]


def _check_own_parameters(model: nn.Module, slots) -> None:
    """A parameter shadowed by a plain tensor that is a view of another
    Parameter is what FullyShardedDataParallel does while it runs a module
    (with or without use_orig_params): the values are views of its flat
    parameter and the gradients go there. A plan trains the model's own
    parameters, so it cannot run, and no plan compiled from the model as
    FSDP leaves it would either: an error, not a fallback."""
    for module, name, path in slots:
        value = module.__dict__.get(name)
        if isinstance(value, torch.Tensor) and \
                not isinstance(value, nn.Parameter) and \
                isinstance(value._base, nn.Parameter):
            raise UnsupportedModelError(
                f"memopt: parameter '{path}' of {type(model).__name__} is "
                f"a view of another module's flat parameter, as "
                f"FullyShardedDataParallel makes it; memopt plans train the "
                f"model's own parameters: use DistributedDataParallel "
                f"(docs/distributed.md)")


def _simple_attributes(modules) -> List[tuple]:
    """(instance dict, name, value) of the modules' plain attributes (the
    ones the cache key covers: ints, floats, strings, tuples of them)."""
    found = []
    for module in modules:
        values = vars(module)
        for name, value in values.items():
            if not name.startswith("_") and name != "training" and \
                    is_simple_value(value):
                # a copy of a list: an in-place change must show
                found.append((values, name,
                              copy.deepcopy(value) if isinstance(value, list)
                              else value))
    return found


class MemoptModule(nn.Module):
    """The model, trained through memopt's compiled plans. See the module
    docstring; build it with `memopt.wrap`."""

    def __init__(self, model: nn.Module, compiler: Compiler):
        super().__init__()
        d = self.__dict__
        d["_memopt_model"] = model
        d["_memopt_compiler"] = compiler
        d["_memopt_plans"] = {}          # flags -> Plan or MemoptError
        d["_memopt_warned"] = set()
        d["_memopt_modules"] = list(model.modules())
        d["_memopt_attrs"] = _simple_attributes(d["_memopt_modules"])
        d["_memopt_parameter_slots"] = _parameter_slots(model)
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
        if compiler.model_changed():
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
        compiled = [p for p in self._memopt_plans.values()
                    if isinstance(p, Plan)]
        return (f"memopt plan(s) for {len(compiled)} set(s) of training "
                f"flags; model={type(self._memopt_model).__name__}")

    # -- running ------------------------------------------------------------
    def _current_plan(self) -> Optional[Plan]:
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
        if isinstance(plan, Plan):
            threads = plan.planned_threads()
            if threads is not None and threads != torch.get_num_threads():
                # CPU kernels follow the thread count (docs/compile.md): a
                # plan for this one (the cache keeps both).
                plan = None
            elif plan.in_sync():
                return plan
            else:
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
                warn(f"memopt: no plan for {type(model).__name__} in "
                     f"{describe_flags(model, flags)} ({plan}); running its "
                     f"own forward there, memory is not optimized")
            return None
        return plan

    def _restructure(self, modules) -> None:
        """The model's modules, parameters or buffers were replaced: plans
        compiled before no longer read the model's tensors."""
        self.__dict__["_memopt_modules"] = list(modules)
        self.__dict__["_memopt_attrs"] = _simple_attributes(modules)
        self.__dict__["_memopt_parameter_slots"] = _parameter_slots(
            self._memopt_model)
        self.__dict__["_memopt_plans"] = {}
        self.__dict__["_memopt_warned"] = set()
        self._memopt_compiler.restructured()

    def forward(self, *args, **kwargs):
        model = self._memopt_model
        if not torch.is_grad_enabled():
            return model(*args, **kwargs)
        _check_own_parameters(model, self._memopt_parameter_slots)
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
                        self._memopt_compiler.model_changed():
                    self._restructure(list(model.modules()))
                    continue
                raise MemoptRuntimeError(line) from None

    # -- for wrap(), summary() and detach() -----------------------------------
    def _memopt_compile_now(self) -> None:
        """Compiles the plan for the model's current flags (errors surface
        at the wrap line, not in the training loop)."""
        flags = flags_of(self._memopt_model)
        self._memopt_plans[flags] = self._memopt_compiler.plan(flags)

    def _memopt_plan_for_summary(self) -> Plan:
        flags = flags_of(self._memopt_model)
        plan = self._memopt_plans.get(flags)
        if isinstance(plan, Plan):
            return plan
        for plan in self._memopt_plans.values():
            if isinstance(plan, Plan):
                return plan
        return self._current_plan() or self._memopt_compiler.plan(flags)
