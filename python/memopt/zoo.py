"""Benchmark models for memory prediction and planning, at chosen sizes.

Every entry is a function returning `(model, inputs)`: a freshly built
`nn.Module` in training mode (deterministic under `torch.manual_seed`) and
its inputs as `[(name, shape), ...]` (float32), the names being those of
`forward`'s arguments (what `memopt-translate --input-shape name:AxBx...`
wants); a third element says what else an input holds: "tokens:<vocab>"
(int64 ids below vocab) or "events" (0/1 frames). All models are scriptable
with `torch.jit.script`. The families of memopt.zoo_families (GPT-style
decoder, GRU/LSTM language models, U-Net, SpikingJelly neurons) are entries
too.

    from memopt import zoo
    model, inputs = zoo.spiking_vgg(steps=4, batch=2, size=48, blocks=8)
    model, inputs = zoo.build("resnet18", "small")

`ZOO` maps names to entry functions and `SIZES` gives two input sizes per
entry ("small", "large") cheap enough to train a step on a CPU.
"""
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn

Inputs = List[Tuple[str, Tuple[int, ...]]]

__all__ = ["LIF", "SpikingVGG", "EncoderClassifier", "spiking_vgg",
           "transformer_encoder", "vit", "torchvision_model", "ZOO", "SIZES",
           "build", "input_specs"]


# ---------------------------------------------------------------------------
# Spiking VGG
# ---------------------------------------------------------------------------

class LIF(nn.Module):
    """Multi-step leaky integrate-and-fire neuron over `x` of [T, B, ...].

    Written as an explicit loop over T so that TorchScript compiles it (the
    memopt importer unrolls it): v = v + (x_t - v) / tau; the spike is the
    Heaviside `v >= threshold` cast to float with a sigmoid straight-through
    surrogate gradient (`hard + (soft - soft.detach())`); hard reset
    v = v * (1 - spike).
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
            hard = (v >= self.threshold).to(x.dtype)
            soft = torch.sigmoid(self.alpha * (v - self.threshold))
            spike = hard + (soft - soft.detach())
            v = v * (1.0 - spike)
            spikes.append(spike)
        return torch.stack(spikes)


class SpikingVGG(nn.Module):
    """VGG of conv3x3-BatchNorm-LIF blocks on event frames [T, B, C, H, W].

    Convolutions run on x.flatten(0, 1) ([T*B, C, H, W]); a 2x2 max-pool
    follows the blocks listed in `pool_after`; the head averages the last
    feature map over space and time and applies a linear layer. `neuron(T)`
    makes each block's neuron (default: LIF).
    """

    def __init__(self, steps: int = 4, in_channels: int = 2,
                 channels: Sequence[int] = (16, 16, 32, 32, 64, 64, 64, 64),
                 pool_after: Sequence[int] = (1, 3, 5), classes: int = 10,
                 neuron: Optional[Callable[[int], nn.Module]] = None):
        super().__init__()
        self.steps = steps
        convs, bns, lifs = [], [], []
        c_in = in_channels
        for c_out in channels:
            convs.append(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False))
            bns.append(nn.BatchNorm2d(c_out))
            lifs.append(neuron(steps) if neuron else LIF(steps))
            c_in = c_out
        self.convs = nn.ModuleList(convs)
        self.bns = nn.ModuleList(bns)
        self.lifs = nn.ModuleList(lifs)
        self.pool = [i in pool_after for i in range(len(channels))]
        self.fc = nn.Linear(c_in, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        steps, batch = x.shape[0], x.shape[1]
        i = 0
        for conv, bn, lif in zip(self.convs, self.bns, self.lifs):
            y = bn(conv(x.flatten(0, 1)))
            if self.pool[i]:
                y = torch.max_pool2d(y, 2)
            x = lif(y.reshape([steps, batch] + list(y.shape[1:])))
            i += 1
        y = x.mean(dim=[0, 3, 4])  # [B, C]
        return self.fc(y)


def spiking_vgg(steps: int = 4, batch: int = 2, size: int = 48,
                blocks: int = 8, in_channels: int = 2,
                channels: Optional[Sequence[int]] = None,
                pool_after: Optional[Sequence[int]] = None,
                classes: int = 10) -> Tuple[nn.Module, Inputs]:
    """A spiking VGG with `blocks` conv-BN-LIF blocks on [steps, batch,
    in_channels, size, size] event frames.

    `channels` defaults to widths doubling from 16 every two blocks (capped
    at 128); `pool_after` to every second block while the map is >= 8 px.
    """
    if channels is None:
        channels = [min(16 << (i // 2), 128) for i in range(blocks)]
    channels = list(channels)
    if len(channels) != blocks:
        raise ValueError(f"{len(channels)} channel widths for {blocks} blocks")
    if pool_after is None:
        pool_after, s = [], size
        for i in range(blocks - 1):
            if i % 2 == 1 and s >= 8:
                pool_after.append(i)
                s //= 2
    model = SpikingVGG(steps, in_channels, channels, pool_after, classes)
    return model.train(), [("x", (steps, batch, in_channels, size, size),
                            "events")]


# ---------------------------------------------------------------------------
# Transformers
# ---------------------------------------------------------------------------

class EncoderClassifier(nn.Module):
    """torch.nn.TransformerEncoder over [B, S, D] tokens, mean-pooled, and a
    linear head."""

    def __init__(self, dim: int = 64, heads: int = 4, ff: int = 128,
                 layers: int = 2, classes: int = 10, dropout: float = 0.1):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, nhead=heads,
                                           dim_feedforward=ff,
                                           dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers,
                                             enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, src: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(src).mean(1))


def transformer_encoder(batch: int = 2, seq: int = 16, dim: int = 64,
                        heads: int = 4, ff: int = 128, layers: int = 2,
                        dropout: float = 0.1) -> Tuple[nn.Module, Inputs]:
    model = EncoderClassifier(dim, heads, ff, layers, dropout=dropout)
    return model.train(), [("src", (batch, seq, dim))]


def vit(batch: int = 2, image: int = 32, patch: int = 8, layers: int = 2,
        heads: int = 4, hidden: int = 64, mlp: int = 128,
        dropout: float = 0.1) -> Tuple[nn.Module, Inputs]:
    """torchvision's VisionTransformer at a small configuration."""
    from torchvision.models.vision_transformer import VisionTransformer
    model = VisionTransformer(image_size=image, patch_size=patch,
                              num_layers=layers, num_heads=heads,
                              hidden_dim=hidden, mlp_dim=mlp, dropout=dropout,
                              attention_dropout=dropout, num_classes=10)
    return model.train(), [("x", (batch, 3, image, image))]


