//===- TestMemoryModel.cpp - print the training-memory model --------------===//
#include "memopt/Analysis/SavedTensorTable.h"
#include "memopt/Analysis/TestPasses.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::memopt {
#define GEN_PASS_DECL_TESTMEMORYMODEL
#define GEN_PASS_DEF_TESTMEMORYMODEL
#include "TestPasses.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

/// `aten::conv2d` for memopt.op, `checkpoint "layer1"`, else the op name.
static std::string describe(Operation *op) {
  if (auto torchOp = dyn_cast<TorchOp>(op))
    return torchOp.getName().str();
  if (auto cp = dyn_cast<CheckpointOp>(op))
    return ("checkpoint \"" + cp.getLabel() + "\"").str();
  return op->getName().getStringRef().str();
}

namespace {
struct TestMemoryModelPass
    : public mlir::memopt::impl::TestMemoryModelBase<TestMemoryModelPass> {
  using TestMemoryModelBase::TestMemoryModelBase;
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    if (dumpTable) {
      SavedTensorTable::get().print(os);
      return;
    }
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      TrainingMemoryOptions options = getStampedMemoryOptions(func);
      options.countOutputGradients = countOutputGradients;
      options.kernelWorkspaces = kernelWorkspaces;
      if (threads > 0)
        options.intraOpThreads = threads;
      if (accumulateInPlace >= 0)
        options.accumulateInPlace = accumulateInPlace != 0;
      TrainingMemoryModel model(func, options);
      os << "memory-model @" << func.getSymName() << "\n";
      func.walk([&](Operation *op) {
        if (int64_t bytes = model.getSavedBytes(op))
          os << "  saved " << describe(op) << " " << bytes << "\n";
      });
      for (const TimelineEntry &entry : model.getTimeline())
        os << "  " << stringifyMemoryPhase(entry.phase) << " "
           << describe(entry.op) << " live " << entry.liveBytes << "\n";
      for (Operation *op : model.getUnknownOps()) {
        op->emitWarning("training-memory model: no saved-tensor rule for '")
            << describe(op) << "'; assuming it saves every tensor operand "
            << "and result";
        os << "  unknown " << describe(op) << "\n";
      }
      os << "  end-of-forward " << model.getEndOfForwardBytes() << "\n";
      os << "  resident " << model.getResidentBytes() << "\n";
      if (int64_t buckets = model.getGradientBucketBytes())
        os << "  gradient-buckets " << buckets << "\n";
      os << "  peak " << model.predictPeak();
      if (const TimelineEntry *peak = model.getPeakEntry())
        os << " at " << stringifyMemoryPhase(peak->phase) << " "
           << describe(peak->op);
      os << "\n";
    });
  }
};
} // namespace
