"""memopt::conv_packed / memopt::linear_packed: the ATen convolution and
linear layer with their input kept packed (1 bit or 1 byte per value) for
backward. Outputs and input / weight / bias gradients must equal eager
PyTorch's bit for bit; the input is never recomputed."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from conftest import compare_on_right_convolutions

torch._C._set_graph_executor_optimize(False)
compare_on_right_convolutions()

KINDS = ["bit", "bool"]
CONV = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}


@pytest.fixture(scope="module", autouse=True)
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture
def packed(runtime):
    assert runtime.packed_input_check_enabled()
    yield runtime
    runtime.set_packed_input_check(True)


def spikes(shape, seed=0, p=0.4):
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(shape, generator=gen) < p).float()


def randn(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def layout(x, how):
    """The same values in another memory layout."""
    if how == "contiguous":
        return x
    if how == "channels_last":
        if x.dim() == 4:
            return x.contiguous(memory_format=torch.channels_last)
        if x.dim() == 5:
            return x.contiguous(memory_format=torch.channels_last_3d)
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if how == "sliced":  # not dense: every other element of a wider tensor
        return torch.stack([x, torch.zeros_like(x)], -1)[..., 0]
    raise ValueError(how)


def bitwise_equal(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    view = {torch.float32: torch.int32, torch.bfloat16: torch.int16,
            torch.float16: torch.int16}[a.dtype]
    return torch.equal(a.contiguous().view(view), b.contiguous().view(view))


def train_step(fn, x, w, b, x_grad, w_grad, b_grad):
    """fn(x, w, b) and the gradients of <fn(x, w, b), g> for a fixed g."""
    x = x.detach().requires_grad_(x_grad)  # keeps x's strides
    w = w.detach().clone().requires_grad_(w_grad)
    if b is not None:
        b = b.detach().clone().requires_grad_(b_grad)
    y = fn(x, w, b)
    if y.requires_grad:
        y.backward(randn(y.shape, 99).to(y.device))
    return [y.detach(), x.grad, w.grad, None if b is None else b.grad]


def assert_same_as_eager(eager, packed_fn, x, w, b, x_grad, w_grad, b_grad):
    expected = train_step(eager, x, w, b, x_grad, w_grad, b_grad)
    got = train_step(packed_fn, x, w, b, x_grad, w_grad, b_grad)
    for name, e, g in zip(["output", "input grad", "weight grad",
                           "bias grad"], expected, got):
        assert bitwise_equal(e, g), (
            f"{name} differs: max |diff| = "
            f"{None if e is None or g is None else (e - g).abs().max()}")


# (input shape, weight shape, stride, padding, dilation, groups)
CONV_CASES = {
    "1d": ((4, 6, 17), (8, 6, 3), [1], [1], [1], 1),
    "1d_strided_dilated_groups": ((4, 6, 17), (6, 2, 3), [2], [0], [2], 3),
    "1d_unbatched": ((6, 17), (8, 6, 3), [1], [2], [1], 1),
    "2d": ((2, 4, 11, 13), (8, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    "2d_strided_dilated_groups": ((2, 4, 11, 13), (8, 2, 3, 3), [2, 1],
                                  [1, 0], [1, 2], 2),
    "2d_depthwise": ((3, 4, 9, 9), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], 4),
    "2d_1x1_batch16": ((16, 4, 6, 5), (8, 4, 1, 1), [1, 1], [0, 0], [1, 1], 1),
    "2d_unbatched": ((4, 11, 13), (8, 4, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    "3d": ((2, 3, 5, 6, 7), (4, 3, 3, 3, 3), [1, 1, 1], [1, 1, 1],
           [1, 1, 1], 1),
    "3d_strided_dilated_groups": ((2, 4, 5, 6, 7), (4, 2, 2, 3, 2),
                                  [2, 1, 1], [0, 1, 1], [1, 1, 2], 2),
}
# which of input / weight / bias require grad
GRADS = {"all": (True, True, True), "frozen_weight": (True, False, True),
         "input_no_grad": (False, True, True),
         "weight_only": (False, True, False), "bias_only": (False, False, True)}
# (bias or not, GRADS key), without the combination where nothing needs grad
BIAS_GRADS = [(bias, grads) for bias in (True, False) for grads in sorted(GRADS)
              if bias or grads != "bias_only"]
BIAS_GRADS_IDS = [f"{'bias' if b else 'no_bias'}-{g}" for b, g in BIAS_GRADS]


@pytest.mark.parametrize("bias,grads", BIAS_GRADS, ids=BIAS_GRADS_IDS)
@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_conv_gradients_bitwise_equal_eager(packed, kind, case, bias, grads):
    shape, wshape, stride, padding, dilation, groups = CONV_CASES[case]
    x_grad, w_grad, b_grad = GRADS[grads]
    x = spikes(shape, 1)
    w = randn(wshape, 2)
    b = randn(wshape[0], 3) if bias else None
    conv = CONV[len(wshape)]
    assert_same_as_eager(
        lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups),
        lambda x, w, b: packed.conv_packed(x, w, b, stride, padding, dilation,
                                           groups, kind),
        x, w, b, x_grad, w_grad, b_grad)


@pytest.mark.parametrize("how", ["channels_last", "sliced"])
@pytest.mark.parametrize("case", ["1d", "2d", "2d_1x1_batch16",
                                  "3d_strided_dilated_groups"])
def test_conv_input_layouts(packed, case, how):
    shape, wshape, stride, padding, dilation, groups = CONV_CASES[case]
    x = layout(spikes(shape, 4), how)
    conv = CONV[len(wshape)]
    assert_same_as_eager(
        lambda x, w, b: conv(x, w, b, stride, padding, dilation, groups),
        lambda x, w, b: packed.conv_packed(x, w, b, stride, padding, dilation,
                                           groups, "bit"),
        x, randn(wshape, 5), randn(wshape[0], 6), True, True, True)


# (input shape, how to lay it out); in_features is the last size
LINEAR_CASES = {
    "1d": ((7,), "contiguous"),
    "2d": ((5, 7), "contiguous"),
    "2d_column_major": ((7, 5), "transpose"),
    "2d_sliced": ((5, 7), "sliced"),
    "3d": ((2, 3, 7), "contiguous"),
    "3d_last_dims_transposed": ((2, 7, 3), "transpose"),  # matmul's bmm path
    "3d_batch_dims_permuted": ((3, 2, 7), "permute"),
    "3d_sliced": ((6, 3, 7), "sliced"),
    "4d": ((2, 3, 4, 7), "contiguous"),
    "4d_permuted": ((4, 3, 2, 7), "permute"),
}


def linear_input(case, seed):
    shape, how = LINEAR_CASES[case]
    x = spikes(shape, seed, p=0.5)
    if how == "transpose":
        return x.transpose(-1, -2)
    if how == "permute":
        return x.transpose(0, -2)
    if how == "sliced":
        return layout(x, "sliced")
    return x


@pytest.mark.parametrize("bias,grads", BIAS_GRADS, ids=BIAS_GRADS_IDS)
@pytest.mark.parametrize("case", sorted(LINEAR_CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_linear_gradients_bitwise_equal_eager(packed, kind, case, bias, grads):
    x_grad, w_grad, b_grad = GRADS[grads]
    x = linear_input(case, 7)
    w = randn((5, x.shape[-1]), 8)
    b = randn(5, 9) if bias else None
    assert_same_as_eager(
        F.linear, lambda x, w, b: packed.linear_packed(x, w, b, kind),
        x, w, b, x_grad, w_grad, b_grad)


def test_gradient_of_a_subset(packed):
    """torch.autograd.grad for the input only (the packed input is not even
    unpacked), then for the weight only."""
    x = spikes((2, 4, 9, 9), 10).requires_grad_()
    w = randn((6, 4, 3, 3), 11).requires_grad_()
    g = randn((2, 6, 9, 9), 12)
    for wrt in ([x], [w]):
        eager = torch.autograd.grad(F.conv2d(x, w, None, 1, 1), wrt, g)
        got = torch.autograd.grad(
            packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit"),
            wrt, g)
        assert bitwise_equal(eager[0], got[0])


@pytest.mark.parametrize("op", ["conv", "linear"])
def test_autocast_bfloat16(packed, op):
    """Under CPU autocast the op casts like aten::conv2d / aten::linear do, so
    output and float32 parameter gradients match eager's bit for bit."""
    if op == "conv":
        x, w, b = spikes((2, 4, 8, 8), 13), randn((6, 4, 3, 3), 14), \
            randn(6, 15)
        eager = lambda x, w, b: F.conv2d(x, w, b, 1, 1)
        mine = lambda x, w, b: packed.conv_packed(x, w, b, [1, 1], [1, 1],
                                                  [1, 1], 1, "bit")
    else:
        x, w, b = spikes((3, 5, 8), 13), randn((6, 8), 14), randn(6, 15)
        eager, mine = F.linear, \
            lambda x, w, b: packed.linear_packed(x, w, b, "bit")

    def under_autocast(fn):
        def run(x, w, b):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                y = fn(x, w, b)
            assert y.dtype == torch.bfloat16
            return y
        return run

    assert_same_as_eager(under_autocast(eager), under_autocast(mine),
                         x, w, b, True, True, True)


