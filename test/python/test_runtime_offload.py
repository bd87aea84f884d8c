"""offload:host and offload:unified: exact no-ops on CPU tensors; the pinned
pool, its bound and the prefetch depth (exercised on CPU through the
simulation switch); and, where a GPU is present, real offload on CUDA."""
import pytest
import torch
import torch.nn.functional as F

torch._C._set_graph_executor_optimize(False)

POOL, DEPTH = 64 << 20, 2


def mlp_layer(x, w, b):
    return torch.tanh(F.linear(x, w, b))


MLP_LAYER = str(torch.jit.script(mlp_layer).graph)
STATS = ["tensors", "bytes", "fallbacks", "ahead", "reserved", "in_use"]


def stats(runtime):
    return dict(zip(STATS, runtime.offload_stats()))


@pytest.fixture
def offload(runtime):
    runtime.set_offload_config(POOL, DEPTH)
    runtime.reset_offload_stats()
    yield runtime
    runtime._set_offload_simulation(False)
    runtime.set_offload_config(POOL, DEPTH)


def make_layers(n, width, device="cpu"):
    torch.manual_seed(0)
    return [(torch.randn(width, width, device=device) * 0.3).requires_grad_()
            for _ in range(n)], [torch.randn(width, device=device)
                                 .requires_grad_() for _ in range(n)]


def eager_grads(x, ws, bs):
    h = x.clone().requires_grad_()
    out = h
    for w, b in zip(ws, bs):
        out = mlp_layer(out, w, b)
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    return out.detach(), grads


def region_forward(runtime, x, ws, bs, policy, hooks=None):
    h = x.clone().requires_grad_()
    out = h
    for i, (w, b) in enumerate(zip(ws, bs)):
        out = runtime.checkpoint(MLP_LAYER, [out, w, b], [],
                                 [policy, "keep", "keep"], f"mlp{i}")[0]
        if hooks is not None:
            hooks(i, out)
    return h, out


def assert_grads_equal(got, expected):
    for g, e in zip(got, expected):
        if g.device.type == "cpu":
            assert torch.equal(g, e), (g - e).abs().max()
        else:  # CUDA reductions are not bitwise reproducible run to run
            torch.testing.assert_close(g, e, rtol=0,
                                       atol=1e-6 * e.abs().max().item())


@pytest.mark.parametrize("policy", ["offload:host", "offload:unified"])
def test_cpu_offload_is_an_exact_no_op(offload, policy):
    ws, bs = make_layers(3, 16)
    x = torch.randn(5, 16)
    ref_out, ref = eager_grads(x, ws, bs)
    before = stats(offload)
    h, out = region_forward(offload, x, ws, bs, policy)
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert torch.equal(out, ref_out)
    assert_grads_equal(grads, ref)
    after = stats(offload)
    assert after["tensors"] == before["tensors"] == 0
    assert after["reserved"] == before["reserved"]


def test_unified_memory_support_reported(runtime):
    supported = runtime.unified_memory_supported()
    assert isinstance(supported, bool)
    if not torch.cuda.is_available():
        assert supported is False


def test_offload_config_validated(offload):
    with pytest.raises(RuntimeError, match="pool_bytes must be >= 0"):
        offload.set_offload_config(-1, 2)
    with pytest.raises(RuntimeError, match="prefetch_depth must be >= 0"):
        offload.set_offload_config(1 << 20, -3)


# --- the pool and the prefetch order, simulated on CPU ----------------------

def test_simulated_offload_exact_and_pool_returned(offload):
    offload._set_offload_simulation(True)
    ws, bs = make_layers(4, 64)
    x = torch.randn(32, 64)
    _, ref = eager_grads(x, ws, bs)
    h, out = region_forward(offload, x, ws, bs, "offload:host")
    s = stats(offload)
    assert s["tensors"] == 4 and s["bytes"] == 4 * 32 * 64 * 4
    assert s["in_use"] > 0 and s["fallbacks"] == 0
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert_grads_equal(grads, ref)
    assert stats(offload)["in_use"] == 0  # every buffer back in the pool
    reserved = stats(offload)["reserved"]
    # A second step reuses the buffers instead of growing the pool.
    h, out = region_forward(offload, x, ws, bs, "offload:host")
    torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert stats(offload)["reserved"] == reserved


