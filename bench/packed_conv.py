#!/usr/bin/python3
"""Step time and memory of a spiking conv stack: eager vs memopt::conv_packed.

The stack is --layers 3x3 convolutions (C -> C channels, padding 1, no bias),
each followed by a Heaviside spike with a straight-through gradient that
saves nothing, so the conv inputs are the only activations autograd keeps.
Eager keeps them as float32; conv_packed keeps them packed ("bit": 1/32,
"bool": 1/4) and unpacks each one in backward. Reported per mode: forward,
backward and step time (best and median of --repeat steps in this one
process, the modes taking turns), bytes held between forward and backward and the step's peak above
the live bytes (counting allocator, see docs/runtime.md), and the step time
relative to eager. A pack-only line times memopt::compress of one layer input
(what conv_packed adds to forward, check included), an unpack line
memopt::decompress (what it adds to backward).

    MEMOPT_RUNTIME_LIB=build/lib/libmemopt_runtime.so \\
        /usr/bin/python3 bench/packed_conv.py [--batch N] [--channels C] \\
        [--size HW] [--layers L] [--threads T] [--repeat R]
"""
import argparse
import os
import pathlib
import platform
import statistics
import time

import torch
import torch.nn.functional as F


def load_runtime():
    repo = pathlib.Path(__file__).resolve().parents[1]
    path = os.environ.get("MEMOPT_RUNTIME_LIB",
                          str(repo / "build" / "lib" / "libmemopt_runtime.so"))
    torch.ops.load_library(path)
    return torch.ops.memopt


class Spike(torch.autograd.Function):
    @staticmethod
    def forward(ctx, v):
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


def forward(ops, raw, weights, mode):
    s = Spike.apply(raw)
    for w in weights:
        if mode == "eager":
            v = F.conv2d(s, w, None, 1, 1)
        else:
            v = ops.conv_packed(s, w, None, [1, 1], [1, 1], [1, 1], 1, mode)
        s = Spike.apply(v)
    return s.sum()


def time_steps(ops, raw, weights, modes, repeat):
    """{mode: (forward, backward, step) times}; the modes take turns step by
    step so that a change of machine load affects them alike."""
    times = {mode: ([], [], []) for mode in modes}
    for i in range(repeat + 1):  # the first round warms up
        for mode in modes:
            for w in weights:
                w.grad = None if i == 0 else w.grad.zero_()
            t0 = time.perf_counter()
            loss = forward(ops, raw, weights, mode)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            del loss
            if i:
                fwd, bwd, steps = times[mode]
                fwd.append(t1 - t0)
                bwd.append(t2 - t1)
                steps.append(t2 - t0)
    return times


def memory(ops, raw, weights, mode):
    forward(ops, raw, weights, mode).backward()
    for w in weights:
        w.grad.zero_()
    live = ops.memory_stats()[0]
    ops.reset_peak_memory_stats()
    loss = forward(ops, raw, weights, mode)
    held = ops.memory_stats()[0] - live
    loss.backward()
    return held, ops.memory_stats()[1] - live


def best_seconds(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--channels", type=int, default=32)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--modes", default="eager,bit,bool")
    args = parser.parse_args()

    ops = load_runtime()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shape = (args.batch, args.channels, args.size, args.size)
    raw = torch.randn(shape)
    scale = (2.0 / (9 * args.channels)) ** 0.5  # Kaiming: spikes stay ~50%
    weights = [torch.nn.Parameter(
        torch.randn(args.channels, args.channels, 3, 3) * scale)
        for _ in range(args.layers)]
    input_bytes = raw.numel() * raw.element_size()
    print(f"torch {torch.__version__}, {platform.machine()}, "
          f"{torch.get_num_threads()} threads; {args.layers} x conv3x3 "
          f"{args.channels}->{args.channels} on {list(shape)} float32 spikes "
          f"({input_bytes} B per layer input); best / median of "
          f"{args.repeat} steps\n")

    rows = time_steps(ops, raw, weights, args.modes.split(","), args.repeat)
    # Memory last: the counting allocator stays installed once enabled.
    ops.enable_memory_stats()
    mem = {mode: memory(ops, raw, weights, mode) for mode in rows}

    # "vs eager": best step / best eager step, and the median over rounds of
    # step / eager step of the same round (robust to slow load drifts).
    print("| mode | forward ms | backward ms | step ms (best / median) "
          "| vs eager (best / per-round median) | held after forward B "
          "| step peak B |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    eager = rows.get("eager")
    for mode, (fwd, bwd, steps) in rows.items():
        rel = ""
        if eager:
            rounds = statistics.median(
                s / e for s, e in zip(steps, eager[2]))
            rel = f"{min(steps) / min(eager[2]):.3f} / {rounds:.3f}"
        print(f"| {mode} | {min(fwd) * 1e3:.1f} | {min(bwd) * 1e3:.1f} | "
              f"{min(steps) * 1e3:.1f} / {statistics.median(steps) * 1e3:.1f} "
              f"| {rel} | {mem[mode][0]:,} | {mem[mode][1]:,} |")

    spikes = (raw > 0).float()
    print("\n| kind | pack (compress, checked) ms | unpack (decompress) ms |")
    print("|---|---:|---:|")
    for kind in ("bit", "bool"):
        packed = ops.compress(spikes, kind, True)
        pack = best_seconds(lambda: ops.compress(spikes, kind, True),
                            args.repeat)
        unpack = best_seconds(
            lambda: ops.decompress(packed, kind, list(shape), spikes.dtype),
            args.repeat)
        print(f"| {kind} | {pack * 1e3:.2f} | {unpack * 1e3:.2f} |")


if __name__ == "__main__":
    main()
