"""memopt::checkpoint regions against eager PyTorch: gradients, batch-norm
statistics, RNG, composition, TorchScript callers and error messages.

Every comparison is exact (max |Δ| = 0) on CPU: a region graph runs through
the plain JIT interpreter, which calls the same ATen kernels as eager. On CUDA
the tolerance is 1e-6 * max|g|, because some CUDA backward kernels (bias and
layer-norm weight gradients, softmax) reduce with atomics whose order is not
reproducible from one run to the next, eager included.
"""
import copy
from typing import List

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import compare_on_right_convolutions

# Before any scripted call: the profiling executor otherwise builds its own
# differentiable plan on a function's second call and redraws dropout masks.
torch._C._set_graph_executor_optimize(False)
compare_on_right_convolutions()

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
POLICIES = ["keep", "offload:host", "offload:unified"]
SPIKE_POLICIES = POLICIES + ["compress:bit", "compress:bool", "compress:uint8",
                             "compress:sparse", "compress:bit:check"]


def ir(fn) -> str:
    """TorchScript IR text of `fn` with calls inlined and the dead function
    constants removed, as the exporter embeds it (a Function has no text
    form)."""
    graph = torch.jit.script(fn).inlined_graph
    torch._C._jit_pass_dce(graph)
    return str(graph)


def assert_same(actual, expected, what, exact=True):
    assert actual.shape == expected.shape, what
    assert actual.dtype == expected.dtype, what
    if actual.device.type == "cpu" and exact:
        diff = (actual.double() - expected.double()).abs().max().item() \
            if actual.numel() else 0.0
        assert torch.equal(actual, expected), f"{what}: max |Δ| = {diff}"
    else:
        scale = expected.double().abs().max().item() if expected.numel() else 0
        torch.testing.assert_close(actual, expected, rtol=0,
                                   atol=1e-6 * max(scale, 1e-30), msg=what)


def skip_unless_policy_runs(runtime, policy, device):
    if policy == "offload:unified" and device == "cuda" and \
            not runtime.unified_memory_supported():
        pytest.skip("no unified memory on this machine")


@pytest.fixture(autouse=True)
def deterministic_cudnn():
    old = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = True, False
    yield
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = old


# --- conv + batch-norm + relu chains ---------------------------------------

def conv_bn_relu(x, w, b, gamma, beta, mean, var, count,
                 training: int, momentum: float, eps: float):
    if bool(training):
        count.add_(1)
    y = torch.conv2d(x, w, b, [1, 1], [1, 1], [1, 1], 1)
    y = torch.batch_norm(y, gamma, beta, mean, var, bool(training), momentum,
                         eps, True)
    return torch.relu(y)


CONV_BN_RELU = ir(conv_bn_relu)


def conv_block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU())


def block_tensors(block):
    conv, bn = block[0], block[1]
    return [conv.weight, conv.bias, bn.weight, bn.bias, bn.running_mean,
            bn.running_var, bn.num_batches_tracked]


def run_regions(runtime, blocks, x, policy):
    for i, block in enumerate(blocks):
        bn = block[1]
        x = runtime.checkpoint(
            CONV_BN_RELU, [x] + block_tensors(block),
            [int(block.training), bn.momentum, bn.eps],
            [policy, policy] + ["keep"] * 6, f"block{i}")[0]
    return x


def compare_modules(actual, expected):
    for (name, a), (_, e) in zip(actual.named_parameters(),
                                 expected.named_parameters()):
        assert_same(a.grad, e.grad, f"grad of {name}")
    for (name, a), (_, e) in zip(actual.named_buffers(),
                                 expected.named_buffers()):
        assert_same(a, e, f"buffer {name}")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", POLICIES)
