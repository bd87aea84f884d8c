"""wrap's planning options (`budget`, `prefer`, `device`, module paths) as
memopt-compile's arguments. The values are checked here and passed on as
they are; what they mean is memopt-compile's (docs/compile.md)."""
import dataclasses
import os
import pathlib
from typing import List, Optional

import torch
import torch.nn as nn

from .errors import InputError, describe

__all__ = ["PREFERENCES", "Options", "make_options", "budget_text"]

PREFERENCES = ("speed", "balanced", "memory")


@dataclasses.dataclass
class Options:
    budget: Optional[str]
    prefer: str
    device: str
    checkpoint: Optional[str]
    no_checkpoint: Optional[str]
    assume_binary: Optional[str]
    world_size: int = 1
    # A cost-model fit of the machine that trains (absolute path).
    cost_model: Optional[str] = None

    def arguments(self) -> List[str]:
        args = ["--prefer", self.prefer, "--device", self.device]
        if self.device == "cpu":
            # CPU kernels (and what they allocate) follow the thread count:
            # plan for the one this process trains with when it compiles.
            args += ["--intra-op-threads", str(torch.get_num_threads())]
        if self.world_size > 1:
            args += ["--world-size", str(self.world_size)]
        if self.cost_model is not None:
            args += ["--cost-model", self.cost_model]
        if self.budget is not None:
            args += ["--budget", self.budget]
        for option, value in (("--checkpoint", self.checkpoint),
                              ("--no-checkpoint", self.no_checkpoint),
                              ("--assume-binary", self.assume_binary)):
            if value:
                args += [option, value]
        return args


def make_options(model: nn.Module, *, budget, prefer, device, checkpoint,
                 no_checkpoint, assume_binary, world_size=None,
                 cost_model=None) -> Options:
    """wrap's keyword arguments as Options; InputError for a value
    memopt-compile would not take."""
    if prefer not in PREFERENCES:
        raise InputError(f"unknown prefer '{prefer}' (expected speed, "
                         f"balanced or memory)")
    return Options(
        budget=budget_text(budget), prefer=prefer,
        device=_device_of(model, device),
        checkpoint=_paths_option(checkpoint, "checkpoint"),
        no_checkpoint=_paths_option(no_checkpoint, "no_checkpoint"),
        assume_binary=_paths_option(assume_binary, "assume_binary"),
        world_size=_world_size(world_size),
        cost_model=_cost_model(cost_model))


def _cost_model(value) -> Optional[str]:
    """`cost_model` as an absolute path to a file; what it holds is
    memopt-compile's to check."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise InputError(f"cost_model is {describe(value)}: expected the path "
                         f"of a fit bench/cost_model_calibration.py --write "
                         f"wrote")
    path = pathlib.Path(value).expanduser().resolve()
    if not path.is_file():
        raise InputError(f"cost_model '{value}' is not a file")
    return str(path)


def _world_size(value) -> int:
    """`world_size`, or the processes of the initialized default process
    group (DDP's replicas: each holds gradient buckets), or 1."""
    if value is None:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_world_size()
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"world_size is {describe(value)}: expected the "
                         f"number of data-parallel processes (an int >= 1)")
    return value


def _paths_option(value, option: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple, set)):
        parts = []
        for p in value:
            if not isinstance(p, str):
                raise InputError(f"{option} holds {describe(p)}: expected "
                                 f"module paths such as 'layer1.0'")
            parts.append(p)
    else:
        raise InputError(f"{option} is {describe(value)}: expected a module "
                         f"path, a comma-separated string or a list of them")
    return ",".join(parts) if parts else None


def budget_text(budget) -> Optional[str]:
    """`budget` in memopt-compile's --budget syntax (bytes, `40%`,
    `1.5GiB`); None without one."""
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
    raise InputError(f"budget is {describe(budget)}: give bytes (int), a "
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
