//===- ChunkBatchNormBackward.cpp - memopt-chunk-batch-norm-backward ------===//
//
// ATen's CPU batch-norm backward allocates an input-sized buffer beside the
// input gradient. Run a chunk of channels at a time (the runtime's
// memopt::batch_norm_by_channel), it needs a chunk instead, with the same
// bits. Which marks a plan can do without is the planner's to decide
// (lib/Planning/BackwardKernelMarks.cpp).
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Runtime/BatchNormChunks.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_CHUNKBATCHNORMBACKWARD
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// A training-mode batch-norm whose input spans more than one chunk of
/// channels.
bool hasChunkedBackward(TorchOp op) {
  if (!op.isTrainingBatchNorm() || op.getNumOperands() == 0 ||
      !isStaticFloatTensor(op.getOperand(0).getType()))
    return false;
  auto type = cast<RankedTensorType>(op.getOperand(0).getType());
  if (type.getRank() < 2)
    return false;
  int64_t bytes = getDeviceBytes(type);
  return ::memopt::runtime::getBatchNormByChannelTransientBytes(
             type.getDimSize(1), bytes) < bytes;
}

struct ChunkBatchNormBackwardPass
    : public mlir::memopt::impl::ChunkBatchNormBackwardBase<
          ChunkBatchNormBackwardPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    for (auto op : func.getBody().front().getOps<TorchOp>())
      if (!op.getBackwardAttr() && hasChunkedBackward(op))
        op.setBackwardAttr(BackwardKernelAttr::get(op.getContext(),
                                                   BackwardKernel::by_channel));
  }
};
} // namespace
