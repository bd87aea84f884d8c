//===- InsertCompression.cpp - memopt-insert-compression ------------------===//
//
// Packs binary saved tensors: the inputs convolutions and linear layers keep
// for their weight gradient (no recompute needed), and binary inputs of
// checkpoint regions. Keeps ReLU and dropout masks and max-pool indices
// instead of the tensors those ops save, and runs large batch-norm backwards
// by channel.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Planning/MemoryPlanner.h"
#include "memopt/Runtime/BatchNormChunks.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_INSERTCOMPRESSION
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// Convolutions with int[] padding, linear layers and products of two
/// tensors of one type: what the runtime's packed-input ops implement.
bool hasPackedInputVariant(TorchOp op) {
  if (op.getName() == "aten::mul")
    return op.getOverload().value_or("") == "Tensor" &&
           op->getNumOperands() == 2 &&
           op->getOperand(0).getType() == op->getOperand(1).getType();
  bool known = llvm::StringSwitch<bool>(op.getName())
                   .Cases("aten::conv1d", "aten::conv2d", "aten::conv3d", true)
                   .Case("aten::linear", true)
                   .Default(false);
  return known && op.getOverload().value_or("").empty();
}

/// An activation: not a function input, parameter or buffer (those stay
/// resident whatever autograd saves; isFreeValue covers them).
bool isActivation(Value value) { return !isFreeValue(value); }

/// Counts, per value, the ops that keep it for backward.
DenseMap<Value, unsigned> countKeepers(func::FuncOp func,
                                       const TrainingMemoryModel &memory) {
  DenseMap<Value, unsigned> keepers;
  for (Operation &op : func.getBody().front())
    for (Value saved : memory.getSavedValues(&op))
      ++keepers[saved];
  return keepers;
}

bool isStaticFloatTensor(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && isa<FloatType>(type.getElementType());
}

/// A training-mode batch-norm whose input spans more than one chunk of
/// channels: by channel, its backward needs a chunk of transient memory
/// instead of a second input-sized buffer.
bool hasChunkedBackward(TorchOp op) {
  if (!op.isTrainingBatchNorm() || op.getNumOperands() == 0 ||
      !isStaticFloatTensor(op.getOperand(0)))
    return false;
  auto type = cast<RankedTensorType>(op.getOperand(0).getType());
  if (type.getRank() < 2)
    return false;
  int64_t bytes = getDeviceBytes(type);
  return ::memopt::runtime::getBatchNormByChannelTransientBytes(
             type.getDimSize(1), bytes) < bytes;
}

/// A dropout whose noise autograd keeps (a constant p in (0, 1) or one known
/// at run time; training on or known at run time), on a contiguous input
/// (the runtime leaves a strided one to at::dropout).
bool keepsDropoutNoise(TorchOp op, const TrainingMemoryModel &memory) {
  if (op.getName() != "aten::dropout" || op.getOverload().value_or("") != "" ||
      op.getArgs().size() != 3 || op.getNumOperands() == 0 ||
      !isStaticFloatTensor(op.getOperand(0)) || memory.getSavedBytes(op) <= 0 ||
      !memory.isContiguous(op.getOperand(0)))
    return false;
  // A constant p = 0 or training off saves nothing (the memory model knows
  // those return their input); p = 1 (all zeros) stays with at::dropout.
  auto p = dyn_cast<FloatAttr>(op.getArgs()[1]);
  return !p || (p.getValueAsDouble() > 0 && p.getValueAsDouble() < 1);
}

