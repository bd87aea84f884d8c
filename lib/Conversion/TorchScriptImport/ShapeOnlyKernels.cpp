//===- ShapeOnlyKernels.cpp - Results of heavy ops without their FLOPs ----===//
//
// The specializer runs every node once to learn result shapes and dtypes; it
// never folds tensor data. Convolutions, matrix products, batch norm, max
// pooling and dropout make up nearly all of that run's time, so for them the
// results are made up instead: zero tensors of the sizes, strides and dtype
// the kernel would return. Only where that is certain, though:
//   - linear, matmul, bmm, max_pool2d, dropout run on meta tensors: ATen's
//     own shape checks and stride rules, without data;
//   - conv1d/2d/3d and batch_norm have no meta kernel in every supported
//     LibTorch, so their (simple) size rules are written out here, for
//     contiguous float/double inputs on which the kernel cannot fail.
// Anything outside that domain (other dtypes or devices, named or empty
// tensors, aliasing results, inputs the kernel rejects) runs the real kernel,
// which also produces the real error message. The NodeEvaluator tracks that
// made-up data exists and never lets it reach anything that is folded.
//
// Once data is made up, data is all that in-place activations and additions
// (relu_, hardtanh_, add_) would change: they are skipped as well, under the
// same certainty rules (writing every made-up page would cost more than
// making it up).
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/MemoryOverlap.h>
#include <c10/util/strides.h>

#include <sys/mman.h>

using namespace mlir::memopt::detail;
using torch::jit::Node;

/// A zero tensor. Large ones get fresh anonymous pages, which read as zero
/// without being written: most made-up results are never read, and filling
/// them would cost about as much as all the rest of the import.
static at::Tensor zeros(at::IntArrayRef sizes, at::IntArrayRef strides,
                        const at::TensorOptions &options) {
  constexpr size_t kMinMappedBytes = size_t(1) << 20;
  size_t bytes = at::detail::computeStorageNbytes(sizes, strides,
                                                  options.dtype().itemsize());
  void *pages = bytes < kMinMappedBytes
                    ? MAP_FAILED
                    : mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED)
    return at::empty_strided(sizes, strides, options).zero_();
  return at::from_blob(
      pages, sizes, strides, [bytes](void *data) { munmap(data, bytes); },
      options);
}

/// A CPU tensor of a dtype every kernel below supports, with nothing that
/// changes a kernel's result metadata (names, lazy negation, empty dims).
static bool isPlainTensor(const at::Tensor &tensor, c10::ScalarType dtype) {
  return tensor.defined() && tensor.device().is_cpu() &&
         tensor.layout() == at::kStrided && tensor.scalar_type() == dtype &&
         (dtype == at::kFloat || dtype == at::kDouble) && !tensor.has_names() &&
         !tensor.is_neg() && !tensor.is_conj() && tensor.numel() > 0;
}

/// isPlainTensor and laid out as at::empty would lay it out.
static bool isPlainContiguous(const at::Tensor &tensor, c10::ScalarType dtype) {
  return isPlainTensor(tensor, dtype) && tensor.is_contiguous() &&
         tensor.suggest_memory_format() == at::MemoryFormat::Contiguous;
}

static const at::Tensor *optionalTensor(const c10::IValue &value) {
  return value.isTensor() ? &value.toTensor() : nullptr;
}

static bool allPositive(const std::vector<int64_t> &values) {
  return llvm::all_of(values, [](int64_t v) { return v > 0; });
}

/// aten::conv{1,2,3}d(input, weight, bias?, stride, padding, dilation,
/// groups) on a batched input: the checks of ATen's check_shape_forward and
/// conv2d's dtype check, then the output size formula.
static std::optional<at::Tensor> convolution(const torch::jit::Stack &stack,
                                             size_t spatialDims) {
  const at::Tensor &input = stack[0].toTensor();
  const at::Tensor &weight = stack[1].toTensor();
  const at::Tensor *bias = optionalTensor(stack[2]);
  c10::ScalarType dtype = input.scalar_type();
  if (!isPlainContiguous(input, dtype) || !isPlainContiguous(weight, dtype) ||
      (bias && !isPlainContiguous(*bias, dtype)) || !stack[3].isIntList() ||
      !stack[4].isIntList() || !stack[5].isIntList())
    return std::nullopt;
  std::vector<int64_t> stride = stack[3].toIntVector();
  std::vector<int64_t> padding = stack[4].toIntVector();
  std::vector<int64_t> dilation = stack[5].toIntVector();
  int64_t groups = stack[6].toInt();
  size_t rank = spatialDims + 2;
  if (input.dim() != int64_t(rank) || weight.dim() != int64_t(rank) ||
      stride.size() != spatialDims || padding.size() != spatialDims ||
      dilation.size() != spatialDims || !allPositive(stride) ||
      !allPositive(dilation) ||
      llvm::any_of(padding, [](int64_t p) { return p < 0; }) || groups <= 0)
    return std::nullopt;
  int64_t outChannels = weight.size(0);
  if (outChannels < groups || outChannels % groups != 0 ||
      input.size(1) != weight.size(1) * groups ||
      (bias && (bias->dim() != 1 || bias->size(0) != outChannels)))
    return std::nullopt;
  std::vector<int64_t> sizes = {input.size(0), outChannels};
  for (size_t i = 0; i < spatialDims; ++i) {
    int64_t padded = input.size(i + 2) + 2 * padding[i];
    int64_t kernel = dilation[i] * (weight.size(i + 2) - 1) + 1;
    if (padded < kernel)
      return std::nullopt;
    sizes.push_back((padded - kernel) / stride[i] + 1);
  }
  return zeros(sizes, c10::contiguous_strides(sizes), input.options());
}

