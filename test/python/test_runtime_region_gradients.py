"""Where a checkpoint region's parameter gradients go.

A parameter whose only consumer is one region call gets its gradient added
to `.grad` while the region's backward runs, as eager does, instead of
being returned with all the others when the region's backward ends (which
held every parameter gradient of a region at once: 61 MB over resnet101's
eager peak for a region of 15 bottlenecks, bench/coverage.py). Everywhere
the direct path could change what eager computes (another consumer of the
parameter, a second forward, hooks, autograd.grad, backward(inputs=...)),
the gradient is returned as before. Every comparison is bitwise."""
import pytest
import torch
import torch.nn as nn

torch._C._set_graph_executor_optimize(False)

WIDTH = 256  # one weight is 256 KiB
DEPTH = 8


def mlp_region(x, w0, b0, w1, b1, w2, b2, w3, b3, w4, b4, w5, b5, w6, b6,
               w7, b7):
    for w, b in [(w0, b0), (w1, b1), (w2, b2), (w3, b3), (w4, b4), (w5, b5),
                 (w6, b6), (w7, b7)]:
        x = torch.tanh(torch.nn.functional.linear(x, w, b))
    return x


def region_ir() -> str:
    graph = torch.jit.script(mlp_region).inlined_graph
    torch._C._jit_pass_dce(graph)
    return str(graph)


IR = region_ir()


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH)
                                    for _ in range(DEPTH))

    def tensors(self):
        return [t for layer in self.layers for t in (layer.weight, layer.bias)]

    def eager(self, x):
        return mlp_region(x, *self.tensors())

    def region(self, runtime, x, name="mlp"):
        return runtime.checkpoint(IR, [x] + self.tensors(), [], [],
                                  ["keep"] * (1 + 2 * DEPTH), name)[0]


def pair(seed=0):
    torch.manual_seed(seed)
    eager = Layers()
    ours = Layers()
    ours.load_state_dict(eager.state_dict())
    return eager, ours


def assert_grads_equal(ours, eager):
    for (name, a), (_, e) in zip(ours.named_parameters(),
                                 eager.named_parameters()):
        if e.grad is None:
            assert a.grad is None, f"{name}: a gradient where eager has none"
            continue
        assert a.grad is not None, f"{name}: no gradient"
        assert torch.equal(a.grad, e.grad), f"{name}: gradients differ"


def run_both(eager, ours, step, runtime):
    """`step(model, forward)` runs one scenario; forward is the model's
    eager function or its region call."""
    out_e = step(eager, eager.eager)
    out_o = step(ours, lambda x, **kw: ours.region(runtime, x, **kw))
    for a, e in zip(out_o or [], out_e or []):
        assert torch.equal(a, e)
    assert_grads_equal(ours, eager)


@pytest.mark.parametrize("resident", [False, True],
                         ids=["grad-none", "grad-resident"])
def test_sole_use_gradients_bitwise(runtime, resident):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)

    def step(model, forward):
        if resident:
            for p in model.parameters():
                p.grad = torch.full_like(p, 0.5)
        for _ in range(2):  # the second backward adds into .grad
            forward(x.clone().requires_grad_()).sum().backward()

    run_both(eager, ours, step, runtime)


def test_peak_during_backward_matches_eager(runtime):
    """Resident `.grad` (optimizer.zero_grad() on 1.x): eager adds each
    weight gradient into `.grad` and frees it; returned together they would
    all be alive at the region's end, DEPTH weights over eager's peak."""
    eager, ours = pair()
    x = torch.randn(2, WIDTH)
    weight_bytes = WIDTH * WIDTH * 4
    peaks = {}
    runtime.enable_memory_stats()
    for label, model, forward in [
            ("eager", eager, eager.eager),
            ("ours", ours, lambda t: ours.region(runtime, t))]:
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        loss = forward(x.clone().requires_grad_()).sum()
        base = runtime.memory_stats()[0]
        runtime.reset_peak_memory_stats()
        loss.backward()
        peaks[label] = runtime.memory_stats()[1] - base
        del loss
    assert_grads_equal(ours, eager)
    # The recompute keeps the region's activations (a few KiB here); all
    # weight gradients at once would be 8 x 256 KiB more.
    assert peaks["ours"] <= peaks["eager"] + weight_bytes // 2, peaks