@pytest.mark.parametrize("depth", [0, 1, 2, 3])
def test_prefetch_depth(offload, depth):
    offload._set_offload_simulation(True)
    offload.set_offload_config(POOL, depth)
    ws, bs = make_layers(5, 32)
    x = torch.randn(8, 32)
    seen = {}

    def record(grad):
        seen.setdefault("ahead", stats(offload)["ahead"])

    def hooks(i, out):
        if i == 3:  # the input of the last region: its grad is ready right
            out.register_hook(record)  # after the last region's backward

    h, out = region_forward(offload, x, ws, bs, "offload:host", hooks)
    torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    # The last region's backward fetched itself and `depth` regions ahead.
    assert seen["ahead"] == min(depth, 4)
    # Overall, every region but the last was fetched ahead when depth >= 1.
    assert stats(offload)["ahead"] == (4 if depth else 0)


# A compiled schedule (memopt-schedule-prefetch): region i's offloaded input
# comes back when the backward of TRIGGERS[i] starts, whatever the depth.
TRIGGERS = ["mlp3", "mlp3", "mlp2", "mlp4", "mlp4"]


def scheduled_forward(runtime, x, ws, bs, seen):
    h = x.clone().requires_grad_()
    out = h
    for i, (w, b) in enumerate(zip(ws, bs)):
        if i in (3, 4):  # region i's input: its grad is ready right after
            def record(grad, i=i):  # region i's backward
                seen.setdefault(i, stats(runtime)["ahead"])
            out.register_hook(record)
        out = runtime.checkpoint(MLP_LAYER, [out, w, b], [],
                                 [f"offload:host@{TRIGGERS[i]}", "keep",
                                  "keep"], f"mlp{i}")[0]
    return h, out


@pytest.mark.parametrize("depth", [0, 3])
def test_scheduled_prefetch_follows_triggers(offload, depth):
    offload._set_offload_simulation(True)
    offload.set_offload_config(POOL, depth)
    ws, bs = make_layers(5, 32)
    x = torch.randn(8, 32)
    _, ref = eager_grads(x, ws, bs)
    seen = {}
    h, out = scheduled_forward(offload, x, ws, bs, seen)
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert_grads_equal(grads, ref)
    # mlp4's backward fetched mlp3 ahead; mlp3's then fetched mlp0 and mlp1;
    # mlp2 waited for its own backward. The depth plays no part.
    assert seen == {4: 1, 3: 3}
    assert stats(offload)["ahead"] == 3
    assert stats(offload)["in_use"] == 0


def test_scheduled_prefetch_pairs_each_forward_with_its_trigger(offload):
    offload._set_offload_simulation(True)
    offload.set_offload_config(POOL, 0)
    ws, bs = make_layers(5, 32)
    x1, x2 = torch.randn(8, 32), torch.randn(8, 32)
    _, ref1 = eager_grads(x1, ws, bs)
    _, ref2 = eager_grads(x2, ws, bs)
    seen1, seen2 = {}, {}
    h1, out1 = scheduled_forward(offload, x1, ws, bs, seen1)
    h2, out2 = scheduled_forward(offload, x2, ws, bs, seen2)
    # The second forward's triggers took only its own groups.
    grads2 = torch.autograd.grad(out2.square().sum(), [h2] + ws + bs)
    assert seen2 == {4: 1, 3: 3}
    grads1 = torch.autograd.grad(out1.square().sum(), [h1] + ws + bs)
    assert seen1 == {4: 4, 3: 6}
    assert_grads_equal(grads1, ref1)
    assert_grads_equal(grads2, ref2)


