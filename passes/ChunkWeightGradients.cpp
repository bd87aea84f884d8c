//===- ChunkWeightGradients.cpp - memopt-chunk-weight-gradients -----------===//
//
// When `.grad` stays allocated between steps (zero_grad(set_to_none=False),
// gradient accumulation), autograd computes a linear layer's weight
// gradient as a new weight-sized tensor and then adds it into `.grad`: for a
// large classifier (VGG's 25088 x 4096 floats) that temporary is the whole
// step's peak, and no recompute or compression touches it. Where `.grad`
// holds +0 (zero_grad), the runtime writes the product straight into it
// and adds +0: the same product, so the same bits, and +0 + p's bits.
// (Blocks of output rows, each added into `.grad`, matched eager only with
// the reference BLAS: an optimized one sums a block in another order than
// the whole product.)
//
// A weight one other op also uses (an LM head tied to its token embedding)
// is marked too: autograd would hold the head's whole gradient until the
// embedding's backward, at the end of the step, and add their sum into
// `.grad`. Written into a `.grad` of +0, the embedding's is added later:
// (0 + a) + b has the bits of 0 + (a + b).
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
    // Uses per state_dict key. Of a weight used twice, only a linear whose
    // other use is no linear: the runtime adds one gradient by rows, never
    // both (the second would find `.grad` no longer zero).
    llvm::StringMap<unsigned> uses, linearUses;
    func.walk([&](ParamOp param) {
      for (Operation *user : param->getUsers()) {
        ++uses[param.getPath()];
        if (auto op = dyn_cast<TorchOp>(user);
            op && op.getName() == "aten::linear")
          ++linearUses[param.getPath()];
      }
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
      if (!weight || uses.lookup(weight.getPath()) > 2 ||
          linearUses.lookup(weight.getPath()) != 1 || !type ||
          type.getRank() != 2 || !input ||
          !isa<FloatType>(type.getElementType()) ||
          !isa<FloatType>(input.getElementType()))
        return;
      int64_t rows = type.getDimSize(0);
      int64_t rowBytes = getDeviceBytes(type) / std::max<int64_t>(rows, 1);
      if (!::memopt::runtime::isWeightGradWorthWritingIntoGrad(rows, rowBytes))
        return;
      op.setBackwardAttr(BackwardKernelAttr::get(op.getContext(),
                                                 BackwardKernel::weight_rows));
    });
  }
};
} // namespace