# ---------------------------------------------------------------------------
# torchvision CNNs
# ---------------------------------------------------------------------------

class ConvClassifier(nn.Module):
    """Two conv-ReLU-max-pool stages and a VGG/AlexNet-style classifier
    (flatten, a wide linear layer, ReLU, dropout, the output layer), whose
    first weight is most of the model: its gradient, not the activations,
    sets a training step's peak."""

    def __init__(self, image: int = 64, width: int = 32, hidden: int = 2048,
                 classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width // 2, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(width // 2, width, 3, padding=1), nn.ReLU(inplace=True),
            nn.MaxPool2d(2))
        flat = width * (image // 4) * (image // 4)
        self.classifier = nn.Sequential(
            nn.Linear(flat, hidden), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(hidden, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


def conv_classifier(batch: int = 2, image: int = 64, width: int = 32,
                    hidden: int = 2048) -> Tuple[nn.Module, Inputs]:
    """A ConvClassifier on `batch` RGB images of `image` pixels (a
    width * image^2 / 16 x hidden first classifier weight: 64 MiB at the
    defaults)."""
    model = ConvClassifier(image, width, hidden)
    return model.train(), [("x", (batch, 3, image, image))]


def torchvision_model(name: str, batch: int = 2, image: int = 32,
                      frames: int = 8) -> Tuple[nn.Module, Inputs]:
    """torchvision's model `name` with 10 classes and random weights, and
    its input: `batch` images of `image` pixels, or for a video model
    `batch` clips of `frames` such images, or for an optical-flow model two
    batches of images. Segmentation models return a dict ("out", and "aux"
    where the model has an auxiliary head, which is built: it trains with
    it)."""
    import inspect
    import torchvision
    models = torchvision.models
    if name in models.list_models(module=models.segmentation):
        kwargs = dict(weights=None, weights_backbone=None, num_classes=10)
        if not name.startswith("lraspp"):
            kwargs["aux_loss"] = True
        model = models.get_model(name, **kwargs)
        shape = (batch, 3, image, image)
    elif name in models.list_models(module=models.video):
        model = models.get_model(name, weights=None, num_classes=10)
        shape = (batch, 3, frames, image, image)
    elif name in models.list_models(module=models.optical_flow):
        # Two frames in; the flow after each of its 12 update steps out.
        model = models.get_model(name, weights=None)
        shape = (batch, 3, image, image)
        return model.train(), [("image1", shape), ("image2", shape)]
    else:
        model = getattr(models, name)(num_classes=10)
        shape = (batch, 3, image, image)
    # lraspp's forward names its input `input`, the others `x`.
    first = next(iter(inspect.signature(model.forward).parameters))
    return model.train(), [(first, shape)]


def _tv(name: str) -> Callable[..., Tuple[nn.Module, Inputs]]:
    def entry(batch: int = 2, image: int = 32, **kwargs):
        return torchvision_model(name, batch, image, **kwargs)
    entry.__name__ = name
    entry.__doc__ = f"torchvision.models.{name}(num_classes=10)"
    return entry


ZOO: Dict[str, Callable[..., Tuple[nn.Module, Inputs]]] = {
    "resnet18": _tv("resnet18"),
    "resnet50": _tv("resnet50"),
    "mobilenet_v2": _tv("mobilenet_v2"),
    "densenet121": _tv("densenet121"),
    "efficientnet_b0": _tv("efficientnet_b0"),
    "vit": vit,
    "transformer_encoder": transformer_encoder,
    "spiking_vgg": spiking_vgg,
    "conv_classifier": conv_classifier,
}

# Two sizes per entry, as keyword arguments of its function.
SIZES: Dict[str, Dict[str, dict]] = {
    "resnet18": {"small": dict(batch=2, image=32),
                 "large": dict(batch=4, image=64)},
    "resnet50": {"small": dict(batch=2, image=32),
                 "large": dict(batch=4, image=64)},
    "mobilenet_v2": {"small": dict(batch=2, image=32),
                     "large": dict(batch=4, image=64)},
    "densenet121": {"small": dict(batch=2, image=32),
                    "large": dict(batch=4, image=64)},
    "efficientnet_b0": {"small": dict(batch=2, image=32),
                        "large": dict(batch=4, image=64)},
    "vit": {"small": dict(batch=2, image=32, layers=2, hidden=64, mlp=128),
            "large": dict(batch=8, image=64, layers=4, hidden=128, mlp=256)},
    "transformer_encoder": {"small": dict(batch=2, seq=16, dim=64),
                            "large": dict(batch=8, seq=64, dim=128, ff=256)},
    "spiking_vgg": {"small": dict(batch=2, size=32),
                    "large": dict(batch=2, size=48)},
    "conv_classifier": {"small": dict(batch=2, image=32, hidden=1024),
                        "large": dict(batch=4, image=64, hidden=2048)},
}


from memopt import zoo_families  # noqa: E402

ZOO.update({
    "gpt_decoder": zoo_families.gpt_decoder,
    "rnn_lm": zoo_families.rnn_lm,
    "unet": zoo_families.unet,
    "spiking_family": zoo_families.spiking_family,
    "gated_mlp": zoo_families.gated_mlp,
    "refiner": zoo_families.refiner,
})
SIZES.update({
    "gpt_decoder": {"small": dict(batch=2, seq=32, layers=2),
                    "large": dict(batch=4, seq=64, layers=4)},
    "rnn_lm": {"small": dict(batch=2, seq=16),
               "large": dict(batch=4, seq=32)},
    "unet": {"small": dict(batch=2, image=32),
             "large": dict(batch=2, image=64)},
    "spiking_family": {"small": dict(size=16), "large": dict(size=32)},
    "gated_mlp": {"small": dict(batch=32, dim=64, depth=4),
                  "large": dict(batch=256, dim=512, depth=8)},
    "refiner": {"small": dict(batch=16, dim=64),
                "large": dict(batch=128, dim=256)},
})

TORCHVISION_PREFIX = "torchvision."


def entry(name: str) -> Callable[..., Tuple[nn.Module, Inputs]]:
    """The zoo entry `name`, or, for `torchvision.<model>`, that torchvision
    classifier (10 classes, `batch` images of `image` pixels)."""
    if name.startswith(TORCHVISION_PREFIX):
        return _tv(name[len(TORCHVISION_PREFIX):])
    return ZOO[name]


def build(name: str, size: str = "small",
          seed: int = 0) -> Tuple[nn.Module, Inputs]:
    """The zoo entry `name` at size "small" or "large", seeded."""
    torch.manual_seed(seed)
    return ZOO[name](**SIZES[name][size])


def input_kind(spec) -> str:
    """What an input of an entry holds: "tokens:<vocab>", "events" or
    "" (standard normal floats)."""
    return spec[2] if len(spec) > 2 else ""


def input_specs(inputs: Inputs) -> List[str]:
    """`--input-shape` arguments of memopt-translate for `inputs`."""
    return [f"{spec[0]}:{'x'.join(map(str, spec[1]))}" +
            (":i64" if input_kind(spec).startswith("tokens:") else "")
            for spec in inputs]