/// aten::batch_norm(input, weight?, bias?, running_mean?, running_var?,
/// training, momentum, eps, cudnn_enabled): the result has the input's
/// shape. (The real kernel would also update the running statistics in
/// training mode: data, which the import never reads.)
static std::optional<at::Tensor> batchNorm(const torch::jit::Stack &stack) {
  const at::Tensor &input = stack[0].toTensor();
  c10::ScalarType dtype = input.scalar_type();
  if (!isPlainContiguous(input, dtype) || input.dim() < 2)
    return std::nullopt;
  int64_t features = input.size(1);
  for (size_t i = 1; i <= 4; ++i) {
    const at::Tensor *param = optionalTensor(stack[i]);
    if (param &&
        (!isPlainContiguous(*param, dtype) || param->numel() != features))
      return std::nullopt;
  }
  bool training = stack[5].toBool();
  if (!training && (!stack[3].isTensor() || !stack[4].isTensor()))
    return std::nullopt;
  return zeros(input.sizes(), c10::contiguous_strides(input.sizes()),
               input.options());
}

/// Ops whose result metadata their meta kernels (structured kernels, or
/// composites of them) compute exactly as on CPU: heavy ones, and (once data
/// is made up anyway) ones that only move a lot of memory.
static bool hasExactMetaKernel(const Node *node, bool dataMadeUp) {
  static const std::set<std::string> heavy = {"aten::linear", "aten::matmul",
                                              "aten::bmm", "aten::max_pool2d",
                                              "aten::dropout"};
  static const std::set<std::string> memoryBound = {
      "aten::cat", "aten::softmax", "aten::contiguous"};
  std::string kind = node->kind().toQualString();
  return heavy.count(kind) || (dataMadeUp && memoryBound.count(kind));
}

/// Runs `node` on meta copies of its tensor inputs and returns zero CPU
/// tensors shaped like the meta results.
static std::optional<std::vector<c10::IValue>>
runOnMeta(Node *node, const torch::jit::Stack &stack) {
  std::optional<c10::ScalarType> dtype;
  std::vector<at::Tensor> metaInputs;
  // Mixed dtypes fail on CPU, not necessarily on meta.
  auto toMeta = [&](const at::Tensor &tensor) -> std::optional<at::Tensor> {
    if (!dtype)
      dtype = tensor.scalar_type();
    if (!isPlainTensor(tensor, *dtype))
      return std::nullopt;
    metaInputs.push_back(at::empty_strided(tensor.sizes(), tensor.strides(),
                                           tensor.options().device(at::kMeta)));
    return metaInputs.back();
  };
  torch::jit::Stack meta;
  for (const c10::IValue &value : stack) {
    if (value.isTensor()) {
      std::optional<at::Tensor> tensor = toMeta(value.toTensor());
      if (!tensor)
        return std::nullopt;
      meta.push_back(*tensor);
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> tensors;
      for (const at::Tensor &element : value.toTensorVector()) {
        std::optional<at::Tensor> tensor = toMeta(element);
        if (!tensor)
          return std::nullopt;
        tensors.push_back(*tensor);
      }
      meta.push_back(tensors);
    } else if (value.isNone() || value.isScalar() || value.isIntList() ||
               value.isDoubleList() || value.isBoolList()) {
      // Numbers, None and number lists (kernel sizes): no hidden tensors.
      meta.push_back(value);
    } else {
      return std::nullopt;
    }
  }
  try {
    node->getOperation()(meta);
  } catch (const std::exception &) {
    return std::nullopt; // the real kernel reports it
  }
  std::vector<c10::IValue> results;
  for (const c10::IValue &value : meta) {
    if (!value.isTensor())
      return std::nullopt;
    const at::Tensor &result = value.toTensor();
    // A result that is an input (dropout in eval mode) must stay that
    // tensor: `is` and in-place updates see the difference.
    if (llvm::any_of(metaInputs,
                     [&](const at::Tensor &input) {
                       return result.is_alias_of(input);
                     }) ||
        !result.is_non_overlapping_and_dense())
      return std::nullopt;
    results.push_back(zeros(result.sizes(), result.strides(),
                            result.options().device(at::kCPU)));
  }
  return results;
}

