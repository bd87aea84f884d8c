"""The model zoo of the end-to-end tests, with a train-step comparison.

Every model is small enough to train a step on 2 CPU cores in well under a
second, is built deterministically from a seed, and comes with its input
specs (`--input-shape` strings of memopt-translate). Other tests reuse both
the zoo and `compare_training`.

Run as a script to compare a compiled .pt against the eager model in a fresh
process (see `main`): TorchScript's profiling executor redraws dropout masks
once a function has been called twice, so comparisons must run where
`torch._C._set_graph_executor_optimize(False)` was set before the first call.
"""
import copy
import json
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

# The training loop and the comparison are the ones bench/ and the
# end-to-end tests use.
from memopt.measure import compare_records, train_steps

try:  # the documented FX entry point (python/memopt/fx.py), when present
    from memopt.fx import export_fx as _export_fx
except ImportError:
    _export_fx = None


@dataclass
class ModelCase:
    """How to build a model, save it as TorchScript and feed it."""

    name: str
    build: Callable[[], nn.Module]   # the eager model, deterministic
    inputs: List[Tuple[str, Tuple[int, ...]]]  # (name, shape), float32
    to_torchscript: str = "script"  # "script", "trace" or "fx"
    # Where the comparison is not bitwise, why (see compare_training).
    tolerance_reason: str = ""
    extra: Dict[str, object] = field(default_factory=dict)

    def example_inputs(self, seed: int = 1) -> List[torch.Tensor]:
        gen = torch.Generator().manual_seed(seed)
        return [torch.randn(*shape, generator=gen) for _, shape in self.inputs]

    def input_specs(self) -> List[str]:
        return [f"{n}:{'x'.join(map(str, s))}" for n, s in self.inputs]

    def make(self, seed: int = 0) -> nn.Module:
        torch.manual_seed(seed)
        model = self.build()
        model.train()
        return model

    def save(self, path: str, seed: int = 0) -> nn.Module:
        """Saves the TorchScript form of the seeded model; returns the eager one."""
        model = self.make(seed)
        if self.to_torchscript == "fx" and _export_fx is not None:
            _export_fx(torch.fx.symbolic_trace(model), self.example_inputs(),
                       str(path))
        else:
            to_torchscript(self, model).save(str(path))
        return model


def to_torchscript(case: ModelCase, model: nn.Module) -> torch.jit.ScriptModule:
    if case.to_torchscript == "trace":
        # Tracing runs forward once: keep the RNG and the batch-norm
        # statistics (shared with the traced module) as they were.
        state = copy.deepcopy(model.state_dict())
        with torch.random.fork_rng():
            traced = torch.jit.trace(model, tuple(case.example_inputs()),
                                     check_trace=False)
        model.load_state_dict(state)
        return traced
    if case.to_torchscript == "fx":
        gm = torch.fx.symbolic_trace(model)
        return torch.jit.script(gm)
    return torch.jit.script(model)


#===------------------------------------------------------------------------===#
# Hand-written models
#===------------------------------------------------------------------------===#

class MultiStepLIF(nn.Module):
    """Leaky integrate-and-fire over T time steps (input [T, B, ...]).

    Heaviside spikes with a sigmoid surrogate gradient, written without
    autograd.Function so that TorchScript compiles it; hard reset.
    """

    def __init__(self, steps: int, tau: float = 2.0, threshold: float = 1.0,
                 alpha: float = 4.0):
        super().__init__()
        self.steps = steps
        self.tau = tau
        self.threshold = threshold
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = torch.zeros_like(x[0])
        spikes: List[torch.Tensor] = []
        for t in range(self.steps):
            v = v + (x[t] - v) / self.tau
            surrogate = torch.sigmoid(self.alpha * (v - self.threshold))
            spike = (v >= self.threshold).to(x.dtype)
            spike = spike.detach() + (surrogate - surrogate.detach())
            v = v * (1.0 - spike)
            spikes.append(spike)
        return torch.stack(spikes)


