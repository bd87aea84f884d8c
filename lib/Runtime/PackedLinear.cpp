//===- PackedLinear.cpp - Linear layer that keeps its input packed --------===//
//
// Forward is at::linear. Its backward is not one formula: at::linear is a
// composite whose decomposition depends on the input's rank and layout, the
// bias and the LibTorch version (compat::linearDecomposition,
// compat::matmulFoldsBatch), and autograd differentiates the ops it calls:
//
//   Addmm  addmm(bias, x2, w.t()), x2 = the 2-D input or the [-1, in] view of
//          the contiguous N-D input
//   Mm     matmul folding the input: x2 = x (2-D), x.unsqueeze(0) (1-D) or
//          x.reshape({-1, in}) (N-D); x2.mm(w.t()); then add_(bias)
//   Bmm    matmul that cannot fold the input (e.g. a 3-D input whose last two
//          dims are transposed): x.expand().reshape({b, n, in}).bmm(
//          w.t().expand({..., in, out}).reshape({b, in, out})); add_(bias)
//
// Backward applies the derivative formulas of addmm / mm / bmm / expand /
// reshape / t as written in PyTorch's derivatives.yaml and FunctionsManual
// (mm_mat1_backward, mm_mat2_backward; the bias gradient is at::sum_to of the
// gradient of the op that consumed it), with the same tensors, sizes and
// strides, so the results equal eager's bit for bit.
//
// memopt::linear_weight_rows is the same Function with the input kept as is
// ("keep") or packed, whose weight gradient, where eager would add it whole
// into a `.grad` of +0, is written straight into `.grad`: the same product
// and the same bits, without the weight-sized temporary. (It was once added
// a block of output rows at a time, hence the name; an optimized BLAS sums
// a block in another order than the whole product, so blocks matched eager
// only with the reference BLAS.)
//
//===----------------------------------------------------------------------===//

#include "BackwardChecks.h"
#include "CheckpointGradients.h"
#include "PackedInputOps.h"
#include "PackedInputSaved.h"

#include "memopt/Runtime/PackedInput.h"
#include "memopt/Runtime/TorchCompat.h"

#include <ATen/ExpandUtils.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace memopt::runtime {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr const char *kPackedLinearStateKey = "memopt_linear_packed";

enum class LinearPath { Addmm, Mm, Bmm };

struct LinearPackedState : torch::CustomClassHolder {
  PackedInputLayout layout;
  bool packed = false;
  /// The input is saved as is (linear_weight_rows with "keep").
  bool kept = false;
  /// Write the weight gradient into a `.grad` of +0 where possible.
  bool weightRows = false;
  LinearPath path = LinearPath::Mm;
  bool hasBias = false;
  std::vector<int64_t> biasSizes;
};

void checkLinearArgs(const at::Tensor &input, const at::Tensor &weight,
                     const char *op) {
  TORCH_CHECK(weight.dim() == 2, "memopt: ", op,
              ": expected a 2-D weight, got a ", weight.dim(), "-D one");
  TORCH_CHECK(input.dim() >= 1, "memopt: ", op,
              ": expected an input of at least 1 dimension, got a 0-D one");
}

LinearPath choosePath(const at::Tensor &input, const at::Tensor &weight,
                      const at::Tensor &bias) {
  if (compat::linearDecomposition(input, weight, bias) ==
      compat::LinearDecomposition::Addmm)
    return LinearPath::Addmm;
  if (input.dim() <= 2 || compat::matmulFoldsBatch(input, weight.t()))
    return LinearPath::Mm;
  return LinearPath::Bmm;
}

/// FunctionsManual.cpp's mm_mat1_backward for strided tensors (alpha = 1):
/// the gradient of mat1 in mat1.mm(mat2).
at::Tensor mmMat1Backward(const at::Tensor &grad, const at::Tensor &mat2,
                          at::IntArrayRef mat1Sizes,
                          at::IntArrayRef mat1Strides) {
  // A column-major mat1 gets a column-major gradient.
  if (mat1Strides[0] == 1 && mat1Strides[1] == mat1Sizes[0])
    return mat2.mm(grad.t()).t();
  return grad.mm(mat2.t());
}