def test_conv_bn_relu_chain_matches_eager(runtime, device, policy):
    skip_unless_policy_runs(runtime, policy, device)
    torch.manual_seed(0)
    eager = nn.Sequential(conv_block(3, 8), conv_block(8, 8),
                          conv_block(8, 4)).to(device)
    ours = copy.deepcopy(eager)
    for step in range(2):
        x = torch.randn(4, 3, 10, 10, device=device)
        xe, xo = x.clone().requires_grad_(), x.clone().requires_grad_()
        out_e = eager(xe)
        out_o = run_regions(runtime, list(ours), xo, policy)
        assert_same(out_o, out_e, f"step {step} output")
        g = torch.randn_like(out_e)
        out_e.backward(g)
        out_o.backward(g)
        assert_same(xo.grad, xe.grad, f"step {step} input grad")
        compare_modules(ours, eager)
        # Running statistics and num_batches_tracked moved once per step.
        assert int(ours[0][1].num_batches_tracked) == step + 1
    eager.eval()
    ours.eval()
    x = torch.randn(2, 3, 10, 10, device=device)
    with torch.no_grad():
        assert_same(run_regions(runtime, list(ours), x, policy), eager(x),
                    "eval output (uses the running statistics)")


def test_batch_norm_statistics_after_one_step(runtime):
    torch.manual_seed(1)
    eager = conv_block(3, 6)
    ours = copy.deepcopy(eager)
    before = ours[1].running_mean.clone()
    x = torch.randn(5, 3, 7, 7)
    eager(x).sum().backward()
    out = run_regions(runtime, [ours], x.clone().requires_grad_(), "keep")
    # After the forward only: updated once already.
    assert_same(ours[1].running_mean, eager[1].running_mean, "after forward")
    out.sum().backward()
    # The recompute ran on snapshots: still exactly one update.
    assert not torch.equal(before, ours[1].running_mean)
    for name in ["running_mean", "running_var", "num_batches_tracked"]:
        assert_same(getattr(ours[1], name), getattr(eager[1], name), name)
    assert int(ours[1].num_batches_tracked) == 1


# --- dropout and RNG ----------------------------------------------------------

def linear_dropout(x, w, b, p: float, training: int):
    return torch.dropout(torch.relu(F.linear(x, w, b)), p, bool(training))


LINEAR_DROPOUT = ir(linear_dropout)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", POLICIES)
def test_dropout_masks_replayed(runtime, device, policy):
    skip_unless_policy_runs(runtime, policy, device)
    torch.manual_seed(2)
    layers = [nn.Linear(16, 16).to(device) for _ in range(3)]
    ours = copy.deepcopy(layers)
    x = torch.randn(8, 16, device=device)

    torch.manual_seed(7)
    if device == "cuda":
        torch.cuda.manual_seed(7)
    h = x.clone().requires_grad_()
    out_e = h
    for layer in layers:
        out_e = F.dropout(F.relu(layer(out_e)), 0.5, True)
    out_e.pow(2).sum().backward()
    rng_e = torch.get_rng_state()
    cuda_rng_e = torch.cuda.get_rng_state() if device == "cuda" else None

    torch.manual_seed(7)
    if device == "cuda":
        torch.cuda.manual_seed(7)
    h2 = x.clone().requires_grad_()
    out_o = h2
    for i, layer in enumerate(ours):
        out_o = runtime.checkpoint(LINEAR_DROPOUT, [out_o, layer.weight,
                                                    layer.bias], [0.5, 1],
                                   [policy] * 3, f"drop{i}")[0]
    out_o.pow(2).sum().backward()

    assert_same(out_o, out_e, "output (same masks in forward)")
    assert_same(h2.grad, h.grad, "input grad (same masks in recompute)")
    for a, e in zip(ours, layers):
        assert_same(a.weight.grad, e.weight.grad, "weight grad")
        assert_same(a.bias.grad, e.bias.grad, "bias grad")
    # The recompute restored the generator: the step drew what eager drew.
    assert torch.equal(torch.get_rng_state(), rng_e)
    if device == "cuda":
        assert torch.equal(torch.cuda.get_rng_state(), cuda_rng_e)


# --- a multi-step LIF neuron over time steps --------------------------------

def lif(x_seq, tau: float, v_th: float, alpha: float):
    v = torch.zeros_like(x_seq[0])
    spikes: List[torch.Tensor] = []
    for t in range(x_seq.size(0)):
        v = v + (x_seq[t] - v) / tau
        sg = torch.sigmoid(alpha * (v - v_th))
        # Exact 0/1 forward; gradient of the sigmoid surrogate.
        s = (v >= v_th).to(x_seq.dtype) + (sg - sg.detach())
        v = v * (1.0 - s)
        spikes.append(s)
    return torch.stack(spikes)


