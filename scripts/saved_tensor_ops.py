"""The operators whose autograd behaviour gen_saved_tensor_table.py derives.

Each spec builds one TorchScript call in schema order from a shape config:
`T(shape)` is a float tensor argument that may require grad, `C(shape)` a
tensor that never does (running statistics, masks), anything else a constant
argument. Two configs per spec let the generator fit size rules for the
tensors an operator allocates and saves (dropout's noise, batch-norm's
statistics, max-pool's indices).
"""
import torch


class T:
    """A float tensor argument; `grad` says whether it may require grad.
    `values`: the tensor itself, made by a function of nothing, where random
    values would be invalid (an embedding bag's increasing offsets)."""

    def __init__(self, *shape, grad=True, dtype=torch.float32, binary=False,
                 values=None):
        self.shape, self.grad, self.dtype, self.binary = shape, grad, dtype, binary
        self.values = values


def C(*shape, dtype=torch.float32, binary=False, values=None):
    return T(*shape, grad=False, dtype=dtype, binary=binary, values=values)


# Shape configs: images (n, c, h, w) and sequences (n, s, d).
IMG = [dict(n=2, c=3, h=8, w=8), dict(n=3, c=4, h=6, w=10)]
SEQ = [dict(n=2, s=5, d=8), dict(n=3, s=7, d=6)]


# Group norm: groups that vary with the channels, so that the statistics
# size rule (samples x groups) is told apart from the channels.
GRP = [dict(n=2, c=4, h=8, w=8, g=2), dict(n=3, c=6, h=6, w=10, g=3)]


# Attention: (batch, heads, query length, key length, head dim), queries and
# keys of different lengths so that size rules tell them apart.
ATT = [dict(b=2, h=2, l=5, s=7, e=4), dict(b=3, h=2, l=6, s=4, e=8)]


def img(c):
    return T(c["n"], c["c"], c["h"], c["w"])


def seq(c):
    return T(c["n"], c["s"], c["d"])


def mat(c):
    return T(c["n"] * c["s"], c["d"])


def index3(c):
    """int64 indices along dim 1 of seq(c): 3 per row (gathers, scatters)."""
    return C(c["n"], 3, c["d"], dtype=torch.int64)


def labels(c):
    """One int64 index per row of mat(c): class labels, rows of a table."""
    return C(c["n"] * c["s"], dtype=torch.int64)