/// FunctionsManual.cpp's mm_mat2_backward for strided tensors (alpha = 1).
at::Tensor mmMat2Backward(const at::Tensor &grad, const at::Tensor &mat1,
                          at::IntArrayRef mat2Sizes,
                          at::IntArrayRef mat2Strides) {
  if (mat2Strides[0] == 1 && mat2Strides[1] == mat2Sizes[0])
    return grad.t().mm(mat1).t();
  return mat1.t().mm(grad);
}

int64_t leadingNumel(at::IntArrayRef sizes, size_t trailing) {
  int64_t n = 1;
  for (size_t i = 0; i + trailing < sizes.size(); ++i)
    n *= sizes[i];
  return n;
}

/// Every element of the contiguous CPU tensor `t` is +0 (its bits, not its
/// value: -0 is not): every byte is zero. Read in place, stopping at the
/// first other byte; an ATen reduction would allocate a mask a quarter of
/// the weight's size.
bool isPositiveZero(const at::Tensor &t) {
  const auto *bytes = static_cast<const unsigned char *>(t.data_ptr());
  const size_t count = t.numel() * t.element_size();
  constexpr size_t kChunk = 4096;
  static const unsigned char zeros[kChunk] = {};
  for (size_t at = 0; at < count; at += kChunk)
    if (std::memcmp(bytes + at, zeros, std::min(kChunk, count - at)) != 0)
      return false;
  return true;
}

/// Writes mm_mat2_backward's product grad2^T x2 (the gradient of a
/// contiguous `weight`, as a contiguous [out, in] matrix) straight into
/// `weight`'s `.grad`, where eager's AccumulateGrad would add the whole
/// product into it: a CPU leaf whose `.grad` is allocated, contiguous, with
/// its dtype and sizes, and all +0 (zero_grad(set_to_none=False)), reached
/// by this call alone (directAccumulator) or by this call and one other.
/// The product is the call eager makes (same shapes and strides, so the
/// same bits whatever the BLAS: an optimized one sums a block of the rows
/// in another order than the whole product), and adding +0 afterwards
/// gives +0 + p's bits, as eager's addition (a -0 becomes +0). Of a weight
/// one more op uses (an LM head tied to its embedding), autograd sums the
/// two gradients, then adds the sum into `.grad`; adding the other when
/// autograd delivers it gives (0 + a) + b, the bits of 0 + (a + b).
/// Returns false, having written nothing, otherwise: then eager's whole
/// gradient is returned (a `.grad` that already holds a gradient, as in
/// gradient accumulation, gets the weight-sized temporary as in eager).
bool writeWeightGradientIntoGrad(const at::Tensor &grad2, const at::Tensor &x2,
                                 const at::Tensor &weight) {
  if (!weight.device().is_cpu() || !weight.is_contiguous() ||
      !x2.device().is_cpu())
    return false;
  at::Tensor accumulated = weight.grad();
  if (!accumulated.defined() || accumulated.layout() != at::kStrided ||
      !accumulated.is_contiguous() ||
      accumulated.scalar_type() != grad2.scalar_type() ||
      accumulated.sizes() != weight.sizes() || accumulated.requires_grad())
    return false;
  if (!directAccumulator(weight) && !accumulatorWithConsumers(weight, 2))
    return false;
  if (!isPositiveZero(accumulated))
    return false;
  at::mm_out(accumulated, grad2.t(), x2);
  accumulated.add_(0);
  return true;
}

/// Gradients of addmm / mm (the Addmm and Mm paths).
void matrixBackward(const LinearPackedState &state, const at::Tensor &grad,
                    const at::Tensor &x, const at::Tensor &weight,
                    const std::array<bool, 3> &mask, variable_list &result) {
  const at::Tensor wt = weight.t();
  const int64_t dim = x.dim();
  const int64_t out = weight.size(0);
  at::Tensor x2, grad2;
  if (dim == 2) {
    x2 = x;
    grad2 = grad;
  } else if (dim == 1) {
    x2 = x.unsqueeze(0);
    grad2 = grad.unsqueeze(0);
  } else {
    const int64_t rows = leadingNumel(x.sizes(), 1);
    x2 = state.path == LinearPath::Addmm
             ? x.contiguous().view({rows, x.size(-1)})
             : x.reshape({rows, x.size(-1)});
    grad2 = grad.reshape({rows, out});
  }
  if (mask[0]) {
    at::Tensor g = mmMat1Backward(grad2, wt, x2.sizes(), x2.strides());
    result[0] = dim == 2 ? g : dim == 1 ? g.squeeze(0) : g.reshape(x.sizes());
  }
  // Added into `.grad` already: nothing to return for the weight.
  const bool writtenIntoGrad = mask[1] && state.weightRows &&
                               writeWeightGradientIntoGrad(grad2, x2, weight);
  if (mask[1] && !writtenIntoGrad)
    result[1] = mmMat2Backward(grad2, x2, wt.sizes(), wt.strides()).t();
  if (mask[2])
    result[2] = at::sum_to(state.path == LinearPath::Addmm ? grad2 : grad,
                           state.biasSizes);
}