def linear_lif(x_seq, w, tau: float, v_th: float, alpha: float):
    return lif(torch.matmul(x_seq, w), tau, v_th, alpha)


LINEAR_LIF = ir(linear_lif)
LIF_SCALARS = [2.0, 0.5, 4.0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", SPIKE_POLICIES)
def test_lif_loop_matches_eager(runtime, device, policy):
    skip_unless_policy_runs(runtime, policy, device)
    torch.manual_seed(3)
    steps, batch = 6, 4
    x = torch.randn(steps, batch, 10, device=device) * 2
    w1 = (torch.randn(10, 32, device=device) * 0.5).requires_grad_()
    w2 = (torch.randn(32, 8, device=device) * 0.5).requires_grad_()
    w1o, w2o = w1.detach().clone().requires_grad_(), \
        w2.detach().clone().requires_grad_()

    s1 = linear_lif(x, w1, *LIF_SCALARS)
    out_e = linear_lif(s1, w2, *LIF_SCALARS)
    (out_e * torch.arange(8, device=device)).sum().backward()

    s1o = runtime.checkpoint(LINEAR_LIF, [x, w1o], LIF_SCALARS,
                             ["keep", "keep"], "lif1")[0]
    assert set(s1o.unique().tolist()) <= {0.0, 1.0} and s1o.requires_grad
    # The spike tensor is the binary input saved under the tested policy.
    out_o = runtime.checkpoint(LINEAR_LIF, [s1o, w2o], LIF_SCALARS,
                               [policy, "keep"], "lif2")[0]
    (out_o * torch.arange(8, device=device)).sum().backward()

    assert_same(out_o, out_e, "spikes")
    assert w1.grad.abs().sum() > 0, "surrogate gradient reached layer 1"
    assert_same(w1o.grad, w1.grad, "layer 1 weight grad (through spikes)")
    assert_same(w2o.grad, w2.grad, "layer 2 weight grad")


# --- a transformer block ------------------------------------------------------

def transformer_block(x, ln1_w, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_w, ln2_b,
                      w_1, b_1, w_2, b_2, heads: int, p: float, training: int,
                      scale: float):
    batch, seq, dim = x.size(0), x.size(1), x.size(2)
    h = torch.layer_norm(x, [dim], ln1_w, ln1_b, 1e-5, True)
    qkv = F.linear(h, w_qkv, b_qkv)
    q = qkv.narrow(2, 0, dim).reshape(batch, seq, heads, dim // heads)
    k = qkv.narrow(2, dim, dim).reshape(batch, seq, heads, dim // heads)
    v = qkv.narrow(2, 2 * dim, dim).reshape(batch, seq, heads, dim // heads)
    q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) * scale, -1)
    att = torch.dropout(att, p, bool(training))
    y = torch.matmul(att, v).transpose(1, 2).reshape(batch, seq, dim)
    x = x + torch.dropout(F.linear(y, w_o, b_o), p, bool(training))
    h = torch.layer_norm(x, [dim], ln2_w, ln2_b, 1e-5, True)
    h = F.gelu(F.linear(h, w_1, b_1))
    return x + torch.dropout(F.linear(h, w_2, b_2), p, bool(training))


TRANSFORMER_BLOCK = ir(transformer_block)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def params(self):
        return [self.ln1.weight, self.ln1.bias, self.qkv.weight, self.qkv.bias,
                self.out.weight, self.out.bias, self.ln2.weight, self.ln2.bias,
                self.fc1.weight, self.fc1.bias, self.fc2.weight, self.fc2.bias]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", POLICIES)
def test_transformer_block_matches_eager(runtime, device, policy):
    skip_unless_policy_runs(runtime, policy, device)
    torch.manual_seed(4)
    dim, heads = 32, 4
    blocks = [Block(dim).to(device) for _ in range(2)]
    ours = copy.deepcopy(blocks)
    x = torch.randn(3, 7, dim, device=device)
    scalars = [heads, 0.1, 1, (dim // heads) ** -0.5]

    torch.manual_seed(5)
    xe = x.clone().requires_grad_()
    out_e = xe
    for b in blocks:
        out_e = transformer_block(out_e, *b.params(), *scalars)
    out_e.square().mean().backward()

    torch.manual_seed(5)
    xo = x.clone().requires_grad_()
    out_o = xo
    for i, b in enumerate(ours):
        out_o = runtime.checkpoint(TRANSFORMER_BLOCK, [out_o] + b.params(),
                                   scalars, [policy] * 13, f"tb{i}")[0]
    out_o.square().mean().backward()

    assert_same(out_o, out_e, "output")
    assert_same(xo.grad, xe.grad, "input grad")
    for a, e in zip(ours, blocks):
        for pa, pe in zip(a.params(), e.params()):
            assert_same(pa.grad, pe.grad, "parameter grad")


# --- composition: several outputs, aliases, non-differentiable outputs ------

def split_stats(x, y):
    a = x * y
    return x, torch.sin(a), torch.argmax(a, 1)


def combine(a, b):
    return a * torch.cos(b), torch.exp(b)


SPLIT_STATS, COMBINE = ir(split_stats), ir(combine)


def test_composed_regions_outputs_and_aliases(runtime):
    torch.manual_seed(6)
    x0 = torch.randn(5, 4)
    y = torch.randn(5, 4)  # does not require grad

    xe = x0.clone().requires_grad_()
    ae, be, ie = split_stats(xe, y)
    ce, de = combine(be, ae)
    (ce.sum() + de.sum() * 0.5 + ae.square().sum()).backward()

    xo = x0.clone().requires_grad_()
    ao, bo, io = runtime.checkpoint(SPLIT_STATS, [xo, y], [], [], "split")
    # An output that is an input comes back as a differentiable alias.
    assert ao.requires_grad and torch.equal(ao, xo)
    assert io.dtype == torch.int64 and not io.requires_grad
    assert torch.equal(io, ie)
    co, do = runtime.checkpoint(COMBINE, [bo, ao], [], ["keep", "keep"],
                                "combine")
    (co.sum() + do.sum() * 0.5 + ao.square().sum()).backward()
    assert_same(co, ce, "first output")
    assert_same(do, de, "second output")
    # x's gradient is the sum of three paths; region 1's backward adds two of
    # them before autograd adds the third, eager adds them in another order,
    # and float addition is not associative: 1e-6 * max|g|, not 0.
    assert_same(xo.grad, xe.grad, "grad through both regions and the alias",
                exact=False)


def test_no_grad_runs_without_saving(runtime):
    x = torch.randn(4, 4, requires_grad=True)
    with torch.no_grad():
        a, b, i = runtime.checkpoint(SPLIT_STATS, [x, x], [], [], "nograd")
    assert not b.requires_grad and torch.equal(b, torch.sin(x * x))


def test_retain_graph_second_backward(runtime):
    x = torch.randn(3, 4, requires_grad=True)
    w = torch.randn(5, 4, requires_grad=True)
    out = runtime.checkpoint(LINEAR_DROPOUT, [x, w, torch.zeros(5)],
                             [0.3, 1], [], "twice")[0]
    out.sum().backward(retain_graph=True)
    first = w.grad.clone()
    out.sum().backward()
    assert_same(w.grad, 2 * first, "second backward adds the same gradient")
    with pytest.raises(RuntimeError, match="second time"):
        out.sum().backward()


def test_autocast_state_replayed(runtime):
    torch.manual_seed(8)
    layer = nn.Linear(12, 12)
    ours = copy.deepcopy(layer)
    x = torch.randn(6, 12)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out_e = F.dropout(F.relu(layer(x)), 0.0, True)
        out_o = runtime.checkpoint(LINEAR_DROPOUT, [x, ours.weight, ours.bias],
                                   [0.0, 1], [], "amp")[0]
    assert out_o.dtype == torch.bfloat16
    # Backward outside autocast, as training loops do: the recompute must
    # still cast like the forward did.
    out_e.float().sum().backward()
    out_o.float().sum().backward()
    assert_same(ours.weight.grad, layer.weight.grad, "weight grad under autocast")


# --- callers -------------------------------------------------------------------

def test_called_from_torchscript(runtime):
    @torch.jit.script
    def step(graph: str, x, w, b):
        y = torch.ops.memopt.checkpoint(graph, [x, w, b], [1], [0.25],
                                        ["keep", "keep", "keep"], "ts")
        return y[0]

    torch.manual_seed(9)
    x = torch.randn(4, 6, requires_grad=True)
    layer = nn.Linear(6, 6)
    torch.manual_seed(10)
    out_e = F.dropout(F.relu(layer(x)), 0.25, True)
    out_e.sum().backward()
    expected = (x.grad.clone(), layer.weight.grad.clone())
    for _ in range(3):  # the executor must not take over on later calls
        x.grad, layer.weight.grad = None, None
        torch.manual_seed(10)
        out = step(LINEAR_DROPOUT, x, layer.weight, layer.bias)
        out.sum().backward()
        assert_same(out, out_e, "output")
        assert_same(x.grad, expected[0], "input grad")
        assert_same(layer.weight.grad, expected[1], "weight grad")


def test_printed_graph_with_exception_parses(runtime):
    def checked(x, p: float):
        if p > 1.0:
            raise ValueError("p too large")
        return x * p
    x = torch.randn(3, requires_grad=True)
    out = runtime.checkpoint(ir(checked), [x], [0.5], [], "raises")[0]
    out.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 0.5))
    with pytest.raises((RuntimeError, torch.jit.Error), match="p too large"):
        runtime.checkpoint(ir(checked), [x], [2.0], [], "raises")


# --- errors ----------------------------------------------------------------

def test_error_bad_ir(runtime):
    with pytest.raises(RuntimeError, match=r"region 'bad'\): cannot parse the "
                       r"region graph"):
        runtime.checkpoint("graph(%x : Tensor):\n  %y = aten::relu(%x\n",
                           [torch.randn(2)], [], [], "bad")


def test_error_wrong_input_count(runtime):
    with pytest.raises(RuntimeError, match=r"the graph takes 3 tensors and 2 "
                       r"scalars but the call passes 2 tensors and 2 scalars"):
        runtime.checkpoint(LINEAR_DROPOUT, [torch.randn(2, 2),
                                            torch.randn(2, 2)],
                           [0.5, 1], [], "count")


def test_error_side_effects(runtime):
    def noisy(x):
        print(x)
        return torch.relu(x)

    def reseeds(x):
        torch.manual_seed(0)
        return torch.relu(x)

    x = torch.randn(3, requires_grad=True)
    for fn, op in [(noisy, "prim::Print"), (reseeds, "aten::manual_seed")]:
        with pytest.raises(RuntimeError, match=f"side effect that the backward "
                           f"recompute would repeat \\({op}"):
            runtime.checkpoint(ir(fn), [x], [], [], fn.__name__)


def test_error_double_backward(runtime):
    x = torch.randn(4, 3, requires_grad=True)
    out = runtime.checkpoint(SPLIT_STATS, [x, x], [], [], "dbl")[1]
    with pytest.raises(RuntimeError, match=r"memopt::checkpoint does not "
                       r"support double backward \(create_graph=True\)"):
        torch.autograd.grad(out.sum(), x, create_graph=True)


def test_error_in_place_write_to_differentiable_input(runtime):
    def bump(x, y):
        x.add_(1)
        return x * y
    x = torch.randn(3, requires_grad=True) * 1  # a non-leaf
    with pytest.raises(RuntimeError, match="writes in place to input 0, "
                       "which requires grad"):
        runtime.checkpoint(ir(bump), [x, torch.randn(3)], [], [], "bump")


def test_error_policies(runtime):
    x = torch.randn(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="unknown save policy 'compress:png'"):
        runtime.checkpoint(SPLIT_STATS, [x, x], [], ["keep", "compress:png"],
                           "pol")
    with pytest.raises(RuntimeError, match="1 save policies for 2 input "
                       "tensors"):
        runtime.checkpoint(SPLIT_STATS, [x, x], [], ["keep"], "pol")


def test_error_non_tensor_output(runtime):
    def count(x):
        return x.numel()
    with pytest.raises(RuntimeError, match="graph output 0 has type int"):
        runtime.checkpoint(ir(count), [torch.randn(2)], [], [], "int_out")
