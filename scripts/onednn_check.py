#!/usr/bin/python3
"""Does this PyTorch compute convolution input gradients correctly here?

Compares the input gradient of float32 convolutions (oneDNN's kernels on
x86) with a float64 reference (torch.nn.grad.conv{2,3}d_input), three calls
per case. On this project's machines Debian 13's PyTorch 2.6 (oneDNN 3.7.2)
gets them wrong, even NaN: its AVX-512 kernels for 2-d convolutions with 16
input channels or more, and, with ONEDNN_MAX_CPU_ISA=AVX2, 3-d convolutions
with 3 input channels (docs/pytorch2.md). PyTorch 1.13 gets all right.
Exit status 0: all correct; 1: the message names the wrong cases.
"""
import sys

import torch
import torch.nn.functional as F

CASES = [  # name, input shape, weight shape
    ("conv2d 16 channels", (8, 16, 16, 16), (8, 16, 3, 3)),
    ("conv2d 64 channels", (2, 64, 32, 32), (8, 64, 3, 3)),
    ("conv2d 3 channels", (8, 3, 16, 16), (8, 3, 3, 3)),
    ("conv3d 3 channels", (2, 3, 5, 6, 7), (4, 3, 3, 3, 3)),
]

torch.set_num_threads(1)
torch.manual_seed(0)
wrong = []
for name, input_shape, weight_shape in CASES:
    three_d = len(input_shape) == 5
    conv = F.conv3d if three_d else F.conv2d
    reference_grad = (torch.nn.grad.conv3d_input if three_d
                      else torch.nn.grad.conv2d_input)
    worst = 0.0
    for _ in range(3):
        x = torch.randn(*input_shape, requires_grad=True)
        weight = torch.randn(*weight_shape)
        out = conv(x, weight, None, 1, 1)
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        reference = reference_grad(x.shape, weight.double(), grad_out.double(),
                                   padding=1)
        error = (x.grad.double() - reference).abs().max().item()
        worst = error if error != error or worst != worst else max(worst, error)
    if not worst <= 1e-3:  # also NaN
        wrong.append(f"{name} (max error {worst:.3g})")
if wrong:
    print("convolution input gradients are wrong here: " + ", ".join(wrong))
    sys.exit(1)