def test_scheduled_policy_text_checked(offload):
    x = torch.randn(4, 16, requires_grad=True)
    w, b = torch.randn(16, 16), torch.randn(16)
    with pytest.raises(RuntimeError, match="names no region after '@'"):
        offload.checkpoint(MLP_LAYER, [x, w, b], [],
                           ["offload:host@", "keep", "keep"], "r")
    with pytest.raises(RuntimeError, match="unknown save policy 'offload:disk@r'"):
        offload.checkpoint(MLP_LAYER, [x, w, b], [],
                           ["offload:disk@r", "keep", "keep"], "r")
    offload._set_offload_simulation(True)
    with pytest.raises(RuntimeError,
                       match="offloaded inputs name different prefetch "
                             "triggers"):
        offload.checkpoint(MLP_LAYER, [x, w.requires_grad_(), b], [],
                           ["offload:host@a", "offload:host@b", "keep"], "r")


def test_pool_bound_falls_back_to_keeping(offload):
    offload._set_offload_simulation(True)
    ws, bs = make_layers(4, 64)
    x = torch.randn(64, 64)  # 16 KiB per saved activation
    _, ref = eager_grads(x, ws, bs)
    offload.set_offload_config(0, DEPTH)  # frees every idle buffer
    lent = stats(offload)["reserved"]  # still lent to live graphs, if any
    offload.set_offload_config(lent + 2 * 16384, DEPTH)  # room for two more
    h, out = region_forward(offload, x, ws, bs, "offload:host")
    s = stats(offload)
    assert (s["tensors"], s["fallbacks"]) == (2, 2)
    assert s["reserved"] <= lent + 2 * 16384
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert_grads_equal(grads, ref)
    offload.set_offload_config(1000, DEPTH)  # smaller than any request
    offload.reset_offload_stats()
    h, out = region_forward(offload, x, ws, bs, "offload:host")
    assert stats(offload)["fallbacks"] == 4
    assert stats(offload)["reserved"] == lent  # idle buffers were freed
    grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
    assert_grads_equal(grads, ref)


def test_simulated_offload_retain_graph(offload):
    offload._set_offload_simulation(True)
    ws, bs = make_layers(3, 16)
    x = torch.randn(4, 16)
    h, out = region_forward(offload, x, ws, bs, "offload:host")
    loss = out.square().sum()
    first = torch.autograd.grad(loss, ws, retain_graph=True)
    second = torch.autograd.grad(loss, ws)
    assert_grads_equal(second, first)
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(loss, ws)


# --- CUDA --------------------------------------------------------------------

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@cuda
@pytest.mark.parametrize("policy", ["offload:host", "offload:unified"])
def test_cuda_offload_frees_device_memory(offload, policy):
    if policy == "offload:unified" and not offload.unified_memory_supported():
        pytest.skip("no unified memory on this machine")
    ws, bs = make_layers(6, 1024, "cuda")
    x = torch.randn(512, 1024, device="cuda")
    _, ref = eager_grads(x, ws, bs)

    def saved_bytes(p):
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        h, out = region_forward(offload, x, ws, bs, p)
        torch.cuda.synchronize()
        used = torch.cuda.memory_allocated() - base
        grads = torch.autograd.grad(out.square().sum(), [h] + ws + bs)
        return used, grads

    kept, _ = saved_bytes("keep")
    moved, grads = saved_bytes(policy)
    activation = 512 * 1024 * 4
    # The five activations between regions left the device (the first
    # region's input h is offloaded too, but the caller still holds it).
    assert kept - moved >= 5 * activation, (kept, moved)
    assert stats(offload)["tensors"] == 6
    assert_grads_equal(grads, ref)


@cuda
def test_cuda_unified_unsupported_message(offload):
    if offload.unified_memory_supported():
        pytest.skip("unified memory is supported here")
    x = torch.randn(4, 4, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError,
                       match="memopt: unified memory unsupported: "):
        offload.checkpoint(MLP_LAYER, [x, x, x[0]], [],
                           ["offload:unified", "keep", "keep"], "um")
