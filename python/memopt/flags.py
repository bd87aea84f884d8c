"""Training flags: a plan is compiled for the `training` flag of every
module (train mode, eval mode, or partly eval such as frozen batch norm),
so the flags are part of what identifies a plan."""
from typing import Any, Dict, Tuple

import torch.nn as nn

__all__ = ["Flags", "flags_of", "describe_flags", "apply_flags",
           "module_table"]

#: The `training` flag of every module, in `model.modules()` order.
Flags = Tuple[bool, ...]


def module_table(root) -> Dict[str, Any]:
    """{path: module} of an nn.Module or a TorchScript module, tied
    submodules under each of their paths."""
    return dict(root.named_modules(remove_duplicate=False))


def flags_of(model: nn.Module) -> Flags:
    return tuple(m.training for m in model.modules())


def describe_flags(model: nn.Module, flags: Flags) -> str:
    """`train mode`, `eval mode` or `train mode, eval in bn1, ...`."""
    if all(flags):
        return "train mode"
    if not any(flags):
        return "eval mode"
    paths = [p for (p, _), f in zip(model.named_modules(), flags) if not f]
    shown = ", ".join(p or "<root>" for p in paths[:4])
    more = f" and {len(paths) - 4} more" if len(paths) > 4 else ""
    return f"train mode, eval in {shown}{more}"


def apply_flags(model: nn.Module, scripted) -> None:
    """Gives every module of `scripted` (a TorchScript module) the training
    flag of the module at the same path of `model`."""
    table = module_table(scripted)
    for path, module in model.named_modules(remove_duplicate=False):
        target = table.get(path)
        if target is not None:
            target._c.setattr("training", bool(module.training))