/// Max-pools first (they stop keeping their input, often a ReLU's result),
/// then ReLUs whose result nothing else keeps, then (with `dropoutMasks`)
/// dropouts, whose noise only they keep.
void insertSavedForms(func::FuncOp func, bool dropoutMasks) {
  MLIRContext *context = func.getContext();
  Block &body = func.getBody().front();
  for (auto op : body.getOps<TorchOp>())
    if (op.getName() == "aten::max_pool2d" &&
        op.getOverload().value_or("").empty() && !op.getSavedFormAttr() &&
        op.getNumOperands() > 0 && isActivation(op.getOperand(0)) &&
        isStaticFloatTensor(op.getOperand(0)))
      op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::indices));
  TrainingMemoryModel memory(func);
  DenseMap<Value, unsigned> keepers = countKeepers(func, memory);
  for (auto op : body.getOps<TorchOp>()) {
    if ((op.getName() != "aten::relu" && op.getName() != "aten::relu_") ||
        op.getSavedFormAttr() || op.getNumOperands() == 0 ||
        op->getNumResults() != 1)
      continue;
    Value result = op->getResult(0);
    // Only the ReLU itself keeps it (a ReLU without gradient keeps nothing).
    if (isStaticFloatTensor(result) && keepers.lookup(result) == 1 &&
        llvm::is_contained(memory.getSavedValues(op), result))
      op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::mask));
  }
  if (dropoutMasks)
    for (auto op : body.getOps<TorchOp>())
      if (!op.getSavedFormAttr() && keepsDropoutNoise(op, memory))
        op.setSavedFormAttr(SavedFormAttr::get(context, SavedForm::mask));
}

struct InsertCompressionPass
    : public mlir::memopt::impl::InsertCompressionBase<InsertCompressionPass> {
  using InsertCompressionBase::InsertCompressionBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    SmallVector<std::string> assumed(assumeBinary.begin(), assumeBinary.end());
    BinaryValueAnalysis binary(func, assumed);
    MLIRContext *context = &getContext();
    auto bit = CompressPolicyAttr::get(context, CompressionKind::bit);

    if (savedInputs) {
      TrainingMemoryModel memory(func);
      // Budgets in percent and reports refer to the model as written, before
      // any memopt transformation.
      if (!func->hasAttr(kUnplannedPeakAttrName))
        func->setAttr(kUnplannedPeakAttrName,
                      IntegerAttr::get(IntegerType::get(context, 64),
                                       memory.predictPeak()));
      // How many ops keep each value: packing one copy frees nothing while
      // another op keeps the full tensor.
      DenseMap<Value, unsigned> keepers = countKeepers(func, memory);
      for (Operation &nested : func.getBody().front()) {
        auto op = dyn_cast<TorchOp>(&nested);
        if (!op || op.getSavedInputAttr() || !hasPackedInputVariant(op) ||
            op.getNumOperands() == 0)
          continue;
        auto packable = [&](Value input) {
          return isActivation(input) && binary.isBinary(input) &&
                 isCompressibleTensor(input.getType()) &&
                 llvm::is_contained(memory.getSavedValues(op), input) &&
                 keepers.lookup(input) <= 1;
        };
        // A product is the same bit for bit either way round, and so are
        // its factors' gradients: put the binary factor first.
        if (!packable(op.getOperand(0)) && op.getName() == "aten::mul" &&
            packable(op.getOperand(1)))
          op->setOperands({op.getOperand(1), op.getOperand(0)});
        else if (!packable(op.getOperand(0)))
          continue;
        op.setSavedInputAttr(bit);
      }
    }

    if (savedForms)
      insertSavedForms(func, dropoutMasks);
    if (batchNormByChannel)
      for (auto op : func.getBody().front().getOps<TorchOp>())
        if (!op.getBackwardAttr() && hasChunkedBackward(op))
          op.setBackwardAttr(
              BackwardKernelAttr::get(context, BackwardKernel::by_channel));

    if (regions) {
      func.walk([&](CheckpointOp region) {
        SmallVector<Attribute> policies(region.getPolicies().begin(),
                                        region.getPolicies().end());
        bool changed = false;
        for (auto [i, input] : llvm::enumerate(region.getInputs()))
          if (isa<KeepPolicyAttr>(policies[i]) && isActivation(input) &&
              binary.isBinary(input) && isCompressibleTensor(input.getType())) {
            policies[i] = bit;
            changed = true;
          }
        if (changed)
          region.setPoliciesAttr(ArrayAttr::get(context, policies));
      });
    }
  }
};
} // namespace
