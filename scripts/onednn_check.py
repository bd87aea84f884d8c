#!/usr/bin/python3
"""Does this PyTorch compute convolution gradients correctly here?

Compares the input and weight gradients of float32 convolutions (oneDNN's
kernels on x86) with a float64 reference (torch.nn.grad.conv{2,3}d_input
and _weight), three calls per case. On this project's machines Debian 13's PyTorch 2.6 (oneDNN 3.7.2)
gets them wrong, even NaN: its AVX-512 kernels for 2-d convolutions with 16
input channels or more, and, with ONEDNN_MAX_CPU_ISA=AVX2, 3-d convolutions
with 3 input channels; both crash (SIGFPE) on a strided 1x1 convolution
like resnet50's downsampling ones (docs/pytorch2.md). PyTorch 1.13 gets all
right. The cases run in a child process, so that a kernel that crashes is
named like a wrong one.
Exit status 0: all correct; 1: the message names the wrong cases.
"""
import signal
import subprocess
import sys

CASES = [  # name, input shape, weight shape, stride, padding
    ("conv2d 16 channels", (8, 16, 16, 16), (8, 16, 3, 3), 1, 1),
    ("conv2d 64 channels", (2, 64, 32, 32), (8, 64, 3, 3), 1, 1),
    ("conv2d 3 channels", (8, 3, 16, 16), (8, 3, 3, 3), 1, 1),
    ("conv3d 3 channels", (2, 3, 5, 6, 7), (4, 3, 3, 3, 3), 1, 1),
    ("conv2d 1x1 stride 2, 512 channels", (2, 512, 8, 8), (1024, 512, 1, 1),
     2, 0),
]


def worst(a, b):
    """The larger of two errors, NaN if either is."""
    return a if a != a or b != b else max(a, b)


def worst_errors(input_shape, weight_shape, stride, padding):
    """The largest input-gradient and weight-gradient errors of a case."""
    import torch
    import torch.nn.functional as F
    three_d = len(input_shape) == 5
    conv = F.conv3d if three_d else F.conv2d
    grad = torch.nn.grad
    input_reference = grad.conv3d_input if three_d else grad.conv2d_input
    weight_reference = grad.conv3d_weight if three_d else grad.conv2d_weight
    errors = [0.0, 0.0]
    for _ in range(3):
        x = torch.randn(*input_shape, requires_grad=True)
        weight = torch.randn(*weight_shape, requires_grad=True)
        out = conv(x, weight, None, stride, padding)
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        references = (
            input_reference(x.shape, weight.double(), grad_out.double(),
                            stride=stride, padding=padding),
            weight_reference(x.double(), weight.shape, grad_out.double(),
                             stride=stride, padding=padding))
        for i, (got, reference) in enumerate(zip((x.grad, weight.grad),
                                                 references)):
            # A weight gradient sums over the batch and the image: its
            # error is relative to its largest value (an input gradient's,
            # as before, absolute).
            scale = max(reference.abs().max().item(), 1.0) if i else 1.0
            error = (got.double() - reference).abs().max().item() / scale
            errors[i] = worst(errors[i], error)
    return errors


def run_cases(first):
    """Child: runs the cases from index `first` on, one line each."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for index in range(first, len(CASES)):
        print(index, *worst_errors(*CASES[index][1:]), flush=True)


def main():
    wrong = []
    first = 0
    while first < len(CASES):
        child = subprocess.run([sys.executable, __file__, "--from", str(first)],
                               capture_output=True, text=True)
        for line in child.stdout.split("\n"):
            if not line:
                continue
            index, *errors = line.split()
            first = int(index) + 1
            for gradient, error in zip(("input", "weight"), map(float, errors)):
                if not error <= 1e-3:  # also NaN
                    wrong.append(f"{CASES[int(index)][0]}, {gradient} "
                                 f"gradient (max error {error:.3g})")
        if child.returncode == 0:
            break
        if child.returncode > 0 or first >= len(CASES):
            sys.exit(f"onednn_check: the check itself failed: "
                     f"{child.stderr.strip()[-500:]}")
        crash = signal.Signals(-child.returncode).name
        wrong.append(f"{CASES[first][0]} (crashes: {crash})")
        first += 1
    if wrong:
        print("convolution gradients are wrong here: " + ", ".join(wrong))
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--from":
        run_cases(int(sys.argv[2]))
    else:
        main()
