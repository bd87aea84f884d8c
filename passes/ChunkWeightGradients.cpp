//===- ChunkWeightGradients.cpp - memopt-chunk-weight-gradients -----------===//
//
// When `.grad` stays allocated between steps (zero_grad(set_to_none=False),
// gradient accumulation), autograd computes a linear layer's weight
// gradient as a new weight-sized tensor and then adds it into `.grad`: for a
// large classifier (VGG's 25088 x 4096 floats) that temporary is the whole
// step's peak, and no recompute or compression touches it. Computing it a
// block of output rows at a time and adding each block into `.grad` holds
// one block instead. Row r of the gradient is grad[:, r]^T x over the same
// rows either way, so `.grad` gets the same bits.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Runtime/WeightGradChunks.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_CHUNKWEIGHTGRADIENTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// The trainable parameter `value` reads, or null.
ParamOp trainableParam(Value value) {
  auto param = value ? value.getDefiningOp<ParamOp>() : ParamOp();
  return param && !param.getFrozen() ? param : ParamOp();
}

struct ChunkWeightGradients
    : public mlir::memopt::impl::ChunkWeightGradientsBase<
          ChunkWeightGradients> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // With `.grad` set to None, autograd makes the gradient itself `.grad`:
    // there is no temporary to avoid. Under DDP the reducer holds every
    // weight's accumulator, and the runtime then returns the whole gradient.
    if (getGradBuffers(func) != GradBuffers::Resident || getWorldSize(func) > 1)
      return;
    // Uses per state_dict key: a weight used twice (a tied head) gets the
    // sum of both gradients added at once, an order row blocks would break.
    llvm::StringMap<unsigned> uses;
    func.walk([&](ParamOp param) {
      uses[param.getPath()] += llvm::range_size(param->getUses());
    });
    func.walk([&](TorchOp op) {
      if (op.getName() != "aten::linear" ||
          op.getOverload().value_or("") != "" || op.getArgs().size() != 3 ||
          op.getNumResults() != 1 || op.getBackwardAttr() ||
          op->getParentOfType<CheckpointOp>())
        return;
      ParamOp weight = trainableParam(op.getOperandArg(1));
      RankedTensorType type = op.getStaticTensorArg(1);
      auto input = op.getStaticTensorArg(0);
      if (!weight || uses.lookup(weight.getPath()) != 1 || !type ||
          type.getRank() != 2 || !input ||
          !isa<FloatType>(type.getElementType()) ||
          !isa<FloatType>(input.getElementType()))
        return;
      int64_t rows = type.getDimSize(0);
      int64_t rowBytes = getDeviceBytes(type) / std::max<int64_t>(rows, 1);
      if (::memopt::runtime::getWeightGradBlockRows(rows, rowBytes) >= rows)
        return;
      op.setBackwardAttr(BackwardKernelAttr::get(op.getContext(),
                                                 BackwardKernel::weight_rows));
    });
  }
};
} // namespace
