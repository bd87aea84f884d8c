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
2. saves it and runs `memopt-compile` on it once for the sample inputs'
   shapes (several samples or recorded signatures: one plan each), with
   the budget/preference options, `--report` and `--timeline`: the report
   holds everything `memopt.summary` shows;
3. loads the result (`torch.ops.load_library` of the runtime, then
   `torch.jit.load`) and binds the model's own `Parameter` and buffer
   objects into it, so the compiled forward reads and updates exactly the
   tensors the optimizer holds;
4. caches the compiled module (without weights) and the report on disk.

Where each step lives: signatures.py (sample inputs) and options.py (the
other arguments), torchscript.py (1), compiler.py (2 and 4, with cache.py),
binding.py (3), flags.py (training flags).

The returned `MemoptModule` shares everything with the model: its
`named_parameters()` are the model's objects, `state_dict()` /
`load_state_dict()` are the model's, `train()` / `eval()` set the model's
flags. Its forward runs the model's own forward when autograd is off, else
the plan for the modules' current training flags (wrapped_module.py).

`memopt.detach(wrapped)` gives the model back.
"""
import torch.nn as nn

from .compiler import Compiler
from .errors import InputError, MemoptRuntimeError, describe, warn
from .options import PREFERENCES, make_options
from .runtime import load_runtime
from .signatures import collect_signatures
from .torchscript import hooked_modules
from .wrapped_module import MemoptModule

# MemoptRuntimeError, PREFERENCES and load_runtime are defined elsewhere
# (errors.py, options.py, runtime.py) and exported here too.
__all__ = ["wrap", "detach", "MemoptModule", "MemoptRuntimeError",
           "load_runtime", "PREFERENCES"]


def wrap(model: nn.Module, sample_input=None, *, budget=None,
         prefer: str = "balanced", specs=None, checkpoint=None,
         no_checkpoint=None, assume_binary=None, device=None,
         cache_dir=None, verbose: bool = True,
         world_size=None, cost_model=None) -> MemoptModule:
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
    world_size: data-parallel processes training the model (DDP), each on
      the batch sample_input gives; default: the initialized default
      process group's size, else 1. Plans are per process; above one the
      prediction counts DDP's gradient buckets (docs/distributed.md).
    cost_model: a cost-model fit of the machine that trains (the file
      `bench/cost_model_calibration.py --write FILE` writes there): plans
      price recompute with it instead of the built-in fit.

    Raises MemoptError subclasses with one-line messages; on error the
    model is left as it was.
    """
    if isinstance(model, MemoptModule):
        raise InputError("the model is wrapped already: wrap "
                         "memopt.detach(model) to compile it again")
    if not isinstance(model, nn.Module):
        raise InputError(f"wrap takes a torch.nn.Module (or an FX "
                         f"GraphModule), got {describe(model)}")
    options = make_options(model, budget=budget, prefer=prefer, device=device,
                           checkpoint=checkpoint, no_checkpoint=no_checkpoint,
                           assume_binary=assume_binary,
                           world_size=world_size, cost_model=cost_model)
    signatures = collect_signatures(model, sample_input, specs)
    wrapped = MemoptModule(model, Compiler(model, signatures, options,
                                           cache_dir, verbose))
    # Up front for the current flags: errors surface here, not in the loop.
    wrapped._memopt_compile_now()
    hooked = hooked_modules(model)
    if hooked:
        shown = ", ".join(hooked[:4]) + (f" and {len(hooked) - 4} more"
                                         if len(hooked) > 4 else "")
        warn(f"memopt.wrap: the hooks registered on {shown} do not run in "
             f"the compiled forward (only under torch.no_grad(), where the "
             f"model's own forward runs); hooks on the wrapped module do")
    return wrapped


def detach(wrapped: nn.Module) -> nn.Module:
    """The model `wrap` was given (the same object, with whatever training
    changed in its parameters)."""
    if not isinstance(wrapped, MemoptModule):
        raise InputError(f"detach takes what memopt.wrap returned, got "
                         f"{describe(wrapped)}")
    return wrapped._memopt_model
