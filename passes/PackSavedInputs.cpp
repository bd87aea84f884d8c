//===- PackSavedInputs.cpp - memopt-pack-saved-inputs ---------------------===//
//
// Spike compression without recompute: a convolution, linear layer or
// product that keeps a binary activation for its backward keeps it at one
// bit per value (the runtime's packed-input ops), unless that raises the
// predicted peak (its own backward is the peak).
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_PACKSAVEDINPUTS
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

struct PackSavedInputsPass
    : public mlir::memopt::impl::PackSavedInputsBase<PackSavedInputsPass> {
  using PackSavedInputsBase::PackSavedInputsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    FailureOr<BinaryValueAnalysis> binary =
        analyzeBinaryValues(func, *assumeBinary);
    if (failed(binary))
      return signalPassFailure();
    TrainingMemoryModel memory(func);
    DenseMap<Value, unsigned> keepers =
        memory.countKeepers(func.getBody().front());
    int64_t unpackedPeak = memory.predictPeak();
    auto bit = CompressPolicyAttr::get(&getContext(), CompressionKind::bit);
    SmallVector<TorchOp> packed;
    for (Operation &nested : func.getBody().front()) {
      auto op = dyn_cast<TorchOp>(&nested);
      if (!op || op.getSavedInputAttr() || !hasPackedInputVariant(op) ||
          op.getNumOperands() == 0)
        continue;
      // An activation (inputs, parameters and buffers stay resident
      // whatever autograd keeps) that only this op keeps.
      auto packable = [&](Value input) {
        return !isFreeValue(input) && binary->isBinary(input) &&
               isCompressibleTensor(input.getType()) &&
               llvm::is_contained(memory.getSavedValues(op), input) &&
               keepers.lookup(input) <= 1;
      };
      // A product is the same bit for bit either way round, and so are its
      // factors' gradients: put the binary factor first.
      if (!packable(op.getOperand(0)) && op.getName() == "aten::mul" &&
          packable(op.getOperand(1)))
        op->setOperands({op.getOperand(1), op.getOperand(0)});
      else if (!packable(op.getOperand(0)))
        continue;
      op.setSavedInputAttr(bit);
      packed.push_back(op);
    }
    keepPeakAtMost(func, packed, unpackedPeak);
  }

  /// Where the peak is one packing op's backward, its input is unpacked
  /// there beside the packed copy: that pack raises the peak. Drops packs,
  /// one at a time, while that lowers the peak, until it is at most
  /// `unpackedPeak` (all of them if it must): packing never makes the
  /// peak worse.
  static void keepPeakAtMost(func::FuncOp func, ArrayRef<TorchOp> packed,
                             int64_t unpackedPeak) {
    if (packed.empty())
      return;
    auto peak = [&] { return TrainingMemoryModel(func).predictPeak(); };
    int64_t current = peak();
    for (TorchOp op : packed) {
      if (current <= unpackedPeak)
        return;
      op.removeSavedInputAttr();
      int64_t without = peak();
      if (without < current)
        current = without;
      else
        op.setSavedInputAttr(
            CompressPolicyAttr::get(op.getContext(), CompressionKind::bit));
    }
    if (current > unpackedPeak)
      for (TorchOp op : packed)
        op.removeSavedInputAttr();
  }
};
} // namespace
