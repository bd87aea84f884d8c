//===- PackedMul.cpp - A product that keeps its binary factor packed ------===//
//
// memopt::mul_packed(binary, other, kind) is at::mul(binary, other) for two
// tensors of the same sizes and dtype, but autograd keeps `binary` packed
// (1 bit per value for "bit", a byte for "bool") instead of at full width.
// A spiking neuron's hard reset v * (1 - spike) is the case: mul keeps both
// factors for backward, and one of them is binary.
//
// Backward is eager's mul_tensor_backward for real tensors: the gradient of
// each factor is grad * the other factor (the same at::mul, so the same
// bits; +0/1 unpack to exactly what was packed). The compiler only emits it
// for factors proven binary (memopt-pack-saved-inputs); with the packed
// input check on, a value other than 0 and 1 raises instead.
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "PackedInputSaved.h"
#include "memopt/Runtime/OpSchemas.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char *kLayoutKey = "memopt_mul_packed";

struct MulLayout : torch::CustomClassHolder {
  PackedInputLayout layout;
};

void checkMulArgs(const at::Tensor &binary, const at::Tensor &other) {
  TORCH_CHECK(binary.sizes() == other.sizes(),
              "memopt: mul_packed: the factors must have the same sizes, got ",
              binary.sizes(), " and ", other.sizes());
  TORCH_CHECK(binary.scalar_type() == other.scalar_type(),
              "memopt: mul_packed: the factors must have the same dtype, got ",
              binary.scalar_type(), " and ", other.scalar_type());
}

struct MulPackedFunction : public torch::autograd::Function<MulPackedFunction> {
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &binary,
                            const at::Tensor &other, CompressionKind kind) {
    auto state = c10::make_intrusive<MulLayout>();
    // Each factor is needed only for the other's gradient. Asked of the
    // factors, not of ctx->needs_input_grad: in a region recomputed within
    // another region's backward, that answers for the graph task running,
    // which does not include this new node.
    at::Tensor payload, kept;
    if (other.requires_grad())
      payload = packInput(binary, kind, "mul_packed", state->layout);
    if (binary.requires_grad())
      kept = other;
    at::Tensor output = at::mul(binary, other);
    ctx->save_for_backward({payload, kept});
    ctx->saved_data[kLayoutKey] = c10::IValue::make_capsule(state);
    return output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    refuseDoubleBackward("mul_packed");
    auto state = c10::static_intrusive_pointer_cast<MulLayout>(
        ctx->saved_data.at(kLayoutKey).toCapsule());
    variable_list saved = ctx->get_saved_variables();
    variable_list result(3); // binary, other, kind
    const at::Tensor &grad = grads[0];
    if (!grad.defined())
      return result;
    if (ctx->needs_input_grad(0))
      result[0] = at::mul(grad, saved[1]);
    if (ctx->needs_input_grad(1))
      result[1] = at::mul(grad, unpackInput(saved[0], state->layout));
    return result;
  }
};

at::Tensor mulPacked(const at::Tensor &binary, const at::Tensor &other,
                     c10::string_view kind) {
  const CompressionKind parsed = parsePackedInputKind(kind, "mul_packed");
  checkMulArgs(binary, other);
  if (!at::GradMode::is_enabled() ||
      !(binary.requires_grad() || other.requires_grad()))
    return at::mul(binary, other);
  return MulPackedFunction::apply(binary, other, parsed);
}

} // namespace
} // namespace memopt::runtime

TORCH_LIBRARY_FRAGMENT(memopt, m) { m.def(memopt::schemas::kMulPacked); }

TORCH_LIBRARY_IMPL(memopt, CompositeImplicitAutograd, m) {
  m.impl("mul_packed", &memopt::runtime::mulPacked);
}