def test_no_grad_and_inference_mode_compute_the_aten_op(packed):
    x = spikes((2, 4, 8, 8), 16)
    x[0, 0, 0, 0] = 0.5  # nothing is packed, so nothing is checked
    w = randn((6, 4, 3, 3), 17).requires_grad_()
    expected = F.conv2d(x, w.detach(), None, 1, 1)
    with torch.no_grad():
        y = packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    assert not y.requires_grad and bitwise_equal(y, expected)
    with torch.inference_mode():
        y = packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    assert bitwise_equal(y, expected)


def test_torchscript_call_save_and_load(packed, tmp_path):
    @torch.jit.script
    def block(x, w1, w2, b2: torch.Tensor):
        s = torch.ops.memopt.conv_packed(x, w1, None, [1, 1], [1, 1], [1, 1],
                                         1, "bit")
        s = (s > 0).float()
        s = torch.flatten(s, 1)
        return torch.ops.memopt.linear_packed(s, w2, b2, "bool")

    assert "memopt::conv_packed" in str(block.graph)
    path = tmp_path / "block.pt"
    block.save(str(path))
    loaded = torch.jit.load(str(path))

    x = spikes((3, 2, 5, 5), 18)
    w1 = randn((4, 2, 3, 3), 19)
    w2, b2 = randn((6, 100), 20), randn(6, 21)

    def eager(x, w1, w2, b2):
        s = (F.conv2d(x, w1, None, 1, 1) > 0).float()
        return F.linear(torch.flatten(s, 1), w2, b2)

    def grads(fn):
        params = [t.clone().requires_grad_() for t in (w1, w2, b2)]
        y = fn(x, *params)
        y.backward(randn(y.shape, 22))
        return [y.detach()] + [p.grad for p in params]

    expected = grads(eager)
    for fn in (block, loaded):
        for e, g in zip(expected, grads(fn)):
            assert bitwise_equal(e, g)


