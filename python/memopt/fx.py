"""Bring a torch.fx GraphModule into memopt.

memopt imports TorchScript. An FX GraphModule is Python code generated from a
graph, so it can usually be scripted as it is; when scripting fails (an FX
graph may call Python functions TorchScript cannot compile), the module is
traced with the example inputs instead, which records the ops actually run.

    gm = torch.fx.symbolic_trace(model)
    memopt.fx.export_fx(gm, (torch.randn(8, 3, 32, 32),), "model.pt")
    # memopt-translate --import-torchscript model.pt --input-shape x:8x3x32x32

The saved archive keeps the GraphModule's parameters and buffers under their
original qualified names (`layer1.0.conv1.weight`), so state_dict keys match.
"""
from typing import Sequence, Union

import torch

__all__ = ["export_fx", "FxExportError"]


class FxExportError(RuntimeError):
    """Neither torch.jit.script nor torch.jit.trace could convert the module."""


def _as_tuple(example_inputs) -> tuple:
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def export_fx(graph_module: torch.fx.GraphModule,
              example_inputs: Union[torch.Tensor, Sequence[torch.Tensor]],
              path: str,
              allow_trace: bool = True) -> torch.jit.ScriptModule:
    """Scripts `graph_module` (or traces it on `example_inputs` when scripting
    fails and `allow_trace` is set), saves it to `path` and returns it.

    Raises FxExportError naming both failures when neither works.
    """
    if not isinstance(graph_module, torch.nn.Module):
        raise TypeError(f"export_fx expects a torch.fx.GraphModule, got "
                        f"{type(graph_module).__name__}")
    inputs = _as_tuple(example_inputs)
    try:
        scripted = torch.jit.script(graph_module)
    except Exception as script_error:  # TorchScript raises many types
        if not allow_trace:
            raise FxExportError(
                f"torch.jit.script failed on the GraphModule: {script_error}"
            ) from script_error
        try:
            # Tracing runs the module: keep its state (batch-norm running
            # statistics, train/eval flag) as it was.
            state = {k: v.clone() for k, v in graph_module.state_dict().items()}
            with torch.no_grad():
                scripted = torch.jit.trace(graph_module, inputs, check_trace=False)
            graph_module.load_state_dict(state)
        except Exception as trace_error:
            raise FxExportError(
                "cannot convert the GraphModule to TorchScript:\n"
                f"  torch.jit.script: {script_error}\n"
                f"  torch.jit.trace:  {trace_error}") from trace_error
    scripted.save(str(path))
    return scripted
