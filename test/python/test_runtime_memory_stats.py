"""The counting CPU allocator (memopt::memory_stats) and what it measures:
a chain of checkpointed conv blocks trains with >= 3x lower peak memory."""
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import torch.nn as nn

from conftest import runtime_library_path

torch._C._set_graph_executor_optimize(False)


@pytest.fixture
def stats(runtime):
    runtime.enable_memory_stats()
    assert runtime.memory_stats_enabled()
    return runtime


def test_counts_requested_bytes(stats):
    before, _ = stats.memory_stats()
    t = torch.empty(1 << 20, dtype=torch.uint8)
    assert stats.memory_stats()[0] - before == 1 << 20
    u = torch.empty(1000, dtype=torch.float64)
    assert stats.memory_stats()[0] - before == (1 << 20) + 8000
    del t, u
    assert stats.memory_stats()[0] == before


def test_peak_and_reset(stats):
    stats.reset_peak_memory_stats()
    base, peak = stats.memory_stats()
    assert peak == base
    t = torch.empty(3 << 20, dtype=torch.uint8)
    del t
    current, peak = stats.memory_stats()
    assert current == base and peak - base == 3 << 20
    stats.reset_peak_memory_stats()
    assert stats.memory_stats() == [base, base]


def test_thread_safe(stats):
    before = stats.memory_stats()[0]
    torch.set_num_threads(1)

    def churn():
        for i in range(2000):
            a = torch.empty(100 + i % 7)
            b = torch.empty(3, 5)
            del a, b

    threads = [threading.Thread(target=churn) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stats.memory_stats()[0] == before


def test_tensors_from_before_enabling_are_not_counted():
    # A fresh process: the allocator must not be installed yet.
    script = textwrap.dedent(f"""
        import torch
        torch.ops.load_library({str(runtime_library_path())!r})
        m = torch.ops.memopt
        old = torch.empty(1 << 20, dtype=torch.uint8)
        m.enable_memory_stats()
        assert m.memory_stats() == [0, 0], m.memory_stats()
        new = torch.empty(4096, dtype=torch.uint8)
        assert m.memory_stats() == [4096, 4096], m.memory_stats()
        del old  # freed through the old allocator: no change
        assert m.memory_stats() == [4096, 4096], m.memory_stats()
        del new
        assert m.memory_stats() == [0, 4096], m.memory_stats()
        # oneDNN allocates scratch memory through raw_allocate.
        x = torch.randn(2, 3, 16, 16)
        torch.nn.functional.conv2d(x, torch.randn(8, 3, 3, 3)).sum()
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


# --- the 8-block peak ratio ---------------------------------------------------

def conv_block(x, w1, b1, g1, be1, m1, v1, n1, w2, b2, g2, be2, m2, v2, n2,
               momentum: float, eps: float):
    n1.add_(1)
    y = torch.conv2d(x, w1, b1, [1, 1], [1, 1], [1, 1], 1)
    y = torch.relu(torch.batch_norm(y, g1, be1, m1, v1, True, momentum, eps,
                                    True))
    n2.add_(1)
    y = torch.conv2d(y, w2, b2, [1, 1], [1, 1], [1, 1], 1)
    return torch.relu(torch.batch_norm(y, g2, be2, m2, v2, True, momentum, eps,
                                       True))


CONV_BLOCK = str(torch.jit.script(conv_block).graph)


class Block(nn.Module):
    """conv-bn-relu-conv-bn-relu with a 4x wider middle (an inverted
    bottleneck): most of what eager saves is internal to the block."""

    def __init__(self, channels, expand):
        super().__init__()
        self.c1 = nn.Conv2d(channels, channels * expand, 3, padding=1)
        self.b1 = nn.BatchNorm2d(channels * expand)
        self.c2 = nn.Conv2d(channels * expand, channels, 3, padding=1)
        self.b2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)))

    def tensors(self):
        return [self.c1.weight, self.c1.bias, self.b1.weight, self.b1.bias,
                self.b1.running_mean, self.b1.running_var,
                self.b1.num_batches_tracked, self.c2.weight, self.c2.bias,
                self.b2.weight, self.b2.bias, self.b2.running_mean,
                self.b2.running_var, self.b2.num_batches_tracked]


def training_peak(runtime, checkpointed):
    """Peak bytes above what is live before the step, in steady state
    (second step: .grad buffers exist and are zeroed, not freed)."""
    torch.manual_seed(0)
    blocks = [Block(16, 4) for _ in range(8)]
    x = torch.randn(8, 16, 32, 32)
    for step in range(2):
        for b in blocks:
            for p in b.parameters():
                if p.grad is not None:
                    p.grad.zero_()
        live = runtime.memory_stats()[0]
        runtime.reset_peak_memory_stats()
        h = x
        for i, b in enumerate(blocks):
            h = runtime.checkpoint(CONV_BLOCK, [h] + b.tensors(), [0.1, 1e-5],
                                   [], f"b{i}")[0] if checkpointed else b(h)
        h.sum().backward()
        del h
        current, peak = runtime.memory_stats()
    # Steady state: the step returns every byte it allocated.
    assert current == live, (current, live)
    return peak - live


def test_eight_checkpointed_conv_blocks_peak_3x_lower(stats):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # per-thread scratch would blur the comparison
    try:
        plain = training_peak(stats, checkpointed=False)
        ckpt = training_peak(stats, checkpointed=True)
    finally:
        torch.set_num_threads(threads)
    ratio = plain / ckpt
    print(f"8 conv blocks: peak {plain} B plain, {ckpt} B checkpointed, "
          f"ratio {ratio:.2f}")
    assert ratio >= 3.0, (plain, ckpt, ratio)