def test_schemas(runtime):
    """The exporter emits these exact signatures."""
    assert str(runtime.conv_packed.default._schema) == (
        "memopt::conv_packed(Tensor input, Tensor weight, Tensor? bias, "
        "int[] stride, int[] padding, int[] dilation, int groups, str kind) "
        "-> Tensor")
    assert str(runtime.linear_packed.default._schema) == (
        "memopt::linear_packed(Tensor input, Tensor weight, Tensor? bias, "
        "str kind) -> Tensor")


@pytest.mark.parametrize("how", ["contiguous", "channels_last"])
def test_non_binary_input_is_refused(packed, how):
    x = spikes((2, 3, 8, 8), 23)
    x[1, 2, 3, 4] = 0.5
    x = layout(x, how)
    w = randn((4, 3, 3, 3), 24).requires_grad_()
    with pytest.raises(RuntimeError) as err:
        packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    first_line = str(err.value).splitlines()[0]
    assert first_line.startswith(
        "memopt: conv_packed input is not binary (values other than 0 and 1); "
        "found 0.5 at [1, 2, 3, 4] of a float32 tensor of shape [2, 3, 8, 8]")

    with pytest.raises(RuntimeError, match="memopt: linear_packed input is "
                       "not binary .* found 2 at \\[0, 1\\]"):
        packed.linear_packed(torch.tensor([[0.0, 2.0]]),
                             randn((3, 2), 25).requires_grad_(), None, "bool")


def test_check_can_be_turned_off(packed):
    x = spikes((2, 3, 8, 8), 26)
    x[0, 0, 0, 0] = 0.5
    w = randn((4, 3, 3, 3), 27).requires_grad_()
    packed.set_packed_input_check(False)
    assert not packed.packed_input_check_enabled()
    y = packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    y.sum().backward()
    # Unchecked, the 0.5 was packed as 1: the weight gradient is that of the
    # binarized input (documented; this is what the check prevents).
    x1 = (x != 0).float()
    assert torch.equal(w.grad, torch.autograd.grad(
        F.conv2d(x1, w, None, 1, 1).sum(), w)[0])