# (qualified name, overload, configs, builder). Overloads are those of
# torch.ops.aten (the dispatcher TorchScript calls too).
SPECS = [
    ("aten::conv2d", "default", IMG, lambda c: [
        img(c), T(5, c["c"], 3, 3), T(5), [1, 1], [1, 1], [1, 1], 1]),
    ("aten::conv2d", "default", IMG, lambda c: [
        img(c), T(5, c["c"], 3, 3), None, [2, 2], [1, 1], [1, 1], 1]),
    ("aten::conv1d", "default", SEQ, lambda c: [
        T(c["n"], c["d"], c["s"]), T(5, c["d"], 3), T(5), [1], [1], [1], 1]),
    ("aten::conv1d", "default", SEQ, lambda c: [
        T(c["n"], c["d"], c["s"]), T(5, c["d"], 3), None, [2], [0], [1], 1]),
    ("aten::conv3d", "default", IMG, lambda c: [
        T(c["n"], c["c"], 3, c["h"], c["w"]), T(5, c["c"], 3, 3, 3), T(5),
        [1, 1, 1], [1, 1, 1], [1, 1, 1], 1]),
    ("aten::conv3d", "default", IMG, lambda c: [
        T(c["n"], c["c"], 3, c["h"], c["w"]), T(5, c["c"], 1, 1, 1), None,
        [1, 2, 2], [0, 0, 0], [1, 1, 1], 1]),
    ("aten::conv_transpose1d", "default", SEQ, lambda c: [
        T(c["n"], c["d"], c["s"]), T(c["d"], 5, 2), T(5), [2], [0], [0], 1,
        [1]]),
    ("aten::conv_transpose1d", "default", SEQ, lambda c: [
        T(c["n"], c["d"], c["s"]), T(c["d"], 5, 3), None, [1], [1], [0], 1,
        [1]]),
    ("aten::conv_transpose2d", "input", IMG, lambda c: [
        img(c), T(c["c"], 5, 2, 2), T(5), [2, 2], [0, 0], [0, 0], 1, [1, 1]]),
    ("aten::conv_transpose2d", "input", IMG, lambda c: [
        img(c), T(c["c"], 5, 3, 3), None, [1, 1], [1, 1], [0, 0], 1, [1, 1]]),
    ("aten::conv_transpose3d", "input", IMG, lambda c: [
        T(c["n"], c["c"], 2, c["h"], c["w"]), T(c["c"], 5, 2, 2, 2), T(5),
        [2, 2, 2], [0, 0, 0], [0, 0, 0], 1, [1, 1, 1]]),
    ("aten::conv_transpose3d", "input", IMG, lambda c: [
        T(c["n"], c["c"], 2, c["h"], c["w"]), T(c["c"], 5, 1, 1, 1), None,
        [1, 1, 1], [0, 0, 0], [0, 0, 0], 1, [1, 1, 1]]),
    ("aten::_convolution", "default", IMG, lambda c: [
        img(c), T(5, c["c"], 3, 3), T(5), [1, 1], [1, 1], [1, 1], False,
        [0, 0], 1, False, False, True, True]),
    ("aten::batch_norm", "default", IMG, lambda c: [
        img(c), T(c["c"]), T(c["c"]), C(c["c"]), C(c["c"]), True, 0.1, 1e-5,
        True]),
    # Without running statistics (track_running_stats=False), without
    # affine parameters, and neither.
    ("aten::batch_norm", "default", IMG, lambda c: [
        img(c), T(c["c"]), T(c["c"]), None, None, True, 0.1, 1e-5, True]),
    ("aten::batch_norm", "default", IMG, lambda c: [
        img(c), None, None, C(c["c"]), C(c["c"]), True, 0.1, 1e-5, True]),
    ("aten::batch_norm", "default", IMG, lambda c: [
        img(c), None, None, None, None, True, 0.1, 1e-5, True]),
    ("aten::layer_norm", "default", SEQ, lambda c: [
        seq(c), [c["d"]], T(c["d"]), T(c["d"]), 1e-5, True]),
    # elementwise_affine=False (adaptive layer norms, DiT's adaLN).
    ("aten::layer_norm", "default", SEQ, lambda c: [
        seq(c), [c["d"]], None, None, 1e-5, True]),
    # F.normalize: a norm over one dim kept, clamped and expanded.
    ("aten::norm", "ScalarOpt_dim", SEQ, lambda c: [seq(c), 2.0, [2], True]),
    ("aten::norm", "Scalar", SEQ, lambda c: [seq(c), 2.0]),
    ("aten::expand_as", "default", SEQ, lambda c: [
        T(c["n"], c["s"], 1), seq(c)]),
    ("aten::linear", "default", SEQ, lambda c: [mat(c), T(4, c["d"]), T(4)]),
    ("aten::linear", "default", SEQ, lambda c: [seq(c), T(4, c["d"]), T(4)]),
    ("aten::linear", "default", SEQ, lambda c: [seq(c), T(4, c["d"]), None]),
    ("aten::matmul", "default", SEQ, lambda c: [mat(c), T(c["d"], 4)]),
    ("aten::matmul", "default", SEQ, lambda c: [seq(c), T(c["d"], 4)]),
    ("aten::matmul", "default", SEQ, lambda c: [
        seq(c), T(c["n"], c["d"], 4)]),
    # Batched over two dims (attention heads): both operands' batch dims
    # are merged by reshape, so either may be saved as a copy.
    ("aten::matmul", "default", SEQ, lambda c: [
        T(2, c["n"], c["s"], c["d"]), T(2, c["n"], c["d"], 4)]),
    ("aten::bmm", "default", SEQ, lambda c: [seq(c), T(c["n"], c["d"], 4)]),
    ("aten::baddbmm", "default", SEQ, lambda c: [
        T(c["n"], c["s"], 4), seq(c), T(c["n"], c["d"], 4), 1, 1]),
    ("aten::addmm", "default", SEQ, lambda c: [
        T(4), mat(c), T(c["d"], 4), 1, 1]),
    ("aten::mm", "default", SEQ, lambda c: [mat(c), T(c["d"], 4)]),
    ("aten::softmax", "int", SEQ, lambda c: [seq(c), -1, None]),
    # PyTorch >= 2.0; the CPU kernel it selects (flash attention, or the
    # math decomposition for dropout) decides what is saved. A nonzero
    # dropout_p is a row of its own (`[dropout]`, set by the memory model
    # from the constant argument).
    *[(op, "default", ATT, lambda c, p=p, causal=causal, mask=mask: [
        T(c["b"], c["h"], c["l"], c["e"]), T(c["b"], c["h"], c["s"], c["e"]),
        T(c["b"], c["h"], c["s"], c["e"]),
        C(c["l"], c["s"], dtype=mask) if mask else None, p, causal])
      for op, p in [("aten::scaled_dot_product_attention", 0.0),
                    ("aten::scaled_dot_product_attention[dropout]", 0.1)]
      for causal, mask in [(False, None), (True, None),
                           (False, torch.bool), (False, torch.float32)]
      if not (causal and mask)],
    ("aten::log_softmax", "int", SEQ, lambda c: [seq(c), -1, None]),
    ("aten::dropout", "default", IMG, lambda c: [img(c), 0.5, True]),
    ("aten::feature_dropout", "default", IMG, lambda c: [img(c), 0.5, True]),
    ("aten::dropout_", "default", IMG, lambda c: [img(c), 0.5, True]),
    ("aten::max_pool2d", "default", IMG, lambda c: [
        img(c), [2, 2], [2, 2], [0, 0], [1, 1], False]),
    ("aten::max_pool2d", "default", IMG, lambda c: [
        img(c), [3, 3], [2, 2], [1, 1], [1, 1], False]),
    ("aten::avg_pool2d", "default", IMG, lambda c: [
        img(c), [2, 2], [2, 2], [0, 0], False, True, None]),
    ("aten::adaptive_avg_pool2d", "default", IMG, lambda c: [img(c), [1, 1]]),
    ("aten::mean", "dim", IMG, lambda c: [img(c), [2, 3], False, None]),
    ("aten::mean", "dim", IMG, lambda c: [img(c), [0], False, None]),
    ("aten::mean", "default", IMG, lambda c: [img(c), None]),
    ("aten::sum", "dim_IntList", IMG, lambda c: [img(c), [0], False, None]),
    ("aten::sum", "default", IMG, lambda c: [img(c), None]),
    # Largest and smallest values: the whole tensor (a data check such as
    # `if h.abs().max() > t`) and along one dimension.
    ("aten::max", "default", IMG, lambda c: [img(c)]),
    ("aten::min", "default", IMG, lambda c: [img(c)]),
    ("aten::max", "dim", IMG, lambda c: [img(c), 1, False]),
    ("aten::min", "dim", IMG, lambda c: [img(c), 1, False]),
    ("aten::amax", "default", IMG, lambda c: [img(c), [1], False]),
    ("aten::amin", "default", IMG, lambda c: [img(c), [1], False]),
    ("aten::cat", "default", IMG, lambda c: [[img(c), img(c)], 1]),
    ("aten::stack", "default", IMG, lambda c: [[img(c), img(c)], 0]),
    ("aten::flatten", "using_ints", IMG, lambda c: [img(c), 1, -1]),
    ("aten::view", "default", IMG, lambda c: [img(c), [c["n"], -1]]),
    ("aten::reshape", "default", IMG, lambda c: [img(c), [c["n"], -1]]),
    ("aten::permute", "default", IMG, lambda c: [img(c), [0, 2, 3, 1]]),
    ("aten::transpose", "int", SEQ, lambda c: [seq(c), 0, 1]),
    ("aten::t", "default", SEQ, lambda c: [mat(c)]),
    ("aten::contiguous", "default", IMG, lambda c: [img(c), 0]),
    ("aten::unsqueeze", "default", SEQ, lambda c: [seq(c), 0]),
    ("aten::squeeze", "dim", SEQ, lambda c: [T(c["n"], 1, c["d"]), 1]),
    ("aten::unflatten", "int", SEQ, lambda c: [seq(c), -1, [2, -1]]),
    ("aten::expand", "default", SEQ, lambda c: [
        T(1, 1, c["d"]), [c["n"], 1, c["d"]], False]),
    ("aten::select", "int", SEQ, lambda c: [seq(c), 1, 0]),
    ("aten::slice", "Tensor", SEQ, lambda c: [seq(c), 1, 0, 2, 1]),
    ("aten::chunk", "default", SEQ, lambda c: [seq(c), 2, -1]),
    ("aten::split", "Tensor", SEQ, lambda c: [seq(c), 2, -1]),
    ("aten::unbind", "int", SEQ, lambda c: [seq(c), 0]),
    ("aten::clone", "default", SEQ, lambda c: [seq(c), None]),
    ("aten::detach", "default", SEQ, lambda c: [seq(c)]),
    ("aten::to", "dtype", SEQ, lambda c: [seq(c), torch.float32, False, False,
                                         None]),
    ("aten::to", "dtype", SEQ, lambda c: [seq(c), torch.float64, False, False,
                                         None]),
    ("aten::type_as", "default", SEQ, lambda c: [
        seq(c), T(c["n"], c["s"], c["d"], dtype=torch.float64)]),
    ("aten::to", "dtype", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool), torch.float32, False,
        False, None]),
    ("aten::type_as", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool), seq(c)]),
    ("aten::type_as", "default", SEQ, lambda c: [seq(c), seq(c)]),
    ("aten::zeros_like", "default", SEQ, lambda c: [seq(c), None, None, None,
                                                   None, None]),
    ("aten::ones_like", "default", SEQ, lambda c: [seq(c), None, None, None,
                                                  None, None]),
    ("aten::full_like", "default", SEQ, lambda c: [seq(c), 0.5, None, None,
                                                 None, None, None]),
    ("aten::empty_like", "default", SEQ, lambda c: [seq(c), None, None, None,
                                                   None, None]),
    ("aten::bernoulli_", "float", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"]), 0.5, None]),
    ("aten::masked_fill", "Scalar", SEQ, lambda c: [
        seq(c), C(c["n"], c["s"], c["d"], dtype=torch.bool), -1.0]),
    ("aten::heaviside", "default", SEQ, lambda c: [seq(c), C(1)]),
    ("aten::where", "self", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool), seq(c), seq(c)]),
    ("aten::clamp", "default", SEQ, lambda c: [seq(c), 0.0, 1.0]),
    # A data check on a mask (nn.Transformer's causal-mask detection).
    ("aten::all", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool)]),
    ("aten::any", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool)]),
    ("aten::clamp_min", "default", SEQ, lambda c: [seq(c), 0.0]),
    # In place (a weight clipped under no_grad, `x.clamp_(min=0)`).
    ("aten::clamp_", "default", SEQ, lambda c: [seq(c), 0.0, 1.0]),
    ("aten::clamp_min_", "default", SEQ, lambda c: [seq(c), 0.0]),
    ("aten::pow", "Tensor_Scalar", SEQ, lambda c: [seq(c), 2]),
    ("aten::exp", "default", SEQ, lambda c: [seq(c)]),
    ("aten::neg", "default", SEQ, lambda c: [seq(c)]),
    ("aten::sqrt", "default", SEQ, lambda c: [seq(c)]),
    ("aten::abs", "default", SEQ, lambda c: [seq(c)]),
    ("aten::square", "default", SEQ, lambda c: [seq(c)]),
    # Advanced indexing by integer tensors: rows of a table (6 x d) gathered
    # by a buffer of indices (Swin's relative position bias).
    ("aten::index", "Tensor", SEQ, lambda c: [
        T(6, c["d"]), [C(c["n"], c["s"], dtype=torch.int64)]]),
    # Padding (F.pad) and cyclic shifts (shifted windows).
    ("aten::pad", "default", IMG, lambda c: [
        img(c), [1, 2, 0, 1], "constant", None]),
    ("aten::constant_pad_nd", "default", IMG, lambda c: [
        img(c), [1, 2, 0, 1], 0.0]),
    ("aten::roll", "default", IMG, lambda c: [img(c), [1, -2], [2, 3]]),
    # Buffers made and filled in forward (attention masks: zeros, then
    # slice assignments).
    ("aten::new_zeros", "default", SEQ, lambda c: [
        seq(c), [c["s"], c["d"]], None, None, None, None]),
    ("aten::copy_", "default", SEQ, lambda c: [seq(c), seq(c), False]),
    ("aten::fill_", "Scalar", SEQ, lambda c: [seq(c), 1.0]),
    # Resampling (F.interpolate: segmentation heads, U-Net decoders, FPNs),
    # by output size and by scale factor.
    ("aten::upsample_nearest2d", "vec", IMG, lambda c: [
        img(c), [2 * c["h"], 2 * c["w"]], None]),
    ("aten::upsample_nearest2d", "vec", IMG, lambda c: [
        img(c), None, [2.0, 3.0]]),
    ("aten::upsample_bilinear2d", "vec", IMG, lambda c: [
        img(c), [2 * c["h"], 3 * c["w"]], False, None]),
    ("aten::upsample_bilinear2d", "vec", IMG, lambda c: [
        img(c), None, True, [2.0, 2.0]]),
    ("aten::upsample_bicubic2d", "vec", IMG, lambda c: [
        img(c), [2 * c["h"], 2 * c["w"]], False, None]),
    ("aten::upsample_nearest1d", "vec", SEQ, lambda c: [
        seq(c), [2 * c["d"]], None]),
    ("aten::upsample_linear1d", "vec", SEQ, lambda c: [
        seq(c), [2 * c["d"]], False, None]),
    ("aten::upsample_nearest3d", "vec", IMG, lambda c: [
        T(c["n"], c["c"], 2, c["h"], c["w"]), [4, c["h"], 2 * c["w"]], None]),
    ("aten::upsample_trilinear3d", "vec", IMG, lambda c: [
        T(c["n"], c["c"], 2, c["h"], c["w"]), [4, 2 * c["h"], c["w"]], False,
        None]),
    # Instance norm (with and without affine parameters), bilinear
    # sampling at a grid that needs a gradient too (RAFT's correlation
    # lookup, spatial transformers), coordinate grids and tiling.
    ("aten::instance_norm", "default", IMG, lambda c: [
        img(c), T(c["c"]), T(c["c"]), None, None, True, 0.1, 1e-5, False]),
    ("aten::instance_norm", "default", IMG, lambda c: [
        img(c), None, None, None, None, True, 0.1, 1e-5, False]),
    # track_running_stats=True: the running statistics are updated too.
    ("aten::instance_norm", "default", IMG, lambda c: [
        img(c), T(c["c"]), T(c["c"]), C(c["c"]), C(c["c"]), True, 0.1, 1e-5,
        False]),
    ("aten::instance_norm", "default", IMG, lambda c: [
        img(c), None, None, C(c["c"]), C(c["c"]), True, 0.1, 1e-5, False]),
    ("aten::grid_sampler", "default", IMG, lambda c: [
        img(c), T(c["n"], 5, 7, 2), 0, 0, True]),
    ("aten::meshgrid", "indexing", SEQ, lambda c: [
        [T(c["s"]), T(c["d"])], "ij"]),
    ("aten::repeat", "default", SEQ, lambda c: [seq(c), [2, 1, 3]]),
    # Group norm (with and without affine parameters), standard deviation
    # and variance over dims (weight standardization, statistics).
    ("aten::group_norm", "default", GRP, lambda c: [
        img(c), c["g"], T(c["c"]), T(c["c"]), 1e-5, True]),
    ("aten::group_norm", "default", GRP, lambda c: [
        img(c), c["g"], None, None, 1e-5, True]),
    ("aten::std", "dim", IMG, lambda c: [img(c), [1, 2, 3], True, True]),
    ("aten::var", "dim", IMG, lambda c: [img(c), [1, 2, 3], True, True]),
    # Message passing over a graph's edges: node rows gathered by index,
    # messages summed back into nodes (index_add). Not cumsum: its backward
    # (flip, cumsum, flip of the gradient) holds two more gradient-sized
    # buffers that no row says; unknown, it is over-approximated instead.
    ("aten::index_select", "default", SEQ, lambda c: [
        T(6, c["d"]), 0, labels(c)]),
    ("aten::index_add", "default", SEQ, lambda c: [
        T(6, c["d"]), 0, C(c["n"], dtype=torch.int64), T(c["n"], c["d"]),
        1]),
    ("aten::flip", "default", SEQ, lambda c: [seq(c), [1]]),
    # Triangles: causal masks built in forward, triangular products.
    ("aten::triu", "default", SEQ, lambda c: [seq(c), 1]),
    ("aten::tril", "default", SEQ, lambda c: [seq(c), 0]),
    # Top-k routing (mixtures of experts): values and their indices.
    ("aten::topk", "default", SEQ, lambda c: [seq(c), 2, -1, True, True]),
    # Patches (F.unfold / F.fold): 2 x 2 tiles.
    ("aten::im2col", "default", IMG, lambda c: [
        img(c), [2, 2], [1, 1], [0, 0], [2, 2]]),
    ("aten::col2im", "default", IMG, lambda c: [
        T(c["n"], 4 * c["c"], (c["h"] // 2) * (c["w"] // 2)),
        [c["h"], c["w"]], [2, 2], [1, 1], [0, 0], [2, 2]]),
    # Gathers and scatters along a dim by int64 indices (top-k routing,
    # one-hot codes: F.gumbel_softmax(hard=True) scatters 1.0 into zeros),
    # out of place and in place.
    ("aten::gather", "default", SEQ, lambda c: [
        seq(c), 1, index3(c), False]),
    ("aten::scatter", "src", SEQ, lambda c: [
        seq(c), 1, index3(c),
        T(c["n"], 3, c["d"])]),
    ("aten::scatter", "value", SEQ, lambda c: [
        seq(c), 1, index3(c), 1.0]),
    ("aten::scatter_", "src", SEQ, lambda c: [
        seq(c), 1, index3(c),
        T(c["n"], 3, c["d"])]),
    ("aten::scatter_", "value", SEQ, lambda c: [
        seq(c), 1, index3(c), 1.0]),
    ("aten::scatter_add", "default", SEQ, lambda c: [
        seq(c), 1, index3(c),
        T(c["n"], 3, c["d"])]),
    ("aten::scatter_add_", "default", SEQ, lambda c: [
        seq(c), 1, index3(c),
        T(c["n"], 3, c["d"])]),
    # Losses computed in forward (a model that returns its loss): class
    # indices below the 6 or 8 classes of the configs, mean reduction.
    ("aten::cross_entropy_loss", "default", SEQ, lambda c: [
        mat(c), labels(c), None, 1, -100, 0.0]),
    ("aten::cross_entropy_loss", "default", SEQ, lambda c: [
        mat(c), labels(c), None, 1, -100, 0.1]),
    ("aten::nll_loss_nd", "default", SEQ, lambda c: [
        mat(c), labels(c), None, 1, -100]),
    ("aten::nll_loss", "default", SEQ, lambda c: [
        mat(c), labels(c), None, 1, -100]),
    # Regression and binary losses (mean reduction), the target with a
    # gradient or without (a loss between two outputs, or one broadcast:
    # broadcast_tensors' elements follow the list); binary_cross_entropy
    # takes probabilities, and 2.x checks that its target is one. Their
    # forward temporaries the kernel probe measures (the catalog's
    # `Measured`).
    ("aten::mse_loss", "default", SEQ, lambda c: [seq(c), seq(c), 1]),
    ("aten::l1_loss", "default", SEQ, lambda c: [seq(c), seq(c), 1]),
    ("aten::smooth_l1_loss", "default", SEQ, lambda c: [
        seq(c), seq(c), 1, 1.0]),
    ("aten::huber_loss", "default", SEQ, lambda c: [seq(c), seq(c), 1, 1.0]),
    ("aten::binary_cross_entropy_with_logits", "default", SEQ, lambda c: [
        seq(c), seq(c), None, None, 1]),
    ("aten::binary_cross_entropy", "default", SEQ, lambda c: [
        T(c["n"], c["s"], c["d"], values=lambda: torch.rand(
            c["n"], c["s"], c["d"]) * 0.9 + 0.05),
        T(c["n"], c["s"], c["d"], values=lambda: torch.rand(
            c["n"], c["s"], c["d"])), None, 1]),
    ("aten::kl_div", "default", SEQ, lambda c: [seq(c), seq(c), 1, False]),
    # Space to depth (the inverse of pixel_shuffle), sliding windows as a
    # view (Tensor.unfold), operands broadcast to one shape (elementwise
    # losses on tensors of different shapes).
    ("aten::pixel_unshuffle", "default", IMG, lambda c: [img(c), 2]),
    ("aten::unfold", "default", SEQ, lambda c: [seq(c), 1, 2, 1]),
    ("aten::broadcast_tensors", "default", SEQ, lambda c: [
        [seq(c), T(1, c["s"], 1)]]),
    # Integer arithmetic on indices (slots of a routing table: idx % n).
    ("aten::remainder", "Scalar", SEQ, lambda c: [seq(c), 3.0]),
    ("aten::remainder", "Tensor", SEQ, lambda c: [seq(c), seq(c)]),
    ("aten::floor_divide", "default", SEQ, lambda c: [seq(c), seq(c)]),
    # Random fills in place (Gumbel noise: exponential_; initializers run
    # in forward): no autograd, like bernoulli_.
    ("aten::exponential_", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"]), 1.0, None]),
    ("aten::uniform_", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"]), 0.0, 1.0, None]),
    ("aten::normal_", "default", SEQ, lambda c: [
        C(c["n"], c["s"], c["d"]), 0.0, 1.0, None]),
    # Sampling (VAE reparameterization, noise injection): no autograd.
    ("aten::randn_like", "default", SEQ, lambda c: [
        seq(c), None, None, None, None, None]),
    ("aten::rand_like", "default", SEQ, lambda c: [
        seq(c), None, None, None, None, None]),
    # Complex weights from real parameters, and back (Fourier layers).
    ("aten::complex", "default", SEQ, lambda c: [seq(c), seq(c)]),
    ("aten::real", "default", SEQ, lambda c: [
        T(c["n"], c["s"], c["d"], dtype=torch.complex64)]),
    ("aten::imag", "default", SEQ, lambda c: [
        T(c["n"], c["s"], c["d"], dtype=torch.complex64)]),
    ("aten::view_as_real", "default", SEQ, lambda c: [
        T(c["n"], c["s"], c["d"], dtype=torch.complex64)]),
    ("aten::view_as_complex", "default", SEQ, lambda c: [
        T(c["n"], c["s"], 2)]),
    # Token embeddings: rows of the table (10 x d) picked by int64 indices.
    ("aten::embedding", "default", SEQ, lambda c: [
        T(10, c["d"]), C(c["n"], c["s"], dtype=torch.int64), -1, False,
        False]),
]

# Bags of embeddings (nn.EmbeddingBag: 1-D indices, one offset per bag of
# `s`), summed (mode 0) and averaged (mode 1).
for mode in (0, 1):
    SPECS.append(("aten::embedding_bag", "padding_idx", SEQ,
                  lambda c, mode=mode: [
                      T(10, c["d"]), labels(c),
                      C(c["n"], dtype=torch.int64, values=lambda: torch.arange(
                          0, c["n"] * c["s"], c["s"])),
                      False, mode, False, None, False, None]))

# Elementwise activations: (name, overload, extra constant args).
for name, extra in [
        ("relu", []), ("relu_", []), ("hardswish", []), ("hardswish_", []),
        ("silu", []), ("silu_", []), ("sigmoid", []), ("sigmoid_", []),
        ("tanh", []), ("tanh_", []), ("hardsigmoid", []),
        ("hardsigmoid_", []), ("gelu", ["none"]), ("gelu", ["tanh"]),
        ("hardtanh", [0.0, 6.0]), ("hardtanh_", [0.0, 6.0]),
        ("leaky_relu", [0.01]), ("elu", [1.0, 1, 1])]:
    SPECS.append(("aten::" + name, "default", IMG,
                  lambda c, extra=extra: [img(c)] + extra))

# Unary math (surrogate gradients such as SpikingJelly's ATan, softsign and
# erf forms; normalizations): what each saves is measured like the rest.
for name in ["atan", "tan", "sin", "cos", "asin", "acos", "sinh", "cosh",
             "asinh", "acosh", "atanh", "erf", "erfc", "expm1", "log",
             "log1p", "log2", "log10", "rsqrt", "reciprocal", "sign",
             "softplus", "mish", "selu", "celu"]:
    if hasattr(torch.ops.aten, name):
        SPECS.append(("aten::" + name, "default", SEQ,
                      lambda c: [seq(c)]))

# Binary arithmetic with tensor, broadcast-parameter and scalar operands.
for name in ["add", "sub", "mul", "div", "add_", "sub_", "mul_", "div_"]:
    alpha = [1] if name.startswith(("add", "sub")) else []
    SPECS += [
        ("aten::" + name, "Tensor", IMG,
         lambda c, a=alpha: [img(c), img(c)] + a),
        ("aten::" + name, "Tensor", IMG,
         lambda c, a=alpha: [img(c), T(c["c"], 1, 1)] + a),
        ("aten::" + name, "Scalar", IMG, lambda c, a=alpha: [img(c), 0.5] + a),
    ]
SPECS.append(("aten::rsub", "Scalar", IMG, lambda c: [img(c), 1.0, 1]))

# Comparisons and logical operators: never differentiable, boolean results.
for name in ["ge", "gt", "le", "lt", "eq", "ne"]:
    SPECS += [("aten::" + name, "Scalar", SEQ, lambda c: [seq(c), 0.5]),
              ("aten::" + name, "Tensor", SEQ, lambda c: [seq(c), seq(c)])]
for name in ["logical_and", "logical_or", "logical_xor", "__and__", "__or__"]:
    overload = "Tensor" if name.startswith("__") else "default"
    SPECS.append(("aten::" + name, overload, SEQ, lambda c: [
        C(c["n"], c["s"], c["d"], dtype=torch.bool),
        C(c["n"], c["s"], c["d"], dtype=torch.bool)]))
SPECS.append(("aten::logical_not", "default", SEQ, lambda c: [
    C(c["n"], c["s"], c["d"], dtype=torch.bool)]))