/// Gradients of matmul's bmm branch, then expand / reshape.
void batchedBackward(const LinearPackedState &state, const at::Tensor &grad,
                     const at::Tensor &x, const at::Tensor &weight,
                     const std::array<bool, 3> &mask, variable_list &result) {
  const at::Tensor wt = weight.t();
  const auto sizes = x.sizes();
  const int64_t n = sizes[sizes.size() - 2];
  const int64_t in = sizes.back();
  const int64_t out = weight.size(0);
  const int64_t batch = leadingNumel(sizes, 2);
  std::vector<int64_t> wtExpanded(sizes.begin(), sizes.end() - 2);
  wtExpanded.push_back(in);
  wtExpanded.push_back(out);
  const at::Tensor grad3 = grad.reshape({batch, n, out});
  if (mask[0]) {
    const at::Tensor wt3 = wt.expand(wtExpanded).reshape({batch, in, out});
    result[0] =
        at::sum_to(grad3.bmm(wt3.transpose(1, 2)).reshape(sizes), sizes);
  }
  if (mask[1]) {
    const at::Tensor x3 = x.expand(sizes).reshape({batch, n, in});
    at::Tensor gwt = x3.transpose(1, 2).bmm(grad3).reshape(wtExpanded);
    result[1] = at::sum_to(gwt, wt.sizes()).t();
  }
  if (mask[2])
    result[2] = at::sum_to(grad, state.biasSizes);
}

/// memopt::linear_weight_rows or memopt::linear_packed.
const c10::TypedOperatorHandle<packedops::LinearSignature> &
linearHandle(bool weightRows) {
  return weightRows ? packedops::linearWeightRowsHandle()
                    : packedops::linearPackedHandle();
}

struct LinearPackedFunction
    : public torch::autograd::Function<LinearPackedFunction> {
  /// `kind`: how the input is saved (nullopt: as is). `weightRows`: the
  /// weight gradient goes into `.grad` by row blocks where it can.
  static at::Tensor forward(AutogradContext *ctx, const at::Tensor &input,
                            const at::Tensor &weight,
                            const c10::optional<at::Tensor> &bias,
                            c10::string_view kindName,
                            c10::optional<CompressionKind> kind,
                            bool weightRows) {
    const char *opName = weightRows ? "linear_weight_rows" : "linear_packed";
    checkLinearArgs(input, weight, opName);
    auto state = c10::make_intrusive<LinearPackedState>();
    state->weightRows = weightRows;
    state->hasBias = bias.has_value() && bias->defined();
    if (state->hasBias)
      state->biasSizes = bias->sizes().vec();
    state->path =
        choosePath(input, weight, state->hasBias ? *bias : at::Tensor());
    // The input is needed only for the weight gradient (asked of the weight:
    // see ConvPackedFunction::forward).
    at::Tensor payload;
    if (weight.requires_grad() && kind) {
      payload = packInput(input, *kind, opName, state->layout);
      state->packed = true;
    } else {
      describeInput(input, state->layout);
      if (weight.requires_grad()) {
        payload = input; // what eager's addmm / mm keeps
        state->kept = true;
      }
    }
    at::Tensor output;
    {
      at::AutoDispatchBelowADInplaceOrView belowAutograd;
      output = linearHandle(weightRows).call(input, weight, bias, kindName);
    }
    ctx->save_for_backward({payload, weight});
    ctx->saved_data[kPackedLinearStateKey] = c10::IValue::make_capsule(state);
    return output;
  }

  static variable_list backward(AutogradContext *ctx, variable_list grads) {
    auto state = c10::static_intrusive_pointer_cast<LinearPackedState>(
        ctx->saved_data.at(kPackedLinearStateKey).toCapsule());
    refuseDoubleBackward(state->weightRows ? "linear_weight_rows"
                                           : "linear_packed");
    variable_list saved = ctx->get_saved_variables();
    const at::Tensor &payload = saved[0];
    const at::Tensor &weight = saved[1];

    variable_list result(6); // input, weight, bias, kind name, kind, rows
    const at::Tensor &grad = grads[0];
    if (!grad.defined())
      return result;
    const std::array<bool, 3> mask{ctx->needs_input_grad(0),
                                   ctx->needs_input_grad(1),
                                   state->hasBias && ctx->needs_input_grad(2)};
    // Without the weight gradient only the input's sizes and strides matter:
    // a meta tensor carries them for free.
    const at::Tensor x =
        state->kept && mask[1] ? payload
        : state->packed && mask[1]
            ? unpackInput(payload, state->layout)
            : inputPlaceholder(state->layout, grad.options().device(at::kMeta));
    if (state->path == LinearPath::Bmm)
      batchedBackward(*state, grad, x, weight, mask, result);
    else
      matrixBackward(*state, grad, x, weight, mask, result);
    return result;
  }
};

