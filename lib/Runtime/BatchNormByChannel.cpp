//===- BatchNormByChannel.cpp - Batch-norm backward a chunk at a time -----===//
//
// On the CPU, ATen's training-mode batch-norm backward allocates a transient
// buffer the size of its input next to the input gradient, so at a ResNet
// stem four stem-sized tensors are live at once (the saved input, the output
// gradient, the input gradient and that buffer). memopt::batch_norm_by_channel
// computes at::batch_norm's forward with the same kernel and, in backward,
// hands the kernel a few channels at a time (BatchNormChunks.h): the
// transients shrink to a chunk. Every channel's statistics and gradients are
// computed only from that channel, by the same loops whatever the channel
// count, so the gradients are eager's bit for bit (test_runtime_saved_forms).
//
// Anything the chunked path does not cover (not CPU, not training, no
// gradient wanted, a non-contiguous input or gradient) runs at::batch_norm
// or one whole backward call, as eager does.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "memopt/Runtime/BatchNormChunks.h"
#include "memopt/Runtime/OpSchemas.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool requiresGrad(const c10::optional<at::Tensor> &tensor) {
  return tensor.has_value() && tensor->defined() && tensor->requires_grad();
}

at::Tensor narrowIfDefined(const at::Tensor &tensor, int64_t begin,
                           int64_t count) {
  return tensor.defined() ? tensor.narrow(0, begin, count) : at::Tensor();
}

struct BatchNormByChannelFunction
    : public torch::autograd::Function<BatchNormByChannelFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            const c10::optional<at::Tensor> &weight,
                            const c10::optional<at::Tensor> &bias,
                            const c10::optional<at::Tensor> &runningMean,
                            const c10::optional<at::Tensor> &runningVar,
                            double momentum, double eps) {
    auto [output, saveMean, saveInvstd] =
        at::native_batch_norm(input, weight, bias, runningMean, runningVar,
                              /*training=*/true, momentum, eps);
    ctx->save_for_backward(
        {input, weight.value_or(at::Tensor()), saveMean, saveInvstd});
    ctx->saved_data["eps"] = eps;
    // Which gradients to compute, by argument (needs_input_grad counts only
    // the optional tensors that were given).
    ctx->saved_data["mask"] = c10::List<bool>(
        {input.requires_grad(), requiresGrad(weight), requiresGrad(bias)});
    return output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("batch_norm_by_channel");
    variable_list result(7);
    const at::Tensor &grad = grads[0];
    if (!grad.defined())
      return result;
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &input = saved[0], &weight = saved[1],
                     &saveMean = saved[2], &saveInvstd = saved[3];
    const double eps = ctx->saved_data["eps"].toDouble();
    const c10::List<bool> wanted = ctx->saved_data["mask"].toBoolList();
    const std::array<bool, 3> mask = {wanted[0], wanted[1], wanted[2]};
    auto backwardOf = [&](const at::Tensor &g, const at::Tensor &x,
                          int64_t begin, int64_t count) {
      return at::native_batch_norm_backward(
          g, x, narrowIfDefined(weight, begin, count), at::Tensor(),
          at::Tensor(), narrowIfDefined(saveMean, begin, count),
          narrowIfDefined(saveInvstd, begin, count), /*train=*/true, eps, mask);
    };

    const int64_t channels = input.size(1);
    const int64_t planeBytes =
        input.numel() / std::max<int64_t>(channels, 1) * input.element_size();
    const int64_t step = getBatchNormChunkChannels(channels, planeBytes);
    if (step >= channels || !input.is_contiguous() || !grad.is_contiguous()) {
      std::tie(result[0], result[1], result[2]) =
          backwardOf(grad, input, 0, channels);
      return result;
    }

    at::Tensor gradInput, gradWeight, gradBias;
    const at::TensorOptions affine =
        weight.defined() ? weight.options() : input.options();
    if (mask[0])
      gradInput = at::empty_like(input, at::MemoryFormat::Contiguous);
    if (mask[1])
      gradWeight = at::empty({channels}, affine);
    if (mask[2])
      gradBias = at::empty({channels}, affine);
    for (int64_t begin = 0; begin < channels; begin += step) {
      const int64_t count = std::min(step, channels - begin);
      // Contiguous copies: the kernel's contiguous path, as eager takes it.
      at::Tensor x = input.narrow(1, begin, count).contiguous();
      at::Tensor g = grad.narrow(1, begin, count).contiguous();
      auto [gx, gw, gb] = backwardOf(g, x, begin, count);
      if (mask[0])
        gradInput.narrow(1, begin, count).copy_(gx);
      if (mask[1])
        gradWeight.narrow(0, begin, count).copy_(gw);
      if (mask[2])
        gradBias.narrow(0, begin, count).copy_(gb);
    }
    result[0] = gradInput;
    result[1] = gradWeight;
    result[2] = gradBias;
    return result;
  }
};

bool wantsGrad(const at::Tensor &input, const c10::optional<at::Tensor> &weight,
               const c10::optional<at::Tensor> &bias) {
  return at::GradMode::is_enabled() &&
         (input.requires_grad() || requiresGrad(weight) || requiresGrad(bias));
}

at::Tensor batchNormByChannel(const at::Tensor &input,
                              const c10::optional<at::Tensor> &weight,
                              const c10::optional<at::Tensor> &bias,
                              const c10::optional<at::Tensor> &runningMean,
                              const c10::optional<at::Tensor> &runningVar,
                              bool training, double momentum, double eps,
                              bool cudnnEnabled) {
  TORCH_CHECK(input.dim() >= 2,
              "memopt::batch_norm_by_channel: expected an input with a "
              "channel dimension (at least 2 dimensions), got ",
              input.dim());
  if (!training || !input.device().is_cpu() || !wantsGrad(input, weight, bias))
    return at::batch_norm(input, weight, bias, runningMean, runningVar,
                          training, momentum, eps, cudnnEnabled);
  return BatchNormByChannelFunction::apply(input, weight, bias, runningMean,
                                           runningVar, momentum, eps);
}

} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def(memopt::schemas::kBatchNormByChannel);
}

TORCH_LIBRARY_IMPL(memopt, CompositeImplicitAutograd, m) {
  m.impl("batch_norm_by_channel", &memopt::runtime::batchNormByChannel);
}
