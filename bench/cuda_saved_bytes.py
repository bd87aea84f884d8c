#!/usr/bin/env python3
"""What autograd keeps and what kernels borrow, per operator, on the CPU and
on CUDA: the measurements the CUDA side of the memory model (issue 23, item
1) is built from.

For each operator at a GPU-sized shape: the bytes of the tensors autograd
saves for backward (saved_tensors_hooks; distinct storages, inputs and
parameters excluded, as the memory model counts them), and on CUDA the
forward and backward transient peaks above what is live around them
(workspaces, temporaries). CPU bytes come from the runtime's counting
allocator. Writes OUT/cuda-saved.md and .json.

    MEMOPT_RUNTIME_LIB=... python3 bench/cuda_saved_bytes.py OUT
"""
import json
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))
from memopt import measure  # noqa: E402


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class MHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(256, 8, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


# name -> (module or function, input shapes)
CASES = {
    "conv2d 3x3": (lambda: nn.Conv2d(64, 64, 3, padding=1), [(16, 64, 56, 56)]),
    "conv2d 1x1 s2": (lambda: nn.Conv2d(64, 128, 1, stride=2),
                      [(16, 64, 56, 56)]),
    "batch_norm2d": (lambda: nn.BatchNorm2d(64), [(16, 64, 56, 56)]),
    "relu": (lambda: nn.ReLU(), [(16, 64, 56, 56)]),
    "max_pool2d": (lambda: nn.MaxPool2d(2), [(16, 64, 56, 56)]),
    "linear": (lambda: nn.Linear(1024, 4096), [(2048, 1024)]),
    "gelu": (lambda: nn.GELU(), [(2048, 4096)]),
    "layer_norm": (lambda: nn.LayerNorm(1024), [(2048, 1024)]),
    "dropout 0.1": (lambda: nn.Dropout(0.1), [(2048, 4096)]),
    "softmax": (lambda: nn.Softmax(-1), [(64, 512, 512)]),
    "sdpa causal": (lambda: sdpa, [(8, 8, 512, 64)] * 3),
    "multihead_attention": (lambda: MHA(), [(8, 512, 256)]),
}


def saved_bytes(fn, inputs, params):
    """Bytes of the distinct storages autograd saves that are not an input
    or a parameter."""
    excluded = {t.untyped_storage().data_ptr() for t in list(inputs) + params}
    seen = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in excluded:
            seen[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn(*inputs)
    return sum(seen.values()), out


def run_case(name, device, stats):
    make, shapes = CASES[name]
    torch.manual_seed(0)
    fn = make()
    params = []
    if isinstance(fn, nn.Module):
        fn = fn.to(device).train()
        params = list(fn.parameters())
    inputs = [torch.randn(s, device=device, requires_grad=True)
              for s in shapes]
    saved, out = saved_bytes(fn, inputs, params)
    del out
    row = {"saved": saved}
    if device == "cuda":
        torch.cuda.synchronize()
        live = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out = fn(*inputs)
        torch.cuda.synchronize()
        after = torch.cuda.memory_allocated()
        row["forward_transient"] = torch.cuda.max_memory_allocated() - after
        row["kept_after_forward"] = after - live
        grad = torch.ones_like(out)
        torch.cuda.synchronize()
        before_backward = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        out.backward(grad)
        torch.cuda.synchronize()
        row["backward_peak_above_start"] = \
            torch.cuda.max_memory_allocated() - before_backward
    else:
        live = stats.memory_stats()[0]
        out = fn(*inputs)
        row["kept_after_forward"] = stats.memory_stats()[0] - live
    return row


def main(out_dir: pathlib.Path) -> int:
    out_dir.mkdir(parents=True, exist_ok=True)
    stats = measure.load_runtime()
    torch.backends.cudnn.benchmark = False
    rows = {}
    for name in CASES:
        rows[name] = {}
        for device in ["cpu", "cuda"]:
            try:
                rows[name][device] = run_case(name, device, stats)
            except Exception as e:  # one case's failure is a row
                rows[name][device] = {"error": str(e).splitlines()[0][:200]}
    lines = [f"Saved and transient bytes per operator, PyTorch "
             f"{torch.__version__}, {torch.cuda.get_device_name()}.", "",
             "| op | input | saved CPU | saved CUDA | kept after forward "
             "CPU / CUDA | CUDA forward transient | CUDA backward peak |",
             "|---|---|---|---|---|---|---|"]
    for name, r in rows.items():
        c, g = r["cpu"], r["cuda"]
        if "error" in c or "error" in g:
            lines.append(f"| {name} | | {c.get('error', '')} | "
                         f"{g.get('error', '')} | | | |")
            continue
        f = measure.format_bytes
        lines.append(
            f"| {name} | {CASES[name][1][0]} | {f(c['saved'])} | "
            f"{f(g['saved'])} | {f(c['kept_after_forward'])} / "
            f"{f(g['kept_after_forward'])} | {f(g['forward_transient'])} | "
            f"{f(g['backward_peak_above_start'])} |")
    (out_dir / "cuda-saved.json").write_text(json.dumps(rows, indent=1))
    (out_dir / "cuda-saved.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1])))
