//===- SavedForms.cpp - ReLU and max-pool that keep less for backward -----===//
//
// memopt::relu_masked(_) computes at::relu(_) but keeps, instead of its
// result, one bit per value: whether the result is <= 0, which is all that
// threshold_backward(grad, result, 0) reads. memopt::max_pool2d_lean computes
// at::max_pool2d but keeps only the argmax indices and the input's sizes,
// which is all max_pool2d_with_indices_backward reads of its input. Both
// backward passes return exactly eager's gradient: the same ATen backward
// kernel, or the same select between the gradient and +0.
//
// The compiler (memopt-insert-saved-forms) uses them where no other op keeps
// the tensor, so the tensor itself is freed after forward.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "MaskBits.h"
#include "memopt/Runtime/OpSchemas.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Whether a value of ReLU's result is <= 0 (NaN is not: its gradient
/// passes, as in threshold_backward).
at::Tensor isNonPositive(const at::Tensor &chunk) { return chunk.le(0); }

/// threshold_backward(grad, result, 0) from the packed `result <= 0` mask.
at::Tensor maskedGrad(const at::Tensor &grad, const at::Tensor &bits,
                      at::IntArrayRef sizes) {
  if (!grad.is_contiguous())
    return grad.masked_fill(unpackMask(bits, 0, grad.numel()).view(sizes), 0);
  at::Tensor result = at::empty_like(grad);
  at::Tensor flatGrad = grad.view({-1}), flatResult = result.view({-1});
  for (int64_t begin = 0; begin < grad.numel(); begin += kMaskChunk) {
    const int64_t count = std::min(kMaskChunk, grad.numel() - begin);
    at::Tensor zero = unpackMask(bits, begin, count);
    flatResult.slice(0, begin, begin + count)
        .copy_(flatGrad.slice(0, begin, begin + count).masked_fill(zero, 0));
  }
  return result;
}

struct ReluMaskedFunction
    : public torch::autograd::Function<ReluMaskedFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &self,
                            bool inplace) {
    at::Tensor result;
    if (inplace) {
      ctx->mark_dirty({self});
      result = self.relu_();
    } else {
      result = at::relu(self);
    }
    ctx->save_for_backward({packMask(result, isNonPositive)});
    ctx->saved_data["sizes"] = result.sizes().vec();
    return result;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("relu_masked");
    const at::Tensor &grad = grads[0];
    variable_list result(2);
    if (!grad.defined())
      return result;
    const at::Tensor bits = ctx->get_saved_variables()[0];
    const std::vector<int64_t> sizes = ctx->saved_data["sizes"].toIntVector();
    result[0] = maskedGrad(grad, bits, sizes);
    return result;
  }
};

bool needsGrad(const at::Tensor &self) {
  return at::GradMode::is_enabled() && self.requires_grad();
}

at::Tensor reluMasked(const at::Tensor &self) {
  if (!needsGrad(self))
    return at::relu(self);
  return ReluMaskedFunction::apply(self, false);
}

at::Tensor reluMaskedInplace(at::Tensor &self) {
  if (!needsGrad(self))
    return at::relu_(self);
  return ReluMaskedFunction::apply(self, true);
}

struct MaxPoolLeanFunction
    : public torch::autograd::Function<MaxPoolLeanFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &self,
                            at::IntArrayRef kernel, at::IntArrayRef stride,
                            at::IntArrayRef padding, at::IntArrayRef dilation,
                            bool ceilMode) {
    auto [output, indices] = at::max_pool2d_with_indices(
        self, kernel, stride, padding, dilation, ceilMode);
    ctx->save_for_backward({indices});
    ctx->saved_data["sizes"] = self.sizes().vec();
    ctx->saved_data["kernel"] = kernel.vec();
    ctx->saved_data["stride"] = stride.vec();
    ctx->saved_data["padding"] = padding.vec();
    ctx->saved_data["dilation"] = dilation.vec();
    ctx->saved_data["ceil_mode"] = ceilMode;
    return output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("max_pool2d_lean");
    const at::Tensor &grad = grads[0];
    variable_list result(6);
    if (!grad.defined())
      return result;
    auto ints = [&](const char *key) {
      return ctx->saved_data[key].toIntVector();
    };
    // The backward kernel reads only the input's sizes and memory format:
    // a one-element tensor expanded to them (contiguous format) stands in.
    at::Tensor input = at::zeros({1}, grad.options()).expand(ints("sizes"));
    result[0] = at::max_pool2d_with_indices_backward(
        grad, input, ints("kernel"), ints("stride"), ints("padding"),
        ints("dilation"), ctx->saved_data["ceil_mode"].toBool(),
        ctx->get_saved_variables()[0]);
    return result;
  }
};

at::Tensor maxPool2dLean(const at::Tensor &self, at::IntArrayRef kernel,
                         at::IntArrayRef stride, at::IntArrayRef padding,
                         at::IntArrayRef dilation, bool ceilMode) {
  // A channels-last or strided input would give its gradient another
  // layout than the placeholder's: keep the input as eager does.
  if (!needsGrad(self) || !self.is_contiguous() ||
      self.suggest_memory_format() != at::MemoryFormat::Contiguous)
    return at::max_pool2d(self, kernel, stride, padding, dilation, ceilMode);
  return MaxPoolLeanFunction::apply(self, kernel, stride, padding, dilation,
                                    ceilMode);
}

} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def(memopt::schemas::kReluMasked);
  m.def(memopt::schemas::kReluMaskedInplace);
  m.def(memopt::schemas::kMaxPool2dLean);
}

TORCH_LIBRARY_IMPL(memopt, CompositeImplicitAutograd, m) {
  m.impl("relu_masked", &memopt::runtime::reluMasked);
  m.impl("relu_masked_", &memopt::runtime::reluMaskedInplace);
  m.impl("max_pool2d_lean", &memopt::runtime::maxPool2dLean);
}
