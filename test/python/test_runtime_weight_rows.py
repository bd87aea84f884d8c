"""memopt::linear_weight_rows: aten::linear whose weight gradient, where
eager would add it whole into a `.grad` of +0 (zero_grad(set_to_none=False)),
is written straight into `.grad`. Outputs and every gradient must equal
eager's bit for bit, there and in each case where the op must hand the
whole gradient to autograd instead (no `.grad` yet, a `.grad` holding
values, hooks, a second use of the weight, autograd.grad); written into
`.grad`, the backward must not hold the weight-sized temporary. Bits equal
to eager's whatever BLAS LibTorch calls: the product is eager's own call
(blocks of rows, as this op once added, differ with OpenBLAS)."""
import pytest
import torch
import torch.nn.functional as F

torch._C._set_graph_executor_optimize(False)

# A weight of 1280 rows x 4096 floats (16 KiB a row, 20 MiB in all): over
# the threshold of four 4 MiB blocks of rows (WeightGradChunks.h).
ROWS, COLS = 1280, 4096


def same(a, b):
    """Bitwise equality (NaN payloads and the sign of zero included)."""
    if a is None or b is None:
        return a is None and b is None
    assert a.dtype == b.dtype and a.shape == b.shape
    view = {torch.float32: torch.int32, torch.float64: torch.int64}[a.dtype]
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


def make(shape, rows=ROWS, cols=COLS, bias=True, seed=0,
         dtype=torch.float32, binary=False):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, cols, generator=gen, dtype=dtype)
    if binary:
        x = (x > 0).to(dtype)
    w = torch.randn(rows, cols, generator=gen, dtype=dtype) / cols ** 0.5
    b = torch.randn(rows, generator=gen, dtype=dtype) if bias else None
    g = torch.randn(*shape, rows, generator=gen, dtype=dtype)
    return x, w, b, g


def train(runtime, x, w, b, g, saved_input="keep", steps=3,
          grads="zeroed", use_runtime=True):
    """`steps` backward passes into fresh leaves from the same values, `.grad`
    between them zeroed in place (`grads="zeroed"`: zero_grad(set_to_none=
    False)), kept with its values (`"accumulated"`: scaled in place) or set
    to None (`"none"`); returns the output, the gradients, the grad_fn name
    and the bytes each backward allocated above the live ones."""
    runtime.enable_memory_stats()
    xi = x.clone().requires_grad_()
    wi = w.clone().requires_grad_()
    bi = b.clone().requires_grad_() if b is not None else None
    peaks = []
    for step in range(steps):
        if use_runtime:
            y = runtime.linear_weight_rows(xi, wi, bi, saved_input)
        else:
            y = F.linear(xi, wi, bi)
        runtime.reset_peak_memory_stats()
        live = runtime.memory_stats()[0]
        # Different output gradients per step: the sums in .grad differ.
        y.backward(g * (step + 1))
        peaks.append(runtime.memory_stats()[1] - live)
        if step + 1 < steps:
            for t in (xi, wi, bi):
                if t is not None and t.grad is not None:
                    if grads == "zeroed":
                        t.grad.zero_()
                    elif grads == "accumulated":
                        t.grad.mul_(0.5)  # keep it, with values in it
                    else:
                        t.grad = None
    return y.detach(), [t.grad if t is not None else None
                        for t in (xi, wi, bi)], y.grad_fn.name(), peaks


@pytest.mark.parametrize("shape", [(8,), (2, 5), (3,), ()])
@pytest.mark.parametrize("bias", [True, False])
def test_matches_eager(runtime, shape, bias):
    """2-D input (addmm), 3-D (folded into mm / addmm on a view), 1-D."""
    x, w, b, g = make(shape, bias=bias)
    ya, ga, _, eager = train(runtime, x, w, b, g, use_runtime=False)
    yb, gb, name, rows = train(runtime, x, w, b, g)
    assert "LinearPacked" in name
    # The first backward makes `.grad` (the whole gradient, as eager); the
    # next ones write into the zeroed `.grad`.
    weight_bytes = ROWS * COLS * 4
    assert rows[0] >= weight_bytes and min(eager) >= weight_bytes
    assert max(rows[1:]) < weight_bytes // 2
    assert same(ya, yb)
    for a, c in zip(ga, gb):
        assert same(a, c)


