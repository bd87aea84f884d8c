#!/usr/bin/python3
"""CPU throughput of memopt::compress / memopt::decompress next to a plain copy.

Throughput is GB/s of the logical (uncompressed) tensor bytes, so every row is
directly comparable with copying those bytes (as uint8, a plain memcpy):
`dst.copy_(src)` into a buffer allocated once ("copy_") and `src.clone()`
("clone", which allocates like compress and decompress do). Each time is the best of --repeat runs in this
one process: on a shared machine the minimum is the least disturbed estimate.

    MEMOPT_RUNTIME_LIB=build/lib/libmemopt_runtime.so \\
        /usr/bin/python3 bench/compress_throughput.py [--numel N] [--threads T]
"""
import argparse
import os
import pathlib
import platform
import time

import torch

KINDS = ["bit", "bool", "uint8", "sparse"]
DTYPES = {"float32": torch.float32, "float16": torch.float16,
          "bfloat16": torch.bfloat16}


def load_runtime():
    repo = pathlib.Path(__file__).resolve().parents[1]
    path = os.environ.get("MEMOPT_RUNTIME_LIB",
                          str(repo / "build" / "lib" / "libmemopt_runtime.so"))
    torch.ops.load_library(path)
    return torch.ops.memopt


def best_seconds(fn, repeat):
    fn()  # warm up: first-touch page faults, lazy initialisation
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--numel", type=int, default=1 << 24)
    parser.add_argument("--density", type=float, default=0.2,
                        help="fraction of ones (spike rate)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    args = parser.parse_args()

    ops = load_runtime()
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    spikes = torch.rand(args.numel, generator=gen) < args.density

    print(f"torch {torch.__version__}, {platform.machine()}, "
          f"{torch.get_num_threads()} threads, numel {args.numel}, "
          f"density {args.density}, best of {args.repeat}\n")
    print("| dtype | op | compress GB/s | vs copy_ | decompress GB/s "
          "| vs copy_ | vs clone | payload / input |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.dtypes.split(","):
        x = spikes.to(DTYPES[name])
        nbytes = x.numel() * x.element_size()
        gbps = lambda seconds: nbytes / seconds / 1e9
        # Byte views make both baselines a plain memcpy whatever the dtype.
        raw = x.view(torch.uint8)
        dst = torch.empty_like(raw)
        copy = gbps(best_seconds(lambda: dst.copy_(raw), args.repeat))
        clone = gbps(best_seconds(lambda: raw.clone(), args.repeat))
        print(f"| {name} | copy_ | {copy:.2f} | 1.00 | | | | |")
        print(f"| {name} | clone | {clone:.2f} | {clone / copy:.2f} | | | | |")
        for kind in KINDS:
            packed = ops.compress(x, kind)
            restored = ops.decompress(packed, kind, list(x.shape), x.dtype)
            assert torch.equal(restored, x), kind
            enc = gbps(best_seconds(lambda: ops.compress(x, kind),
                                      args.repeat))
            dec = gbps(best_seconds(
                lambda: ops.decompress(packed, kind, list(x.shape), x.dtype),
                args.repeat))
            ratio = packed.numel() * packed.element_size() / nbytes
            print(f"| {name} | {kind} | {enc:.2f} | {enc / copy:.2f} | "
                  f"{dec:.2f} | {dec / copy:.2f} | {dec / clone:.2f} | "
                  f"{ratio:.4f} |")


if __name__ == "__main__":
    main()