def test_argument_errors(packed):
    x = spikes((2, 3, 8, 8), 28)
    w = randn((4, 3, 3, 3), 29).requires_grad_()
    with pytest.raises(RuntimeError, match="memopt: conv_packed: kind must be "
                       "'bit' or 'bool', got 'sparse'"):
        packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "sparse")
    with pytest.raises(RuntimeError, match="memopt: conv_packed\\(bit\\): "
                       "expected a float32, float16 or bfloat16 input, got "
                       "float64"):
        packed.conv_packed(x.double(), w.double(), None, [1, 1], [1, 1],
                           [1, 1], 1, "bit")
    with pytest.raises(RuntimeError, match="expected a 3-, 4- or 5-D weight"):
        packed.conv_packed(x, w[0, 0], None, [1], [1], [1], 1, "bit")
    with pytest.raises(RuntimeError, match="memopt: linear_packed: expected a "
                       "2-D weight"):
        packed.linear_packed(x, randn(8, 30), None, "bit")


def test_double_backward_and_second_backward(packed):
    x = spikes((2, 3, 8, 8), 31).requires_grad_()
    w = randn((4, 3, 3, 3), 32).requires_grad_()
    y = packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    with pytest.raises(RuntimeError, match="memopt::conv_packed does not "
                       "support double backward \\(create_graph=True\\)"):
        torch.autograd.grad(y.sum(), [w], create_graph=True)
    y = packed.linear_packed(x, randn((5, 8), 33).requires_grad_(), None,
                             "bit")
    with pytest.raises(RuntimeError, match="memopt::linear_packed does not "
                       "support double backward"):
        torch.autograd.grad(y.sum(), [x], create_graph=True)

    y = packed.conv_packed(x, w, None, [1, 1], [1, 1], [1, 1], 1, "bit")
    y.sum().backward(retain_graph=True)
    first = w.grad.clone()
    y.sum().backward()  # retained: the payload is still there
    assert torch.equal(w.grad, 2 * first)
    with pytest.raises(RuntimeError, match="backward through the graph a "
                       "second time"):
        y.sum().backward()


