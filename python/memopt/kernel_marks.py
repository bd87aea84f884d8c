"""Convolution kernels' memory, measured on the device that will train.

Which buffers a GPU convolution allocates depends on the algorithm cuDNN
picks there, so the compiler cannot price them from the CPU machine, and the
GPU machine has no compiler. `memopt-compile --device cuda --kernel-requests
R` lists the convolution calls a model makes (JSON lines); this module, run
where the GPU is (PyTorch only), runs each call the way training does and
writes a marks file that `memopt-compile --kernel-marks M` reads back:

    python3 bench/cuda_kernel_probe.py R [R2 ...] --out M [--deterministic]
    python3 -m memopt.kernel_marks R ... (the same)

A mark is the most bytes allocated above those live before the kernel
(`torch.cuda.max_memory_allocated`): the forward with its result, and each
backward (torch.autograd.grad for the gradients the model asks of it, by
gradient mask: bit 0 the input, bit 1 the weight and bias) with the
gradients it returns. The line format is the CPU probe's
(lib/Probe/ProbeCache.h), under a context naming the device, PyTorch, cuDNN
and the settings that pick the algorithms (cudnn.deterministic, benchmark),
which must be those training runs with.

`--device cpu` runs the same calls under memopt's counting CPU allocator
(the runtime library; CI's dry run, and a test that this module and the
compiler's own CPU probe agree on every call).

memopt.wrap, training on a GPU, does all of it itself (WrapMarks): the
process that compiles is the one with the GPU.
"""

import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import List, Optional

import torch

PROG = "memopt.kernel_marks"
DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "float16": torch.float16, "bfloat16": torch.bfloat16}


class CudaMeter:
    def live(self):
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    def reset(self):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def peak(self):
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()


class CpuMeter:
    """memopt's counting CPU allocator (what the compiler's probe reads)."""

    def __init__(self):
        from . import measure
        self.ops = measure.load_runtime(enable_stats=True)

    def live(self):
        return self.ops.memory_stats()[0]

    def reset(self):
        self.ops.reset_peak_memory_stats()

    def peak(self):
        return self.ops.memory_stats()[1]


def read_requests(paths):
    """Every request of the files, one per call key (masks merged)."""
    calls = {}
    for path in paths:
        for number, line in enumerate(pathlib.Path(path).read_text()
                                      .splitlines(), 1):
            if not line.strip():
                continue
            try:
                request = json.loads(line)
                key = request["key"]
            except (ValueError, KeyError, TypeError) as e:
                raise SystemExit(f"{PROG}: line {number} of {path} "
                                 f"is not a kernel request ({e})")
            if request.get("kind") != "convolution":
                raise SystemExit(f"{PROG}: line {number} of {path}:"
                                 f" unknown kind {request.get('kind')!r}")
            merged = calls.setdefault(key, dict(request, masks=[],
                                                forward=False))
            merged["forward"] |= bool(request.get("forward"))
            merged["masks"] = sorted(set(merged["masks"])
                                     | set(request.get("masks", [])))
    return calls


def make_call(request):
    """The ATen entry point TorchScript calls for the request's form."""
    form, spatial = request["form"], len(request["weight"]) - 2
    stride, padding = request["stride"], request["padding"]
    dilation, groups = request["dilation"], request["groups"]
    if form == "convolution":
        conv = {1: torch.conv1d, 2: torch.conv2d, 3: torch.conv3d}[spatial]
        pad = request["padding_mode"] or padding
        return lambda x, w, b: conv(x, w, b, stride, pad, dilation, groups)
    if form == "transposed":
        conv = {1: torch.conv_transpose1d, 2: torch.conv_transpose2d,
                3: torch.conv_transpose3d}[spatial]
        return lambda x, w, b: conv(x, w, b, stride, padding,
                                    request["output_padding"], groups,
                                    dilation)
    if form == "general":
        return lambda x, w, b: torch.convolution(
            x, w, b, stride, padding, dilation, request["transposed"],
            request["output_padding"], groups)
    raise SystemExit(f"{PROG}: unknown convolution form {form!r}")


def operands(request, device):
    options = dict(dtype=DTYPES[request["dtype"]], device=device)
    # Values do not pick kernels; ones keep every kernel on its usual path.
    x = torch.ones(request["input"], **options)
    if request["channels_last"]:
        x = x.contiguous(memory_format=torch.channels_last_3d
                         if x.dim() == 5 else torch.channels_last)
    w = torch.ones(request["weight"], **options)
    b = None
    if request["bias"]:
        transposed = request["transposed"] or request["form"] == "transposed"
        out = request["weight"][1] * request["groups"] if transposed \
            else request["weight"][0]
        b = torch.ones(out, **options)
    return x, w, b


def measure_peak(meter, body):
    before = meter.live()
    meter.reset()
    result = body()
    return meter.peak() - before, result


def measure_call(request, device, meter, warm):
    """[forward, backward by mask 0..3]: -1 where not asked for."""
    run = make_call(request)
    x, w, b = operands(request, device)
    marks = [-1, -1, -1, -1, -1]
    if request["forward"]:
        with torch.no_grad():
            if warm:
                run(x, w, b)
            marks[0], out = measure_peak(meter, lambda: run(x, w, b))
            del out
    for mask in request["masks"]:
        x.requires_grad_(bool(mask & 1))
        w.requires_grad_(bool(mask & 2))
        if b is not None:
            b.requires_grad_(bool(mask & 2))
        wrt = ([x] if mask & 1 else []) + \
            ([w] + ([b] if b is not None else []) if mask & 2 else [])

        def backward():
            out = run(x, w, b)
            grad = torch.ones_like(out)
            return out, grad
        if warm:
            out, grad = backward()
            torch.autograd.grad([out], wrt, [grad])
            del out, grad
        out, grad = backward()
        marks[1 + mask], grads = measure_peak(
            meter, lambda: torch.autograd.grad([out], wrt, [grad]))
        del out, grad, grads
    return marks