class SpikingNet(nn.Module):
    """conv-bn-LIF twice, then a rate readout; input [T, B, 3, H, W]."""

    def __init__(self, steps: int = 4, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.lif1 = MultiStepLIF(steps)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, stride=2, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.lif2 = MultiStepLIF(steps)
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps, batch = x.shape[0], x.shape[1]
        y = self.bn1(self.conv1(x.flatten(0, 1)))
        y = self.lif1(y.reshape([steps, batch] + list(y.shape[1:])))
        y = self.bn2(self.conv2(y.flatten(0, 1)))
        y = self.lif2(y.reshape([steps, batch] + list(y.shape[1:])))
        y = y.mean(dim=[3, 4])          # [T, B, C]
        return self.fc(self.dropout(y)).mean(0)


class EncoderClassifier(nn.Module):
    """torch.nn.TransformerEncoder over a token sequence, mean-pooled."""

    def __init__(self, dim: int = 16, classes: int = 10):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, nhead=2, dim_feedforward=32,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(src).mean(1))


class SmallCNN(nn.Module):
    """conv-bn-relu-pool, dropout, linear: the traced and FX models."""

    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8 * 4 * 4, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        y = F.adaptive_avg_pool2d(torch.relu(self.conv2(y)) + y, 4)
        return self.fc(self.drop(torch.flatten(y, 1)))


def _torchvision(name: str, **kwargs) -> Callable[[], nn.Module]:
    def build() -> nn.Module:
        import torchvision
        return getattr(torchvision.models, name)(num_classes=10, **kwargs)
    return build


def _vit() -> nn.Module:
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                             num_heads=2, hidden_dim=32, mlp_dim=64,
                             dropout=0.1, attention_dropout=0.1, num_classes=10)


IMAGE = [("x", (2, 3, 32, 32))]

CASES: Dict[str, ModelCase] = {c.name: c for c in [
    ModelCase("resnet18", _torchvision("resnet18"), IMAGE),
    ModelCase("mobilenet_v2", _torchvision("mobilenet_v2"), IMAGE),
    ModelCase("densenet121", _torchvision("densenet121"), IMAGE),
    ModelCase("efficientnet_b0", _torchvision("efficientnet_b0"), IMAGE),
    ModelCase("convnext_tiny", _torchvision("convnext_tiny"), IMAGE),
    ModelCase("vit", _vit, IMAGE),
    ModelCase("transformer_encoder", EncoderClassifier, [("src", (2, 6, 16))]),
    ModelCase("spiking", SpikingNet, [("x", (4, 2, 3, 16, 16))]),
    ModelCase("traced_cnn", SmallCNN, [("x", (2, 3, 16, 16))],
              to_torchscript="trace"),
    ModelCase("fx_cnn", SmallCNN, [("x", (2, 3, 16, 16))], to_torchscript="fx"),
]}


#===------------------------------------------------------------------------===#
# Comparing training steps
#===------------------------------------------------------------------------===#

def compare_training(reference: nn.Module, candidate: nn.Module,
                     inputs: List[torch.Tensor], steps: int = 2) -> Dict:
    """Trains both from the same seed and reports the largest differences.

    Returns {"bitwise": bool, "worst_relative": float, "problems": [...]}:
    `worst_relative` is max |Δ| / max |reference| over outputs, gradients and
    buffers of every step.
    """
    return compare_records(train_steps(reference, inputs, steps),
                           train_steps(candidate, inputs, steps))


def main(argv: List[str]) -> int:
    """`models.py compare <case> <compiled.pt> [seed]`: prints a JSON report."""
    torch._C._set_graph_executor_optimize(False)
    if len(argv) < 3 or argv[0] != "compare":
        print(main.__doc__, file=sys.stderr)
        return 2
    case = CASES[argv[1]]
    seed = int(argv[3]) if len(argv) > 3 else 0
    reference = case.make(seed)
    if case.to_torchscript == "fx":
        reference = torch.fx.symbolic_trace(reference)
    candidate = torch.jit.load(argv[2])
    candidate.train()
    report = compare_training(reference, candidate, case.example_inputs())
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