class Spike(torch.autograd.Function):
    """Heaviside with a straight-through gradient; saves nothing, so the conv
    inputs are the only activations the graph keeps."""

    @staticmethod
    def forward(ctx, v):
        return (v > 0).to(v.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


def snn_step(runtime, raw, weights, kind):
    s = Spike.apply(raw)
    for w in weights:
        v = F.conv2d(s, w, None, 1, 1) if kind is None else \
            runtime.conv_packed(s, w, None, [1, 1], [1, 1], [1, 1], 1, kind)
        s = Spike.apply(v)
    return s.sum()


def measure(runtime, step, weights):
    """(bytes held after forward, peak of the step) above the live bytes, in
    steady state (the .grad buffers exist)."""
    step().backward()
    for w in weights:
        w.grad.zero_()
    live = runtime.memory_stats()[0]
    runtime.reset_peak_memory_stats()
    loss = step()
    held = runtime.memory_stats()[0] - live
    loss.backward()
    peak = runtime.memory_stats()[1] - live
    return held, peak


def test_memory_of_a_conv_stack(packed):
    """4 conv layers on binary inputs (8x16x32x32 float32 each, 512 KiB):
    eager keeps the 4 inputs for backward, conv_packed 1/32 of them (bit) or
    1/4 (bool), and the step's peak drops by what is no longer kept minus the
    one input unpacked at a time in backward."""
    packed.enable_memory_stats()
    torch.manual_seed(0)
    raw = torch.randn(8, 16, 32, 32)
    input_bytes = raw.numel() * 4
    weights = [torch.nn.Parameter(torch.randn(16, 16, 3, 3) * 0.2)
               for _ in range(4)]
    eager_held, eager_peak, bit_held, bit_peak, bool_held, bool_peak = (
        value for kind in (None, "bit", "bool") for value in measure(
            packed, lambda: snn_step(packed, raw, weights, kind), weights))
    # Also held: the 4-byte loss.
    assert 4 * input_bytes <= eager_held <= 4 * input_bytes + 64
    assert bit_held <= eager_held / 32 + 64
    assert bool_held <= eager_held / 4 + 64
    assert eager_peak - bit_peak >= 0.95 * (eager_held - bit_held - input_bytes)
    assert eager_peak - bool_peak >= 0.95 * (eager_held - bool_held
                                             - input_bytes)


# --- mul_packed: a product keeping its binary factor packed -----------------

def lif_reset(mul, v, spike):
    """A LIF neuron's hard reset v * (1 - spike), the binary factor first."""
    return mul(1.0 - spike, v)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mul_gradients_bitwise_equal_eager(packed, kind, grads, dtype):
    v0 = randn((4, 3, 9, 7), 40).to(dtype)
    v0[0, 0, 0, :3] = torch.tensor([float("nan"), float("inf"), -0.0])
    s0 = spikes((4, 3, 9, 7), 41).to(dtype)
    g = randn((4, 3, 9, 7), 42).to(dtype)
    results = []
    for mul in (torch.mul, lambda b, o: packed.mul_packed(b, o, kind)):
        v = v0.clone().requires_grad_(grads[0])
        s = s0.clone().requires_grad_(grads[1])
        y = lif_reset(mul, v, s)
        y.backward(g)
        results.append([y.detach(), v.grad, s.grad])
    for expected, got in zip(*results):
        assert bitwise_equal(expected, got)


def test_mul_keeps_the_binary_factor_at_one_bit(packed):
    """1 - s (1 MiB) lives on only because the product keeps it: eager at
    full width, mul_packed at 1 bit per value (32 KiB)."""
    packed.enable_memory_stats()
    v = randn((256, 1024), 43).requires_grad_()
    s = spikes((256, 1024), 44).requires_grad_()
    factor = v.numel() * 4
    held = []
    for mul in (torch.mul, lambda b, o: packed.mul_packed(b, o, "bit")):
        live = packed.memory_stats()[0]
        y = lif_reset(mul, v, s)
        held.append(packed.memory_stats()[0] - live - factor)  # minus y
        del y
    assert held[0] == factor
    assert held[1] <= factor // 32 + 64


def test_mul_errors(packed):
    v = randn((2, 3), 45).requires_grad_()
    with pytest.raises(RuntimeError, match="memopt: mul_packed input is not "
                       "binary .* found 0.5"):
        packed.mul_packed(torch.full((2, 3), 0.5), v, "bit")
    with pytest.raises(RuntimeError, match="memopt: mul_packed: the factors "
                       "must have the same sizes"):
        packed.mul_packed(spikes((3,), 46), v, "bit")
    with pytest.raises(RuntimeError, match="memopt: mul_packed: the factors "
                       "must have the same dtype"):
        packed.mul_packed(spikes((2, 3), 47).double(), v, "bit")
    with pytest.raises(RuntimeError, match="memopt: mul_packed: kind must be"):
        packed.mul_packed(spikes((2, 3), 48), v, "uint8")
    y = packed.mul_packed(spikes((2, 3), 49).requires_grad_(), v, "bit")
    with pytest.raises(RuntimeError, match="memopt::mul_packed does not "
                       "support double backward"):
        torch.autograd.grad(y.sum(), v, create_graph=True)
    with torch.no_grad():
        assert not packed.mul_packed(spikes((2, 3), 50), v, "bit").requires_grad


def test_memory_of_a_linear_layer(packed):
    """A 3-D spike input of 2 MiB: eager keeps it, linear_packed 1/32."""
    packed.enable_memory_stats()
    raw = torch.randn(64, 32, 256)
    w = torch.nn.Parameter(torch.randn(128, 256) * 0.1)

    def step(kind):
        s = Spike.apply(raw)
        y = F.linear(s, w) if kind is None else \
            packed.linear_packed(s, w, None, kind)
        return y.sum()

    eager_held, _ = measure(packed, lambda: step(None), [w])
    bit_held, _ = measure(packed, lambda: step("bit"), [w])
    assert raw.numel() * 4 <= eager_held <= raw.numel() * 4 + 64
    assert bit_held <= eager_held / 32 + 64


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("kind", KINDS)
def test_cuda_conv_and_linear(packed, kind):
    torch.backends.cudnn.deterministic = True
    x = spikes((4, 8, 16, 16), 34).cuda()
    w, b = randn((8, 8, 3, 3), 35).cuda(), randn(8, 36).cuda()
    assert_same_as_eager(
        lambda x, w, b: F.conv2d(x, w, b, 1, 1),
        lambda x, w, b: packed.conv_packed(x, w, b, [1, 1], [1, 1], [1, 1], 1,
                                           kind),
        x, w, b, True, True, True)
    x = spikes((4, 6, 16), 37).cuda()
    w, b = randn((5, 16), 38).cuda(), randn(5, 39).cuda()
    assert_same_as_eager(
        F.linear, lambda x, w, b: packed.linear_packed(x, w, b, kind),
        x, w, b, True, True, True)
