//===- KernelWorkspace.cpp - transient buffers of CPU kernels -------------===//
//
// PyTorch 1.13 picks the CPU convolution kernel in
// aten/src/ATen/native/Convolution.cpp (`use_mkldnn`): oneDNN for float32
// unless the convolution is a 1x1, unstrided, undilated one on a batch under
// 16 with one intra-op thread (then `_slow_conv2d`, which for a 1x1 kernel
// needs no buffer), or a tiny single-image one. oneDNN (2.6, AVX2 here)
// computes in blocked layouts with 16 channels per block, so around each
// call the ideep glue allocates, in this order (measured):
//
//   forward           +src +wei +dst  -wei -src  +out -dst
//   backward data     +gy  +wei +gx'  -wei -gy   +gx  -gx'
//   backward weights  +gy  +src +gw' [+gb'] -src -gy [+gb] +gw -gw' [-gb']
//
// where primed buffers are blocked copies (channels padded to 16), `src` is
// reordered only when a group has 16 input channels or more (fewer: the
// "flat" first-layer kernel reads plain NCHW), and in the weight pass only
// from 4 channels on (padded to 8 below 16). Depthwise convolutions pad the
// channels to 16 as well; with a kernel other than 3x3 their weight pass
// uses a reference kernel with one output-gradient-sized buffer instead.
//
// These formulas hold for 1.13's oneDNN on AVX-512. An op carrying
// `high_water` (memopt-compile's kernel probe ran its kernels on the
// PyTorch and CPU the model trains on) takes the measured marks instead.
//
//===----------------------------------------------------------------------===//
#include "KernelWorkspace.h"
#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Runtime/BatchNormChunks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct ConvGeometry {
  int64_t n = 1, cin = 1, h = 1, w = 1, cout = 1, oh = 1, ow = 1, kh = 1,
          kw = 1, groups = 1, elementBytes = 4;
  bool strided = false, dilated = false, padded = false, isFloat32 = false;
};
} // namespace

static int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

static bool anyNot(const std::optional<SmallVector<int64_t>> &values,
                   int64_t expected) {
  if (!values)
    return true; // unknown: assume the general case
  return llvm::any_of(*values, [&](int64_t v) { return v != expected; });
}

