"""memopt::batch_norm_by_channel: at::batch_norm whose training-mode backward
runs ATen's kernel a few channels at a time on the CPU. Outputs, running
statistics and gradients must equal eager PyTorch's bit for bit; the backward
must not allocate the input-sized buffer ATen's CPU kernel does."""
import pytest
import torch
import torch.nn.functional as F

torch._C._set_graph_executor_optimize(False)


def same(a, b):
    """Bitwise equality (NaN payloads and the sign of zero included)."""
    if a is None or b is None:
        return a is None and b is None
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    view = {torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


def run_both(runtime, shape, dtype=torch.float32, affine=True, stats=True,
             input_grad=True, memory_format=torch.contiguous_format,
             training=True, seed=0):
    """One forward and backward through F.batch_norm and through the runtime
    op from the same values; returns both (output, running stats, grads)."""
    gen = torch.Generator().manual_seed(seed)
    channels = shape[1]
    x = torch.randn(shape, generator=gen, dtype=dtype) * 3 + 1
    x = x.to(memory_format=memory_format) if len(shape) == 4 else x
    grad = torch.randn(shape, generator=gen, dtype=dtype)
    weight = torch.randn(channels, generator=gen, dtype=dtype)
    bias = torch.randn(channels, generator=gen, dtype=dtype)
    results = []
    for use_runtime in (False, True):
        xi = x.clone().requires_grad_(input_grad)
        w = weight.clone().requires_grad_() if affine else None
        b = bias.clone().requires_grad_() if affine else None
        mean = torch.zeros(channels, dtype=dtype) if stats else None
        var = torch.ones(channels, dtype=dtype) if stats else None
        if use_runtime:
            y = runtime.batch_norm_by_channel(xi, w, b, mean, var, training,
                                              0.1, 1e-5, True)
        else:
            y = F.batch_norm(xi, mean, var, w, b, training, 0.1, 1e-5)
        if y.requires_grad:
            y.backward(grad)
        grads = [t.grad if t is not None else None for t in (xi, w, b)]
        results.append((y.detach(), mean, var, grads, y.grad_fn))
    return results


@pytest.mark.parametrize("shape", [
    (4, 6, 160, 160),   # 400 KiB per channel: chunks of 2 channels
    (2, 5, 300, 301),   # 706 KiB per channel: one channel at a time
    (3, 7, 50000),      # (N, C, L)
    (64, 16),           # small: one whole call, as eager
    (2, 3, 5, 7),
])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matches_eager(runtime, shape, dtype):
    (ya, ma, va, ga, _), (yb, mb, vb, gb, fn) = run_both(runtime, shape, dtype)
    assert fn is not None and "BatchNormByChannel" in fn.name()
    assert same(ya, yb) and same(ma, mb) and same(va, vb)
    for a, b in zip(ga, gb):
        assert same(a, b)


@pytest.mark.parametrize("options", [
    dict(affine=False),
    dict(stats=False),
    dict(input_grad=False),
    dict(memory_format=torch.channels_last),
])
def test_variants_match_eager(runtime, options):
    (ya, ma, va, ga, _), (yb, mb, vb, gb, _) = run_both(
        runtime, (3, 5, 170, 180), **options)
    assert same(ya, yb) and same(ma, mb) and same(va, vb)
    for a, b in zip(ga, gb):
        assert same(a, b)


def test_eval_and_no_grad_call_aten(runtime):
    (ya, ma, va, _, _), (yb, mb, vb, _, fn) = run_both(
        runtime, (2, 4, 9, 9), training=False)
    assert same(ya, yb) and same(ma, mb) and same(va, vb)
    assert fn is None or "BatchNormByChannel" not in fn.name()
    x = torch.randn(2, 4, 9, 9)
    mean, var = torch.zeros(4), torch.ones(4)
    with torch.no_grad():
        y = runtime.batch_norm_by_channel(x, None, None, mean, var, True,
                                          0.1, 1e-5, True)
    assert y.grad_fn is None
    assert same(y, F.batch_norm(x, torch.zeros(4), torch.ones(4), None,
                                None, True, 0.1, 1e-5))


def test_refuses_input_without_channels(runtime):
    with pytest.raises(RuntimeError, match="channel dimension"):
        runtime.batch_norm_by_channel(torch.randn(5), None, None, None, None,
                                      True, 0.1, 1e-5, True)


def test_refuses_double_backward(runtime):
    x = torch.randn(2, 3, 4, 4, requires_grad=True)
    y = runtime.batch_norm_by_channel(x, None, None, None, None, True, 0.1,
                                      1e-5, True)
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)


def backward_peak_above_live(runtime, op, x, grad):
    """Bytes the backward allocates above what is live when it starts."""
    y = op(x)
    runtime.reset_peak_memory_stats()
    live = runtime.memory_stats()[0]
    y.backward(grad)
    return runtime.memory_stats()[1] - live


def test_backward_keeps_no_input_sized_buffer(runtime):
    """A 16x32x112x112 float input (24.5 MiB): eager's CPU backward peaks at
    the input gradient plus a buffer of the same size; by channel, at the
    input gradient plus a few 784 KiB chunks."""
    runtime.enable_memory_stats()
    shape = (16, 32, 112, 112)
    x = torch.randn(shape).requires_grad_()
    grad = torch.randn(shape)
    weight = torch.ones(32, requires_grad=True)
    size = x.numel() * 4

    def eager(t):
        return F.batch_norm(t, None, None, weight, None, True)

    def by_channel(t):
        return runtime.batch_norm_by_channel(t, weight, None, None, None,
                                             True, 0.1, 1e-5, True)

    eager_peak = backward_peak_above_live(runtime, eager, x, grad)
    x.grad = None
    lean_peak = backward_peak_above_live(runtime, by_channel, x, grad)
    assert eager_peak >= 2 * size
    assert lean_peak <= size + 5 * (16 * 112 * 112 * 4)
