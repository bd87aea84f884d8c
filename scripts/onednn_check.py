#!/usr/bin/python3
"""Does this PyTorch compute convolution input gradients correctly here?

Compares the input gradient of float32 convolutions (oneDNN's kernels on
x86) with a float64 reference (torch.nn.grad.conv{2,3}d_input), three calls
per case. On this project's machines Debian 13's PyTorch 2.6 (oneDNN 3.7.2)
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


def worst_error(input_shape, weight_shape, stride, padding):
    import torch
    import torch.nn.functional as F
    three_d = len(input_shape) == 5
    conv = F.conv3d if three_d else F.conv2d
    reference_grad = (torch.nn.grad.conv3d_input if three_d
                      else torch.nn.grad.conv2d_input)
    worst = 0.0
    for _ in range(3):
        x = torch.randn(*input_shape, requires_grad=True)
        weight = torch.randn(*weight_shape)
        out = conv(x, weight, None, stride, padding)
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        reference = reference_grad(x.shape, weight.double(), grad_out.double(),
                                   stride=stride, padding=padding)
        error = (x.grad.double() - reference).abs().max().item()
        worst = error if error != error or worst != worst else max(worst, error)
    return worst


def run_cases(first):
    """Child: runs the cases from index `first` on, one line each."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for index in range(first, len(CASES)):
        print(index, worst_error(*CASES[index][1:]), flush=True)


def main():
    wrong = []
    first = 0
    while first < len(CASES):
        child = subprocess.run([sys.executable, __file__, "--from", str(first)],
                               capture_output=True, text=True)
        for line in child.stdout.split("\n"):
            if not line:
                continue
            index, worst = line.split()
            first = int(index) + 1
            if not float(worst) <= 1e-3:  # also NaN
                wrong.append(f"{CASES[int(index)][0]} "
                             f"(max error {float(worst):.3g})")
        if child.returncode == 0:
            break
        if child.returncode > 0 or first >= len(CASES):
            sys.exit(f"onednn_check: the check itself failed: "
                     f"{child.stderr.strip()[-500:]}")
        crash = signal.Signals(-child.returncode).name
        wrong.append(f"{CASES[first][0]} (crashes: {crash})")
        first += 1
    if wrong:
        print("convolution input gradients are wrong here: " + ", ".join(wrong))
        sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--from":
        run_cases(int(sys.argv[2]))
    else:
        main()