/// Shapes and arguments of a 1-d or 2-d (not transposed) convolution.
static std::optional<ConvGeometry> getConvGeometry(TorchOp op) {
  WorkspaceRule rule = lookupOperator(op.getName()).workspace;
  unsigned groupsPos;
  if (rule == WorkspaceRule::Convolution) {
    groupsPos = 6;
  } else if (rule == WorkspaceRule::GeneralConvolution) {
    groupsPos = 8;
    auto transposed =
        op.getArgs().size() > 6 ? dyn_cast<BoolAttr>(op.getArgs()[6]) : nullptr;
    if (!transposed || transposed.getValue())
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  RankedTensorType input = op.getStaticTensorArg(0),
                   weight = op.getStaticTensorArg(1);
  auto output = op->getNumResults() == 1
                    ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                    : RankedTensorType();
  if (!input || !weight || !output || !output.hasStaticShape() ||
      input.getRank() != weight.getRank() ||
      output.getRank() != input.getRank() ||
      (input.getRank() != 3 && input.getRank() != 4))
    return std::nullopt;
  ConvGeometry g;
  ArrayRef<int64_t> in = input.getShape(), wt = weight.getShape(),
                    out = output.getShape();
  bool is2d = input.getRank() == 4;
  g.n = in[0];
  g.cin = in[1];
  g.h = is2d ? in[2] : 1;
  g.w = in.back();
  g.cout = out[1];
  g.oh = is2d ? out[2] : 1;
  g.ow = out.back();
  g.kh = is2d ? wt[2] : 1;
  g.kw = wt.back();
  auto groups = op.getConstantIntsArg(groupsPos);
  g.groups =
      groups && groups->size() == 1 ? std::max<int64_t>(1, (*groups)[0]) : 1;
  g.strided = anyNot(op.getConstantIntsArg(3), 1);
  // conv2d.padding takes "same" / "valid".
  if (auto mode = op.getArgs().size() > 4
                      ? dyn_cast<StringAttr>(op.getArgs()[4])
                      : nullptr)
    g.padded = mode.getValue() != "valid";
  else
    g.padded = anyNot(op.getConstantIntsArg(4), 0);
  g.dilated = anyNot(op.getConstantIntsArg(5), 1);
  g.isFloat32 = input.getElementType().isF32();
  g.elementBytes = getElementBytes(input.getElementType());
  return g;
}

/// aten/src/ATen/native/Convolution.cpp, ConvParams::use_mkldnn (1.13).
static bool usesOneDnn(const ConvGeometry &g, int threads) {
  if (!g.isFloat32)
    return false;
  bool worth = g.strided || g.dilated || g.n >= 16 || g.kw != 1 || g.kh != 1 ||
               threads > 1;
  bool notTiny = g.groups > 1 || (g.kw > 3 && g.kh > 3) || g.n > 1 ||
                 g.n * g.cin * g.h * g.w > 20480;
  return worth && notTiny;
}

namespace {
/// Bytes of the buffers in the allocation sequences of the file comment.
struct ConvBuffers {
  int64_t in, out, weight, bias;         // plain (what autograd sees)
  int64_t src, dst, wei, weiData, gradW; // blocked
  int64_t srcForWeights, gradBias;
  bool depthwise, referenceWeights;
};
} // namespace

static ConvBuffers getConvBuffers(const ConvGeometry &g) {
  ConvBuffers b;
  int64_t e = g.elementBytes, k = g.kh * g.kw;
  int64_t icg = g.cin / g.groups, ocg = g.cout / g.groups;
  b.in = g.n * g.cin * g.h * g.w * e;
  b.out = g.n * g.cout * g.oh * g.ow * e;
  b.weight = g.cout * icg * k * e;
  b.bias = g.cout * e;
  b.gradBias = roundUp(g.cout, 16) * e;
  b.depthwise = g.groups > 1 && icg == 1;
  b.referenceWeights = b.depthwise && (g.kh != 3 || g.kw != 3);
  if (b.depthwise) {
    int64_t c = roundUp(g.cin, 16), oc = roundUp(g.cout, 16);
    b.src = b.srcForWeights = g.n * c * g.h * g.w * e;
    b.dst = g.n * oc * g.oh * g.ow * e;
    b.wei = b.weiData = b.gradW = oc * k * e;
    return b;
  }
  int64_t icPad = g.groups * roundUp(icg, 16),
          ocPad = g.groups * roundUp(ocg, 16);
  bool flat = icg < 16;
  b.src = flat ? 0 : g.n * icPad * g.h * g.w * e;
  b.dst = g.n * ocPad * g.oh * g.ow * e;
  b.wei = ocPad * (flat ? icg : roundUp(icg, 16)) * k * e;
  b.weiData = ocPad * roundUp(icg, 16) * k * e;
  int64_t icWeights = icg < 4    ? icg
                      : icg < 16 ? roundUp(icg, 8)
                                 : roundUp(icg, 16);
  b.srcForWeights = icg < 4 ? 0 : g.n * g.groups * icWeights * g.h * g.w * e;
  b.gradW = ocPad * icWeights * k * e;
  return b;
}

bool mlir::memopt::isMatrixProductConvolution(TorchOp op, int threads) {
  std::optional<ConvGeometry> g = getConvGeometry(op);
  return g && g->isFloat32 && !usesOneDnn(*g, threads) && g->kh == 1 &&
         g->kw == 1 && !g->strided && !g->padded && !g->dilated;
}

int64_t
mlir::memopt::getContiguousCopyBytes(TorchOp op,
                                     function_ref<bool(Value)> isContiguous,
                                     const TrainingMemoryOptions &options) {
  if (!options.kernelWorkspaces ||
      lookupOperator(op.getName()).workspace != WorkspaceRule::LayerNorm ||
      op.getArgs().empty())
    return 0;
  auto ref = dyn_cast<OperandRefAttr>(op.getArgs()[0]);
  if (!ref)
    return 0;
  Value input = op->getOperand(ref.getIndex());
  if (isContiguous(input))
    return 0;
  return std::max<int64_t>(getDeviceBytes(input.getType()), 0);
}

int64_t
mlir::memopt::getForwardHighWater(TorchOp op,
                                  const TrainingMemoryOptions &options) {
  if (!options.kernelWorkspaces)
    return -1;
  if (KernelHighWaterAttr measured = op.getHighWaterAttr();
      measured && measured.getForward() >= 0)
    return measured.getForward();
  // The formulas are CPU kernels' (oneDNN, ATen's slow path); a GPU's
  // buffers are known only as measured there (applyDeviceKernelMarks).
  if (options.device != TrainingDevice::CPU)
    return -1;
  std::optional<ConvGeometry> g = getConvGeometry(op);
  if (!g)
    return -1;
  ConvBuffers b = getConvBuffers(*g);
  if (!usesOneDnn(*g, options.intraOpThreads)) {
    // _slow_conv2d: im2col columns unless the kernel is a plain 1x1.
    bool columns =
        g->kh != 1 || g->kw != 1 || g->strided || g->padded || g->dilated;
    return b.out + (columns ? g->n * g->cin * g->kh * g->kw * g->oh * g->ow *
                                  g->elementBytes
                            : 0);
  }
  return std::max(b.src + b.wei + b.dst, b.dst + b.out);
}

/// Training-mode batch-norm's CPU backward allocates, next to the input
/// gradient, a temporary of the input's size (measured: 2 x the input above
/// the live bytes; none when only the affine parameters need gradients).
/// With `backward = #memopt.backward<by_channel>` the runtime runs it a
/// chunk of channels at a time: the input gradient, plus the chunk's copies
/// of the input and output gradient, its input gradient and its temporary.
static int64_t getBatchNormBackwardHighWater(TorchOp op, bool inputGrad) {
  if (!op.isTrainingBatchNorm() || op->getNumOperands() == 0)
    return -1;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t input = getDeviceBytes(op->getOperand(0).getType());
  if (input < 0 || !type || type.getRank() < 2)
    return -1;
  int64_t transient = input;
  if (auto backward = op.getBackwardAttr();
      backward && backward.getKernel() == BackwardKernel::by_channel)
    transient = ::memopt::runtime::getBatchNormByChannelTransientBytes(
        type.getDimSize(1), input);
  if (inputGrad)
    return input + transient;
  // Without an input gradient ATen's kernel needs no buffer; by channel, a
  // chunk still holds its two copies (half of the four chunks).
  return transient < input ? transient / 2 : -1;
}

/// cuDNN's batch-norm backward needs no buffer beside the input gradient
/// (measured on an H100, docs/gpu.md), where the saved-tensor table, derived
/// on the CPU, has the CPU kernel's input-sized one.
static int64_t getCudaBatchNormBackwardHighWater(TorchOp op, bool inputGrad) {
  if (!op.isTrainingBatchNorm() || op->getNumOperands() == 0)
    return -1;
  int64_t input = getDeviceBytes(op->getOperand(0).getType());
  if (input < 0)
    return -1;
  return inputGrad ? getAllocatedBytes(input, TrainingDevice::CUDA) : 0;
}

/// The probe's measurement for these gradients, or -1. It measured the
/// weight and bias getting gradients together (both are parameters).
static int64_t getMeasuredBackward(TorchOp op, bool inputGrad, bool weightGrad,
                                   bool biasGrad) {
  KernelHighWaterAttr measured = op.getHighWaterAttr();
  if (!measured || (!inputGrad && !weightGrad && !biasGrad))
    return -1;
  // An optional attribute holding None (`Tensor?`) is no bias, as for the
  // probe.
  Value bias = op.getOperandArg(2);
  bool hasBias = bias && isa<TensorType>(bias.getType());
  if (hasBias && biasGrad != weightGrad)
    return -1;
  if (!hasBias && biasGrad)
    return -1;
  return measured.getBackward(inputGrad, weightGrad);
}

int64_t
mlir::memopt::getBackwardHighWater(TorchOp op, bool inputGrad, bool weightGrad,
                                   bool biasGrad,
                                   const TrainingMemoryOptions &options) {
  if (!options.kernelWorkspaces)
    return -1;
  WorkspaceRule rule = lookupOperator(op.getName()).workspace;
  if (rule == WorkspaceRule::BatchNorm)
    return options.device == TrainingDevice::CPU
               ? getBatchNormBackwardHighWater(op, inputGrad)
               : getCudaBatchNormBackwardHighWater(op, inputGrad);
  // Recurrent layers: the probe's mask is the input (arg 0) and the
  // parameter list (arg 2, which callers pass as the bias position).
  if (rule == WorkspaceRule::Recurrent) {
    KernelHighWaterAttr measured = op.getHighWaterAttr();
    return measured && (inputGrad || biasGrad)
               ? measured.getBackward(inputGrad, biasGrad)
               : -1;
  }
  // Kept control flow on tensor data (its branches', its loop's backward)
  // and operators the saved-tensor table lacks, measured whole
  // (lib/Probe/GraphRun.h); callers ask when some operand gets a gradient.
  if (op.getScript() || op.getMeasuredSavesAttr()) {
    KernelHighWaterAttr measured = op.getHighWaterAttr();
    return measured ? measured.getBackward(true, true) : -1;
  }
  if (int64_t measured =
          getMeasuredBackward(op, inputGrad, weightGrad, biasGrad);
      measured >= 0)
    return measured;
  if (options.device != TrainingDevice::CPU)
    return -1;
  std::optional<ConvGeometry> g = getConvGeometry(op);
  if (!g)
    return -1;
  ConvBuffers b = getConvBuffers(*g);
  int64_t gx = inputGrad ? b.in : 0, gw = weightGrad ? b.weight : 0,
          gb = biasGrad ? b.bias : 0;
  if (!usesOneDnn(*g, options.intraOpThreads)) {
    bool columns =
        g->kh != 1 || g->kw != 1 || g->strided || g->padded || g->dilated;
    return gx + gw + gb +
           (columns ? g->n * g->cin * g->kh * g->kw * g->oh * g->ow *
                          g->elementBytes
                    : 0);
  }
  int64_t high = 0;
  // The blocked input gradient is the size of the blocked input (or, for
  // the flat kernel, of the input with channels padded to 16).
  if (inputGrad) {
    int64_t gxBlocked = b.depthwise || b.src
                            ? b.src
                            : g->n * g->groups *
                                  roundUp(g->cin / g->groups, 16) * g->h *
                                  g->w * g->elementBytes;
    high = std::max(b.dst + b.weiData + gxBlocked, gxBlocked + gx);
  }
  if (weightGrad || biasGrad) {
    int64_t gbBlocked = biasGrad ? b.gradBias : 0;
    int64_t first = b.referenceWeights
                        ? b.gradW + b.out
                        : b.dst + b.srcForWeights + b.gradW + gbBlocked;
    high = std::max(high, gx + first);
    high = std::max(high, gx + b.gradW + gbBlocked + gb + gw);
  }
  return std::max(high, gx + gw + gb);
}

bool mlir::memopt::isGradientWrittenIntoGrad(
    TorchOp op, Value value, const TrainingMemoryOptions &options) {
  BackwardKernelAttr kernel = op.getBackwardAttr();
  if (!kernel || kernel.getKernel() != BackwardKernel::weight_rows ||
      options.gradBuffers != GradBuffers::Resident || options.worldSize > 1 ||
      value != op.getOperandArg(1))
    return false;
  RankedTensorType weight = op.getStaticTensorArg(1);
  return weight && weight.getRank() == 2 && weight.getDimSize(0) > 0;
}