def deterministic() -> bool:
    """Whether this process asks cuDNN for deterministic algorithms (either
    switch does)."""
    return bool(torch.backends.cudnn.deterministic or
                torch.are_deterministic_algorithms_enabled())


def context(device: str, index: int = 0) -> str:
    """What picks the kernels, as the first field of a marks line."""
    if device == "cuda":
        words = ["cuda", f"torch={torch.__version__}",
                 f"cudnn={torch.backends.cudnn.version()}",
                 f"deterministic={int(deterministic())}",
                 f"benchmark={int(torch.backends.cudnn.benchmark)}",
                 f"device={torch.cuda.get_device_name(index)}"]
    else:
        words = ["cpu", f"torch={torch.__version__}",
                 f"threads={torch.get_num_threads()}", "(memopt.kernel_marks)"]
    return " ".join(words).replace("\t", " ")


def main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("requests", nargs="+", type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, required=True)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--cuda-device", type=int, default=0,
                        help="the GPU's index (default 0)")
    parser.add_argument("--deterministic", action="store_true",
                        help="cudnn.deterministic, as training that asks for "
                        "repeatable results (gpu-check's comparison) runs")
    parser.add_argument("--benchmark", action="store_true",
                        help="cudnn.benchmark, as training that sets it runs")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads of a --device cpu measurement "
                        "(they pick the CPU kernels; default 1)")
    args = parser.parse_args(argv)
    calls = read_requests(args.requests)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print(f"{PROG}: CUDA is not available", file=sys.stderr)
            return 2
        torch.backends.cudnn.deterministic = args.deterministic
        torch.backends.cudnn.benchmark = args.benchmark
        torch.cuda.set_device(args.cuda_device)
        device = torch.device("cuda", args.cuda_device)
        meter = CudaMeter()
    else:
        torch.set_num_threads(max(args.threads, 1))
        device = torch.device("cpu")
        meter = CpuMeter()
    name = context(args.device, args.cuda_device)
    lines, failed = [], 0
    for key, request in calls.items():
        try:
            # The first call of a shape may pick and cache an algorithm;
            # training's steps after the first are what the plan is for.
            marks = measure_call(request, device, meter,
                                 warm=args.device == "cuda")
        except (RuntimeError, ValueError) as e:
            failed += 1
            print(f"{PROG}: {request['op']} {key}: "
                  f"{str(e).splitlines()[0]}", file=sys.stderr)
            continue
        lines.append(f"{name}\t{key}\t" + " ".join(map(str, marks)))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(line + "\n" for line in lines))
    print(f"{PROG}: {len(lines)} calls measured, {failed} failed "
          f"-> {args.out}")
    return 1 if failed else 0


class WrapMarks:
    """memopt.wrap's marks for the GPU it trains on: kept in the cache
    folder (one file per GPU, PyTorch, cuDNN and cuDNN settings), passed to
    memopt-compile, and grown by measuring, in a fresh process on that GPU,
    the calls a compile asked for (this process's allocator peak stays
    the user's)."""

    def __init__(self, cache_root: pathlib.Path, index: int,
                 device: str = "cuda"):
        self.device, self.index = device, index
        self.threads = torch.get_num_threads()
        self.context = context(device, index)
        digest = hashlib.sha256(self.context.encode()).hexdigest()[:16]
        self.file = pathlib.Path(cache_root) / "kernel-marks" / f"{digest}.txt"

    def arguments(self, requests: Optional[pathlib.Path]) -> List[str]:
        args = ["--kernel-marks", str(self.file)] if self.file.exists() \
            else []
        return args + (["--kernel-requests", str(requests)]
                       if requests else [])

    def measure(self, requests: pathlib.Path, timeout: float = 600) -> int:
        """Measures the requested calls and adds their marks to the file;
        returns how many. Raises RuntimeError saying why it could not."""
        package = pathlib.Path(__file__).resolve().parents[1]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            filter(None, [str(package), os.environ.get("PYTHONPATH")])))
        with tempfile.TemporaryDirectory(prefix="memopt-marks-") as folder:
            out = pathlib.Path(folder) / "marks.txt"
            command = [sys.executable, "-m", "memopt.kernel_marks",
                       str(requests), "--out", str(out), "--device",
                       self.device, "--cuda-device", str(self.index)]
            if deterministic():
                command.append("--deterministic")
            if torch.backends.cudnn.benchmark:
                command.append("--benchmark")
            if self.device == "cpu":
                # The context names this process's thread count: the
                # measuring process runs with it (PyTorch 2.x starts with
                # one a core, 1.13 with one).
                command += ["--threads", str(self.threads)]
            try:
                result = subprocess.run(command, capture_output=True,
                                        text=True, timeout=timeout, env=env)
            except (OSError, subprocess.TimeoutExpired) as e:
                raise RuntimeError(f"cannot run {PROG}: {e}") from None
            if result.returncode != 0 or not out.exists():
                why = (result.stderr.strip().splitlines() or
                       [f"exit {result.returncode}"])[-1]
                raise RuntimeError(why)
            lines = out.read_text().splitlines()
        foreign = {line.split("\t", 1)[0] for line in lines} - {self.context}
        if foreign:
            raise RuntimeError(f"{PROG} measured under '{min(foreign)}', "
                               f"not '{self.context}'")
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file, "a") as marks:
            marks.write("".join(line + "\n" for line in lines))
        return len(lines)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