@pytest.mark.parametrize("shape", [(8,), (2, 5)])
def test_accumulation_gets_the_whole_gradient_as_eager(runtime, shape):
    """A `.grad` that holds values (gradient accumulation): eager's sum of
    `.grad` and the whole product, and eager's temporary."""
    x, w, b, g = make(shape)
    ya, ga, _, eager = train(runtime, x, w, b, g, grads="accumulated",
                             use_runtime=False)
    yb, gb, _, rows = train(runtime, x, w, b, g, grads="accumulated")
    assert same(ya, yb) and all(same(a, c) for a, c in zip(ga, gb))
    assert min(rows) >= ROWS * COLS * 4


@pytest.mark.parametrize("rows,cols", [(1300, 4100), (4099, 257), (1024, 4096),
                                       (37, 64)])
def test_odd_sizes_match_eager(runtime, rows, cols):
    """Weights over the threshold (4100 and 257 floats a row), exactly at
    it (four blocks of rows) and small: written into `.grad` or not, eager's
    bits."""
    x, w, b, g = make((6,), rows=rows, cols=cols)
    ya, ga, _, _ = train(runtime, x, w, b, g, use_runtime=False)
    yb, gb, _, _ = train(runtime, x, w, b, g)
    assert same(ya, yb)
    for a, c in zip(ga, gb):
        assert same(a, c)


def test_float64_and_packed_input_match_eager(runtime):
    x, w, b, g = make((4,), dtype=torch.float64)
    ya, ga, _, _ = train(runtime, x, w, b, g, use_runtime=False)
    yb, gb, _, _ = train(runtime, x, w, b, g)
    assert same(ya, yb) and all(same(a, c) for a, c in zip(ga, gb))
    x, w, b, g = make((4,), binary=True)
    ya, ga, _, _ = train(runtime, x, w, b, g, use_runtime=False)
    yb, gb, _, _ = train(runtime, x, w, b, g, saved_input="bit")
    assert same(ya, yb) and all(same(a, c) for a, c in zip(ga, gb))


def test_grad_set_to_none_matches_eager(runtime):
    """No `.grad` yet: autograd makes the whole gradient `.grad`, as eager."""
    x, w, b, g = make((8,))
    ya, ga, _, _ = train(runtime, x, w, b, g, grads="none",
                         use_runtime=False)
    yb, gb, _, _ = train(runtime, x, w, b, g, grads="none")
    assert same(ya, yb) and all(same(a, c) for a, c in zip(ga, gb))


def test_hooks_see_the_whole_gradient(runtime):
    """A hook on the weight gets the gradient eager gives it: the op returns
    it whole instead of writing it into `.grad`."""
    x, w, b, g = make((8,))
    seen = []
    for use_runtime in (False, True):
        wi = w.clone().requires_grad_()
        wi.grad = torch.zeros_like(wi)
        wi.register_hook(lambda grad: seen.append(grad.clone()))
        xi = x.clone().requires_grad_()
        y = runtime.linear_weight_rows(xi, wi, b, "keep") if use_runtime \
            else F.linear(xi, wi, b)
        y.backward(g)
    assert len(seen) == 2 and same(seen[0], seen[1])


def test_shared_weight_matches_eager(runtime):
    """A weight used twice gets the sum of both gradients added at once."""
    x, w, b, g = make((8,))
    results = []
    for use_runtime in (False, True):
        wi = w.clone().requires_grad_()
        wi.grad = torch.full_like(wi, 0.25)
        xi = x.clone().requires_grad_()
        if use_runtime:
            y = runtime.linear_weight_rows(xi, wi, b, "keep")
        else:
            y = F.linear(xi, wi, b)
        (y * g).sum().add((wi * 0.5).sum()).backward()
        results.append((wi.grad, xi.grad))
    assert all(same(a, c) for a, c in zip(*results))


def tied_step(runtime, x, w, g, idx, start, use_runtime):
    """An LM head tied to its embedding: the head's weight is the table.
    One backward from `.grad` = `start`; returns the gradients and the bytes
    the backward allocated above the live ones."""
    wi = w.clone().requires_grad_()
    wi.grad = start.clone()
    xi = x.clone().requires_grad_()
    emb = F.embedding(idx, wi)
    if use_runtime:
        y = runtime.linear_weight_rows(xi, wi, None, "keep")
    else:
        y = F.linear(xi, wi)
    loss = (y * g).sum() + (emb * 0.5).sum()
    runtime.reset_peak_memory_stats()
    live = runtime.memory_stats()[0]
    loss.backward()
    return wi.grad, xi.grad, runtime.memory_stats()[1] - live