def test_parameter_also_used_outside_the_region(runtime):
    """An L2 term on one weight: eager sums both gradients before adding
    them to `.grad`; the region must return its part for that sum."""
    eager, ours = pair()
    x = torch.randn(4, WIDTH)

    def step(model, forward):
        for p in model.parameters():
            p.grad = torch.full_like(p, 0.25)
        loss = forward(x.clone().requires_grad_()).sum() + \
            1e-3 * model.layers[3].weight.square().sum() + \
            model.layers[5].bias.sum()
        loss.backward()

    run_both(eager, ours, step, runtime)


def test_two_forwards_before_one_backward(runtime):
    """A siamese use: the same region twice in one graph."""
    eager, ours = pair()
    x1, x2 = torch.randn(4, WIDTH), torch.randn(4, WIDTH)

    def step(model, forward):
        for p in model.parameters():
            p.grad = torch.full_like(p, -1.0)
        (forward(x1) * forward(x2)).sum().backward()

    run_both(eager, ours, step, runtime)


def test_retain_graph_twice(runtime):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)

    def step(model, forward):
        loss = forward(x.clone().requires_grad_()).sum()
        loss.backward(retain_graph=True)
        loss.backward()

    run_both(eager, ours, step, runtime)


def test_autograd_grad_leaves_dot_grad_alone(runtime):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)
    results = []
    for model, forward in [(eager, eager.eager),
                           (ours, lambda t: ours.region(runtime, t))]:
        loss = forward(x.clone().requires_grad_()).sum()
        results.append(torch.autograd.grad(loss, list(model.parameters())))
        assert all(p.grad is None for p in model.parameters())
    for a, e in zip(*results):
        assert torch.equal(a, e)


def test_backward_with_inputs_accumulates_only_those(runtime):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)

    def step(model, forward):
        loss = forward(x.clone().requires_grad_()).sum()
        loss.backward(inputs=[model.layers[2].weight, model.layers[6].bias])

    run_both(eager, ours, step, runtime)
    assert ours.layers[0].weight.grad is None


def test_parameter_hooks_see_the_gradient(runtime):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)
    seen = {"eager": [], "ours": []}

    def step_for(label):
        def step(model, forward):
            model.layers[4].weight.register_hook(
                lambda g: seen[label].append(g.clone()) or g * 2)
            forward(x.clone().requires_grad_()).sum().backward()
        return step

    eager_step, ours_step = step_for("eager"), step_for("ours")
    eager_step(eager, eager.eager)
    ours_step(ours, lambda t: ours.region(runtime, t))
    assert_grads_equal(ours, eager)
    assert len(seen["ours"]) == len(seen["eager"]) == 1
    assert torch.equal(seen["ours"][0], seen["eager"][0])


@pytest.mark.skipif(not hasattr(torch.Tensor,
                                "register_post_accumulate_grad_hook"),
                    reason="PyTorch 2.1+ only")
def test_post_accumulate_grad_hook_runs_once(runtime):
    eager, ours = pair()
    x = torch.randn(4, WIDTH)
    calls = {"eager": 0, "ours": 0}
    for label, model, forward in [
            ("eager", eager, eager.eager),
            ("ours", ours, lambda t: ours.region(runtime, t))]:
        def hook(p, label=label):
            calls[label] += 1
        model.layers[1].weight.register_post_accumulate_grad_hook(hook)
        forward(x.clone().requires_grad_()).sum().backward()
    assert calls == {"eager": 1, "ours": 1}
    assert_grads_equal(ours, eager)