std::optional<std::vector<c10::IValue>>
mlir::memopt::detail::runShapeOnly(Node *node, const torch::jit::Stack &stack,
                                   bool dataMadeUp) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema || node->outputs().size() != 1)
    return std::nullopt;
  std::string kind = node->kind().toQualString();
  // linear adds its bias in a CPU kernel whose broadcast check the meta
  // kernel lacks: only the common bias passes.
  if (kind == "aten::linear" &&
      (stack.size() != 3 || !stack[1].isTensor() ||
       stack[1].toTensor().dim() != 2 ||
       (!stack[2].isNone() &&
        (!stack[2].isTensor() || stack[2].toTensor().dim() != 1 ||
         stack[2].toTensor().size(0) != stack[1].toTensor().size(0)))))
    return std::nullopt;
  if (hasExactMetaKernel(node, dataMadeUp))
    return runOnMeta(node, stack);
  std::optional<at::Tensor> result;
  bool convolutionArgs = schema->overload_name().empty() && stack.size() == 7 &&
                         stack[0].isTensor() && stack[1].isTensor();
  if (kind == "aten::conv1d" && convolutionArgs)
    result = convolution(stack, 1);
  else if (kind == "aten::conv2d" && convolutionArgs)
    result = convolution(stack, 2);
  else if (kind == "aten::conv3d" && convolutionArgs)
    result = convolution(stack, 3);
  else if (kind == "aten::batch_norm" && schema->overload_name().empty() &&
           stack.size() == 9 && stack[0].isTensor())
    result = batchNorm(stack);
  if (!result)
    return std::nullopt;
  return std::vector<c10::IValue>{*result};
}

/// A tensor an in-place kernel may write without complaint: one memory
/// location per element.
static bool isWritable(const at::Tensor &tensor) {
  return isPlainTensor(tensor, tensor.scalar_type()) &&
         tensor.is_non_overlapping_and_dense();
}

bool mlir::memopt::detail::canSkipInPlaceUpdate(
    Node *node, const torch::jit::Stack &stack) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema || stack.empty() || !stack[0].isTensor() ||
      !isWritable(stack[0].toTensor()))
    return false;
  const at::Tensor &self = stack[0].toTensor();
  std::string kind = node->kind().toQualString();
  // No meta kernel in every LibTorch; on float tensors they cannot fail.
  if (kind == "aten::relu_")
    return stack.size() == 1;
  if (kind == "aten::hardtanh_")
    return stack.size() == 3 && stack[1].isScalar() && stack[2].isScalar() &&
           stack[1].toScalar().toDouble() <= stack[2].toScalar().toDouble();
  // Structured kernels: the meta kernel checks broadcasting and casting.
  if (kind != "aten::add_" && kind != "aten::sub_" && kind != "aten::mul_" &&
      kind != "aten::div_")
    return false;
  torch::jit::Stack meta;
  at::Tensor metaSelf;
  for (const c10::IValue &value : stack) {
    if (!value.isTensor()) {
      if (!value.isScalar() && !value.isNone() && !value.isString())
        return false;
      meta.push_back(value);
      continue;
    }
    const at::Tensor &tensor = value.toTensor();
    // Partial overlap with the written tensor is an error; full is not.
    if (!isPlainTensor(tensor, tensor.scalar_type()) ||
        at::get_overlap_status(self, tensor) == at::MemOverlapStatus::Partial)
      return false;
    meta.push_back(at::empty_strided(tensor.sizes(), tensor.strides(),
                                     tensor.options().device(at::kMeta)));
    if (!metaSelf.defined())
      metaSelf = meta.back().toTensor();
  }
  try {
    node->getOperation()(meta);
  } catch (const std::exception &) {
    return false;
  }
  return meta.size() == 1 && meta[0].isTensor() &&
         meta[0].toTensor().is_same(metaSelf) &&
         metaSelf.sizes() == self.sizes() &&
         metaSelf.strides() == self.strides();
}