def test_tied_weight_into_grad_from_zero(runtime):
    """From a `.grad` of zeros (zero_grad(set_to_none=False)), the head's
    weight gradient is written into `.grad` and the embedding's is added
    after it: eager's bits (0 + (a + b) == (0 + a) + b), without holding
    the head's whole gradient until the embedding's arrives."""
    runtime.enable_memory_stats()
    x, w, _, g = make((8,))
    idx = torch.tensor([[3, 7, 3, 1200], [0, 5, 1279, 9]])
    zeros = torch.zeros_like(w)
    eager = tied_step(runtime, x, w, g, idx, zeros, use_runtime=False)
    rows = tied_step(runtime, x, w, g, idx, zeros, use_runtime=True)
    assert same(eager[0], rows[0]) and same(eager[1], rows[1])
    weight_bytes = ROWS * COLS * 4
    # Eager holds the head's gradient and the embedding's together; here
    # only the embedding's whole gradient remains.
    assert eager[2] >= 2 * weight_bytes
    assert rows[2] <= weight_bytes + (1 << 20)


@pytest.mark.parametrize("start", ["values", "negative zeros"])
def test_tied_weight_falls_back_unless_grad_is_zero(runtime, start):
    """Where `.grad` holds values (accumulation) or -0, the order of the two
    additions would show: the whole gradient goes to autograd, as eager."""
    runtime.enable_memory_stats()
    x, w, _, g = make((8,))
    idx = torch.tensor([[3, 7, 3, 1200]])
    begin = (torch.full_like(w, 0.125) if start == "values"
             else torch.full_like(w, -0.0))
    eager = tied_step(runtime, x, w, g, idx, begin, use_runtime=False)
    rows = tied_step(runtime, x, w, g, idx, begin, use_runtime=True)
    assert same(eager[0], rows[0]) and same(eager[1], rows[1])
    assert rows[2] >= 2 * ROWS * COLS * 4


def test_autograd_grad_leaves_grad_alone(runtime):
    x, w, b, g = make((8,))
    wi = w.clone().requires_grad_()
    wi.grad = torch.zeros_like(wi)
    y = runtime.linear_weight_rows(x, wi, b, "keep")
    (dw,) = torch.autograd.grad(y, wi, g)
    assert torch.count_nonzero(wi.grad) == 0
    assert same(dw, g.t().mm(x))


def test_no_grad_and_errors(runtime):
    x, w, b, _ = make((2,), rows=8, cols=16)
    with torch.no_grad():
        y = runtime.linear_weight_rows(x, w.requires_grad_(), b, "keep")
    assert y.grad_fn is None and same(y, F.linear(x, w, b))
    with pytest.raises(RuntimeError, match="kind must be 'bit' or 'bool'"):
        runtime.linear_weight_rows(x, w, b, "uint8")
    with pytest.raises(RuntimeError,
                       match="linear_weight_rows: expected a 2-D weight"):
        runtime.linear_weight_rows(x, w.flatten(), b, "keep")
    xi = x.clone().requires_grad_()
    y = runtime.linear_weight_rows(xi, w, b, "keep")
    with pytest.raises(RuntimeError, match="linear_weight_rows does not "
                       "support double backward"):
        torch.autograd.grad(y.pow(2).sum(), xi, create_graph=True)


def backward_peak_above_live(runtime, forward, grad):
    y = forward()
    runtime.reset_peak_memory_stats()
    live = runtime.memory_stats()[0]
    y.backward(grad)
    return runtime.memory_stats()[1] - live


def test_backward_holds_no_weight_gradient(runtime):
    """With `.grad` allocated and zeroed, eager's backward holds the 20 MiB
    weight gradient before adding it; written into `.grad`, none of it."""
    runtime.enable_memory_stats()
    x, w, b, g = make((8,))
    wi = w.clone().requires_grad_()
    wi.grad = torch.zeros_like(wi)
    weight_bytes = ROWS * COLS * 4
    eager = backward_peak_above_live(runtime, lambda: F.linear(x, wi, b), g)
    wi.grad.zero_()
    rows = backward_peak_above_live(
        runtime, lambda: runtime.linear_weight_rows(x, wi, b, "keep"), g)
    assert eager >= weight_bytes
    assert rows <= 1 << 20