/// The Autograd kernel of both ops: the op below autograd when no gradient
/// is wanted, the Function otherwise.
at::Tensor linearAutogradKernel(const at::Tensor &input,
                                const at::Tensor &weight,
                                const c10::optional<at::Tensor> &bias,
                                c10::string_view kindName,
                                c10::optional<CompressionKind> kind,
                                bool weightRows) {
  const bool hasBias = bias.has_value() && bias->defined();
  const bool needsGrad = at::GradMode::is_enabled() &&
                         (input.requires_grad() || weight.requires_grad() ||
                          (hasBias && bias->requires_grad()));
  if (!needsGrad) {
    at::AutoDispatchBelowADInplaceOrView belowAutograd;
    return linearHandle(weightRows).call(input, weight, bias, kindName);
  }
  c10::optional<at::Tensor> definedBias;
  if (hasBias)
    definedBias = *bias;
  return LinearPackedFunction::apply(input, weight, definedBias, kindName, kind,
                                     weightRows);
}

c10::optional<CompressionKind> parseSavedInput(c10::string_view savedInput) {
  if (savedInput == "keep")
    return c10::nullopt;
  return parsePackedInputKind(savedInput, "linear_weight_rows");
}

} // namespace

namespace packedops {

at::Tensor linearForward(const at::Tensor &input, const at::Tensor &weight,
                         const c10::optional<at::Tensor> &bias,
                         c10::string_view kind) {
  parsePackedInputKind(kind, "linear_packed");
  checkLinearArgs(input, weight, "linear_packed");
  return at::linear(input, weight, bias);
}

at::Tensor linearAutograd(const at::Tensor &input, const at::Tensor &weight,
                          const c10::optional<at::Tensor> &bias,
                          c10::string_view kind) {
  return linearAutogradKernel(input, weight, bias, kind,
                              parsePackedInputKind(kind, "linear_packed"),
                              /*weightRows=*/false);
}

at::Tensor linearWeightRowsForward(const at::Tensor &input,
                                   const at::Tensor &weight,
                                   const c10::optional<at::Tensor> &bias,
                                   c10::string_view savedInput) {
  parseSavedInput(savedInput);
  checkLinearArgs(input, weight, "linear_weight_rows");
  return at::linear(input, weight, bias);
}

at::Tensor linearWeightRowsAutograd(const at::Tensor &input,
                                    const at::Tensor &weight,
                                    const c10::optional<at::Tensor> &bias,
                                    c10::string_view savedInput) {
  return linearAutogradKernel(input, weight, bias, savedInput,
                              parseSavedInput(savedInput),
                              /*weightRows=*/true);
}

} // namespace packedops

at::Tensor linearPacked(const at::Tensor &input, const at::Tensor &weight,
                        const c10::optional<at::Tensor> &bias,
                        CompressionKind kind) {
  return packedops::linearPackedHandle().call(input, weight, bias,
                                              compressionKindName(kind));
}

} // namespace memopt::runtime
