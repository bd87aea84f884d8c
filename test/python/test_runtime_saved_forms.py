"""memopt::relu_masked(_), memopt::dropout_masked and
memopt::max_pool2d_lean: ATen's ReLU, dropout and max-pool that keep a bit
per value (ReLU, dropout) or only the argmax indices (max-pool) for
backward. Outputs and gradients must equal eager PyTorch's
bit for bit, NaN and signed zeros included; the tensors eager keeps are
freed after forward."""
import pytest
import torch
import torch.nn.functional as F

torch._C._set_graph_executor_optimize(False)

SHAPES = [(2, 3, 17, 19), (5, 7), (1000003,), (3, 1, 1)]


def special_values(x):
    """Puts 0, -0, NaN and a tiny negative into the first entries."""
    flat = x.view(-1)
    values = torch.tensor([0.0, -0.0, float("nan"), -1e-30], dtype=x.dtype)
    n = min(len(values), flat.numel())
    flat[:n] = values[:n]
    return x


def same(a, b):
    """Bitwise equality (NaN payloads and the sign of zero included)."""
    assert a.dtype == b.dtype and a.shape == b.shape and a.stride() == b.stride()
    view = {torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("inplace", [False, True])
def test_relu_masked_matches_eager(runtime, shape, dtype, inplace):
    gen = torch.Generator().manual_seed(len(shape))
    x = special_values(torch.randn(shape, generator=gen, dtype=dtype))
    grad = torch.randn(shape, generator=gen, dtype=dtype)
    grad.view(-1)[-1] = float("nan")
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    # Through an op first: an in-place op may not write to a leaf.
    ya, yb = a * 1.0, b * 1.0
    ya = torch.relu_(ya) if inplace else torch.relu(ya)
    yb = runtime.relu_masked_(yb) if inplace else runtime.relu_masked(yb)
    ya.backward(grad)
    yb.backward(grad)
    assert same(ya.detach(), yb.detach())
    assert same(a.grad, b.grad)


def test_relu_masked_channels_last(runtime):
    x = torch.randn(4, 8, 5, 6).to(memory_format=torch.channels_last)
    grad = torch.randn(4, 8, 5, 6).to(memory_format=torch.channels_last)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = torch.relu(a), runtime.relu_masked(b)
    ya.backward(grad)
    yb.backward(grad)
    assert same(ya.detach(), yb.detach()) and same(a.grad, b.grad)


@pytest.mark.parametrize("args", [
    ((3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 2), (), (0, 0), (1, 1), True),
    ((3, 3), (1, 1), (1, 1), (2, 2), False),
    ((3, 2), (2, 3), (1, 0), (1, 1), True),
])
@pytest.mark.parametrize("shape", [(4, 8, 33, 31), (8, 21, 20)])
def test_max_pool2d_lean_matches_eager(runtime, args, shape):
    kernel, stride, padding, dilation, ceil = args
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(shape, generator=gen)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = F.max_pool2d(a * 1, kernel, stride or None, padding, dilation, ceil)
    yb = runtime.max_pool2d_lean(b * 1, list(kernel), list(stride),
                                 list(padding), list(dilation), ceil)
    grad = torch.randn(ya.shape, generator=gen)
    ya.backward(grad)
    yb.backward(grad)
    assert same(ya.detach(), yb.detach()) and same(a.grad, b.grad)


def test_max_pool2d_lean_channels_last_keeps_its_input(runtime):
    """A channels-last input falls back to ATen's max-pool (same result)."""
    x = torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)
    a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya = F.max_pool2d(a, 2)
    yb = runtime.max_pool2d_lean(b, [2, 2], [], [0, 0], [1, 1], False)
    ya.sum().backward()
    yb.sum().backward()
    assert same(ya.detach(), yb.detach()) and same(a.grad, b.grad)


