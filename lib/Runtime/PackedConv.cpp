//===- PackedConv.cpp - Convolution that keeps its input packed -----------===//
//
// Forward is at::conv1d / conv2d / conv3d. What autograd records for those is
// one aten::convolution node (on the input unsqueezed to a batch of one when
// it is unbatched) whose backward is
//   at::convolution_backward(grad, input, weight, bias sizes, stride,
//                            padding, dilation, transposed=false,
//                            output_padding=0, groups, output_mask)
// with output_mask = which of input / weight / bias need a gradient. This
// function saves the input packed instead and calls exactly that.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "PackedInputOps.h"
#include "PackedInputSaved.h"

#include "memopt/Runtime/PackedInput.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char *kPackedConvStateKey = "memopt_conv_packed";

/// Everything backward needs besides the payload and the weight.
struct ConvPackedState : torch::CustomClassHolder {
  PackedInputLayout layout;
  bool packed = false; // the input was saved (the weight needed a gradient)
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  bool hasBias = false;
  std::vector<int64_t> biasSizes;
};

/// The non-tensor arguments of one call.
struct ConvCall {
  at::IntArrayRef stride, padding, dilation;
  int64_t groups;
  c10::string_view kindName;
  CompressionKind kind;
};

struct ConvPackedFunction
    : public torch::autograd::Function<ConvPackedFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias,
                            const ConvCall &call) {
    auto state = c10::make_intrusive<ConvPackedState>();
    // The input is needed only for the weight gradient. Whether that is
    // wanted is asked of the weight, not of ctx->needs_input_grad: in a
    // region recomputed within another region's backward, that answers for
    // the graph task running, which does not include this new node.
    at::Tensor payload;
    if (weight.requires_grad()) {
      payload = packInput(input, call.kind, "conv_packed", state->layout);
      state->packed = true;
    } else {
      describeInput(input, state->layout);
    }
    state->stride = call.stride.vec();
    state->padding = call.padding.vec();
    state->dilation = call.dilation.vec();
    state->groups = call.groups;
    state->hasBias = bias.has_value() && bias->defined();
    if (state->hasBias)
      state->biasSizes = bias->sizes().vec();

    at::Tensor output;
    {
      at::AutoDispatchBelowADInplaceOrView belowAutograd;
      output = packedops::convPackedHandle().call(
          input, weight, bias, call.stride, call.padding, call.dilation,
          call.groups, call.kindName);
    }
    ctx->save_for_backward({payload, weight});
    ctx->saved_data[kPackedConvStateKey] = c10::IValue::make_capsule(state);
    return output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("conv_packed");
    auto state = c10::static_intrusive_pointer_cast<ConvPackedState>(
        ctx->saved_data.at(kPackedConvStateKey).toCapsule());
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &payload = saved[0];
    const at::Tensor &weight = saved[1];

    // One gradient per forward argument. An absent bias is no autograd input,
    // so needs_input_grad(2) exists only with a bias.
    variable_list result(4);
    const at::Tensor &grad = grads[0];
    if (!grad.defined())
      return result;
    const std::array<bool, 3> mask{ctx->needs_input_grad(0),
                                   ctx->needs_input_grad(1),
                                   state->hasBias && ctx->needs_input_grad(2)};
    if (!mask[0] && !mask[1] && !mask[2])
      return result;

    at::Tensor input = state->packed && mask[1]
                           ? unpackInput(payload, state->layout)
                           : inputPlaceholder(state->layout, grad.options());
    at::Tensor gradOutput = grad;
    // at::convNd runs an unbatched input as a batch of one.
    const bool unbatched = input.dim() == weight.dim() - 1;
    if (unbatched) {
      input = input.unsqueeze(0);
      gradOutput = gradOutput.unsqueeze(0);
    }
    const std::vector<int64_t> outputPadding(
        static_cast<size_t>(std::max<int64_t>(weight.dim() - 2, 0)), 0);
    at::OptionalIntArrayRef biasSizes =
        state->hasBias ? at::OptionalIntArrayRef(state->biasSizes)
                       : at::OptionalIntArrayRef(c10::nullopt);
    auto grads3 = at::convolution_backward(
        gradOutput, input, weight, biasSizes, state->stride, state->padding,
        state->dilation, /*transposed=*/false, outputPadding, state->groups,
        mask);
    at::Tensor gradInput = std::get<0>(grads3);
    if (unbatched && gradInput.defined())
      gradInput = gradInput.squeeze(0);
    result[0] = mask[0] ? gradInput : at::Tensor();
    result[1] = mask[1] ? std::get<1>(grads3) : at::Tensor();
    result[2] = mask[2] ? std::get<2>(grads3) : at::Tensor();
    return result;
  }
};

} // namespace

namespace packedops {

at::Tensor convForward(const at::Tensor &input, const at::Tensor &weight,
                       const c10::optional<at::Tensor> &bias,
                       at::IntArrayRef stride, at::IntArrayRef padding,
                       at::IntArrayRef dilation, int64_t groups,
                       c10::string_view kind) {
  parsePackedInputKind(kind, "conv_packed");
  switch (weight.dim()) {
  case 3:
    return at::conv1d(input, weight, bias, stride, padding, dilation, groups);
  case 4:
    return at::conv2d(input, weight, bias, stride, padding, dilation, groups);
  case 5:
    return at::conv3d(input, weight, bias, stride, padding, dilation, groups);
  default:
    TORCH_CHECK(false,
                "memopt: conv_packed: expected a 3-, 4- or 5-D weight "
                "(conv1d, conv2d or conv3d), got a ",
                weight.dim(), "-D one");
  }
}

at::Tensor convAutograd(const at::Tensor &input, const at::Tensor &weight,
                        const c10::optional<at::Tensor> &bias,
                        at::IntArrayRef stride, at::IntArrayRef padding,
                        at::IntArrayRef dilation, int64_t groups,
                        c10::string_view kind) {
  const CompressionKind parsed = parsePackedInputKind(kind, "conv_packed");
  const bool needsGrad =
      at::GradMode::is_enabled() &&
      (input.requires_grad() || weight.requires_grad() ||
       (bias.has_value() && bias->defined() && bias->requires_grad()));
  if (!needsGrad) {
    at::AutoDispatchBelowADInplaceOrView belowAutograd;
    return convPackedHandle().call(input, weight, bias, stride, padding,
                                   dilation, groups, kind);
  }
  ConvCall call{stride, padding, dilation, groups, kind, parsed};
  c10::optional<at::Tensor> definedBias;
  if (bias.has_value() && bias->defined())
    definedBias = *bias;
  return ConvPackedFunction::apply(input, weight, definedBias, call);
}

} // namespace packedops

at::Tensor convPacked(const at::Tensor &input, const at::Tensor &weight,
                      const c10::optional<at::Tensor> &bias,
                      at::IntArrayRef stride, at::IntArrayRef padding,
                      at::IntArrayRef dilation, int64_t groups,
                      CompressionKind kind) {
  return packedops::convPackedHandle().call(input, weight, bias, stride,
                                            padding, dilation, groups,
                                            compressionKindName(kind));
}

} // namespace memopt::runtime
