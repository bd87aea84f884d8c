//===- DropoutMasked.cpp - Dropout that keeps a bit per value -------------===//
//
// On the CPU, at::dropout draws noise = bernoulli(1 - p) / (1 - p) into an
// input-sized tensor, returns input * noise, and autograd keeps the noise for
// backward (grad * noise). memopt::dropout_masked makes the same draws and the
// same product, but keeps one bit per value (whether it was kept) and
// multiplies the gradient by the noise rebuilt from it in backward (1.0 /
// (1 - p) computed by the same ATen op, or +0), in one pass for float and
// double, else a chunk at a time through ATen ops. Outputs, gradients and the
// generator's state after the call are eager's bit for bit
// (test_runtime_saved_forms.py).
//
// Anything else (evaluation, p of 0 or 1, no gradient wanted, a strided
// input, whose noise PyTorch 1.13 lays out contiguously and later versions
// like the input, not the CPU, whose fused kernel keeps a byte mask) runs
// at::dropout.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "CompressionBackends.h"
#include "MaskBits.h"
#include "memopt/Runtime/OpSchemas.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Whether bernoulli kept a value (drew 1.0).
at::Tensor isKept(const at::Tensor &chunk) { return chunk.ne(0); }

/// bernoulli's 1.0 / 0.0 draws, packed 8 per byte (MaskBits.h's order): the
/// spike compressor's vectorized kernel for the dtypes it takes.
at::Tensor packDraws(const at::Tensor &draws) {
  at::ScalarType dtype = draws.scalar_type();
  if (dtype != at::kFloat && dtype != at::kHalf && dtype != at::kBFloat16)
    return packMask(draws, isKept);
  int64_t firstInvalid = -1;
  return detail::compressCPU(draws, CompressionKind::Bit, /*check=*/false,
                             firstInvalid);
}

/// Values [begin, begin + count) of the noise: the kept ones as 1.0 in
/// `dtype`, divided by (1 - p) as at::dropout divides them.
at::Tensor noiseOf(const at::Tensor &bits, int64_t begin, int64_t count,
                   at::ScalarType dtype, double p) {
  return unpackMask(bits, begin, count).to(dtype).div_(1 - p);
}

/// Bytes [j0, j1) of the mask, eight values each. A function of its own so
/// that the pointers are plain arguments the vectorizer can trust.
template <typename T>
void maskedProductBytes(const uint8_t *bits, const T *grad, T *out, int64_t j0,
                        int64_t j1, T scale) {
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t byte = bits[j];
    for (int k = 0; k < 8; ++k)
      out[8 * j + k] = grad[8 * j + k] * (((byte >> k) & 1) ? scale : T(0));
  }
}

/// out = grad * noise for contiguous float / double tensors in one pass: the
/// noise value is `scale` where a bit is set, else +0, as eager's noise
/// holds, so every product is eager's.
template <typename T>
void maskedProduct(const uint8_t *bits, const T *grad, T *out, int64_t n,
                   T scale) {
  constexpr int64_t kGrainBytes = int64_t(1) << 12;
  const int64_t fullBytes = n / 8;
  at::parallel_for(0, (n + 7) / 8, kGrainBytes, [&](int64_t b0, int64_t b1) {
    maskedProductBytes(bits, grad, out, b0, std::min(b1, fullBytes), scale);
    for (int64_t i = 8 * std::max(b0, fullBytes); i < 8 * b1 && i < n; ++i)
      out[i] = grad[i] * (((bits[i / 8] >> (i % 8)) & 1) ? scale : T(0));
  });
}

struct DropoutMaskedFunction
    : public torch::autograd::Function<DropoutMaskedFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            double p) {
    // ATen's CPU dropout (_dropout_impl), step by step.
    at::Tensor noise = at::empty_like(input);
    noise.bernoulli_(1 - p);
    ctx->save_for_backward({packDraws(noise)});
    noise.div_(1 - p);
    ctx->saved_data["p"] = p;
    return input * noise;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("dropout_masked");
    variable_list result(2);
    const at::Tensor &grad = grads[0];
    if (!grad.defined())
      return result;
    const at::Tensor bits = ctx->get_saved_variables()[0];
    const double p = ctx->saved_data["p"].toDouble();
    const int64_t n = grad.numel();
    if (!grad.is_contiguous()) {
      // Eager's product, operand for operand (its result's strides follow).
      at::Tensor noise = noiseOf(bits, 0, n, grad.scalar_type(), p);
      result[0] = grad * noise.view(grad.sizes());
      return result;
    }
    at::Tensor gradInput = at::empty_like(grad);
    if (grad.scalar_type() == at::kFloat || grad.scalar_type() == at::kDouble) {
      // The noise value as at::dropout computes it (1.0 / (1 - p) in dtype).
      at::Tensor scale =
          noiseOf(at::ones({1}, bits.options()), 0, 1, grad.scalar_type(), p);
      AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "dropout_masked", [&] {
        maskedProduct<scalar_t>(
            bits.data_ptr<uint8_t>(), grad.data_ptr<scalar_t>(),
            gradInput.data_ptr<scalar_t>(), n, scale.item<scalar_t>());
      });
      result[0] = gradInput;
      return result;
    }
    at::Tensor flatGrad = grad.view({-1}), flatResult = gradInput.view({-1});
    for (int64_t begin = 0; begin < n; begin += kMaskChunk) {
      const int64_t count = std::min(kMaskChunk, n - begin);
      at::Tensor out = flatResult.slice(0, begin, begin + count);
      at::mul_out(out, flatGrad.slice(0, begin, begin + count),
                  noiseOf(bits, begin, count, grad.scalar_type(), p));
    }
    result[0] = gradInput;
    return result;
  }
};

at::Tensor dropoutMasked(const at::Tensor &input, double p, bool train) {
  // at::dropout returns the input itself for p = 0 and rejects p outside
  // [0, 1]; both, like p = 1 (all zeros), stay with it.
  bool packed = train && p > 0 && p < 1 && input.numel() > 0 &&
                input.device().is_cpu() && input.is_contiguous() &&
                at::GradMode::is_enabled() && input.requires_grad();
  if (!packed)
    return at::dropout(input, p, train);
  return DropoutMaskedFunction::apply(input, p);
}

} // namespace
} // namespace memopt::runtime

// CONSERVATIVE: TorchScript must neither merge two calls on one input nor
// drop one (each draws random numbers), as it treats aten::dropout.
TORCH_LIBRARY_FRAGMENT(memopt, m) {
  // Conservative aliasing (OpSchemas.h): it draws random numbers.
  m.def(torch::schema(memopt::schemas::kDropoutMasked,
                      c10::AliasAnalysisKind::CONSERVATIVE));
}

TORCH_LIBRARY_IMPL(memopt, CompositeImplicitAutograd, m) {
  m.impl("dropout_masked", &memopt::runtime::dropoutMasked);
}