def test_without_grad_nothing_is_recorded(runtime):
    x = torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        y = runtime.relu_masked(x)
        z = runtime.max_pool2d_lean(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    assert y.grad_fn is None and z.grad_fn is None
    assert torch.equal(y, torch.relu(x))
    assert torch.equal(z, F.max_pool2d(x, 2))


def test_in_place_relu_writes_its_input(runtime):
    x = torch.randn(3, 4, requires_grad=True)
    y = x * 2
    out = runtime.relu_masked_(y)
    assert out.data_ptr() == y.data_ptr()
    assert torch.equal(y, torch.relu(x.detach() * 2))


def held_after_forward(runtime, step):
    step().sum().backward()  # warm-up
    live = runtime.memory_stats()[0]
    out = step()
    held = runtime.memory_stats()[0] - live
    out.sum().backward()
    return held


def test_memory_a_stem_keeps(runtime):
    """BN -> ReLU -> max-pool on 8x16x32x32 float32 (512 KiB): eager keeps
    the ReLU's result (for ReLU and max-pool) and the indices (128 KiB of
    int64); with the forms, 1/32 of the result and the indices."""
    runtime.enable_memory_stats()
    torch.manual_seed(0)
    x = torch.randn(8, 16, 32, 32)
    weight = torch.nn.Parameter(torch.ones(16))

    def step(relu, pool):
        def run():
            y = F.batch_norm(x, None, None, weight, None, True)
            return pool(relu(y))
        return run

    eager = held_after_forward(runtime, step(
        torch.relu_, lambda y: F.max_pool2d(y, 2)))
    lean = held_after_forward(runtime, step(
        runtime.relu_masked_,
        lambda y: runtime.max_pool2d_lean(y, [2, 2], [], [0, 0], [1, 1],
                                          False)))
    result, indices, output = 8 * 16 * 32 * 32 * 4, 8 * 16 * 16 * 16 * 8, \
        8 * 16 * 16 * 16 * 4
    # Both keep batch-norm's input (x, not counted: allocated before) and
    # its 16-channel statistics, the indices and the output.
    assert eager >= result + indices + output
    assert lean <= result // 32 + indices + output + 1024


# --- memopt::dropout_masked -------------------------------------------------

def dropout_both(runtime, x, p, grad, train=True, seed=5):
    """Eager F.dropout and memopt::dropout_masked from one generator state:
    outputs, input gradients and the next random draw of each."""
    results = []
    for fn in (lambda t: F.dropout(t, p, train),
               lambda t: runtime.dropout_masked(t, p, train)):
        torch.manual_seed(seed)
        a = x.clone().requires_grad_()
        y = fn(a * 1.0)
        after = torch.rand(4)
        y.backward(grad)
        results.append((y.detach(), a.grad, after))
    return results


@pytest.mark.parametrize("shape", SHAPES + [(32, 65, 128)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.1, 0.5, 1 / 3])
def test_dropout_masked_matches_eager(runtime, shape, dtype, p):
    gen = torch.Generator().manual_seed(len(shape))
    x = special_values(torch.randn(shape, generator=gen, dtype=dtype))
    grad = special_values(torch.randn(shape, generator=gen, dtype=dtype))
    (ya, ga, ra), (yb, gb, rb) = dropout_both(runtime, x, p, grad)
    assert same(ya, yb) and same(ga, gb) and torch.equal(ra, rb)


def test_dropout_masked_bfloat16(runtime):
    """Packed by the compressor's kernel, rebuilt a chunk at a time (ATen's
    CPU bernoulli has no float16 kernel in PyTorch 1.13)."""
    dtype = torch.bfloat16
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(300001, generator=gen).to(dtype)
    grad = torch.randn(300001, generator=gen).to(dtype)
    (ya, ga, ra), (yb, gb, rb) = dropout_both(runtime, x, 0.3, grad)
    bits = lambda t: t.view(torch.int16)
    assert torch.equal(bits(ya), bits(yb)) and torch.equal(bits(ga), bits(gb))
    assert torch.equal(ra, rb)


@pytest.mark.parametrize("p,train", [(0.0, True), (1.0, True), (0.5, False)])
def test_dropout_masked_edge_cases_run_aten(runtime, p, train):
    x, grad = torch.randn(6, 7), torch.randn(6, 7)
    (ya, ga, ra), (yb, gb, rb) = dropout_both(runtime, x, p, grad, train)
    assert same(ya, yb) and same(ga, gb) and torch.equal(ra, rb)


@pytest.mark.parametrize("input_t", [False, True])
@pytest.mark.parametrize("grad_t", [False, True])
def test_dropout_masked_strided_input_and_gradient(runtime, input_t, grad_t):
    """A transposed input (attention's output before its dropout) runs
    at::dropout (PyTorch versions lay out its noise differently); a strided
    gradient is multiplied by the whole rebuilt noise. Outputs, gradients
    and draws as eager, strides included."""
    x = torch.randn(40, 30)
    x = x.t().contiguous().t() if input_t else x
    grad = torch.randn(30, 40).t() if grad_t else torch.randn(40, 30)
    (ya, ga, ra), (yb, gb, rb) = dropout_both(runtime, x, 0.2, grad)
    assert same(ya, yb) and same(ga, gb) and torch.equal(ra, rb)


def test_dropout_masked_rejects_bad_p_as_aten(runtime):
    with pytest.raises(RuntimeError, match="dropout probability"):
        runtime.dropout_masked(torch.randn(3, requires_grad=True), 1.5, True)


def test_dropout_masked_without_grad_draws_as_eager(runtime):
    x = torch.randn(100)
    torch.manual_seed(2)
    with torch.no_grad():
        y = runtime.dropout_masked(x, 0.3, True)
    torch.manual_seed(2)
    assert y.grad_fn is None and torch.equal(y, F.dropout(x, 0.3, True))


def test_dropout_masked_scripted_calls_stay_apart(runtime):
    """TorchScript's common-subexpression pass merges two calls of a pure op
    on one input (relu_masked); two dropout calls draw twice, so the op is
    registered with conservative aliasing and both stay."""
    @torch.jit.script
    def twice(x):
        y = x * 2
        a = torch.ops.memopt.dropout_masked(y, 0.5, True)
        b = torch.ops.memopt.dropout_masked(y, 0.5, True)
        return a + b

    @torch.jit.script
    def relu_twice(x):
        y = x * 2
        return torch.ops.memopt.relu_masked(y) + torch.ops.memopt.relu_masked(y)

    for fn, kept in ((twice, 2), (relu_twice, 1)):
        graph = fn.graph.copy()
        torch._C._jit_pass_cse(graph)
        assert str(graph).count("memopt::") == kept, graph
    a = twice(torch.ones(1000, requires_grad=True))
    assert len(a.unique()) == 3  # 0, 2 and 4: the two masks differ


def test_memory_dropout_keeps_a_bit_per_value(runtime):
    """Eager keeps the float noise (4 bytes a value); the masked op 1 bit."""
    runtime.enable_memory_stats()
    x = torch.randn(64, 128, 128, requires_grad=True)
    eager = held_after_forward(runtime, lambda: F.dropout(x * 1, 0.1))
    lean = held_after_forward(
        runtime, lambda: runtime.dropout_masked(x * 1, 0.1, True))
    numel = x.numel()
    # Both hold the output; nothing keeps x * 1 (the noise needs no grad).
    assert eager >= 2 * numel * 4
    assert lean <= numel * 4 + numel // 8 + 4096
