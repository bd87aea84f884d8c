//===- TestCostModel.cpp - print per-op costs -----------------------------===//
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TestPasses.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::memopt {
#define GEN_PASS_DECL_TESTCOSTMODEL
#define GEN_PASS_DEF_TESTCOSTMODEL
#include "TestPasses.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct TestCostModelPass
    : public mlir::memopt::impl::TestCostModelBase<TestCostModelPass> {
  using TestCostModelBase::TestCostModelBase;
  void runOnOperation() override {
    llvm::raw_ostream &os = llvm::outs();
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      // Priced as the planner prices it: by the function's own fit, else
      // its module's.
      CostModel model(func);
      os << "cost-model @" << func.getSymName() << "\n";
      Block &body = func.getBody().front();
      for (Operation &op : body.without_terminator()) {
        auto torchOp = dyn_cast<TorchOp>(op);
        if (!torchOp && !isa<CheckpointOp>(op))
          continue;
        OpCost c = model.getCost(&op);
        os << "  " << (torchOp ? torchOp.getName() : "memopt.checkpoint")
           << " class " << stringifyCostClass(c.cls) << " flops "
           << llvm::format("%.0f", c.flops) << " bytes "
           << llvm::format("%.0f", c.bytes) << " seconds "
           << llvm::format("%.3e", c.seconds) << "\n";
      }
      os << "  recompute-all seconds "
         << llvm::format("%.3e", model.getRecomputeSeconds(
                                     body.begin(), std::prev(body.end())))
         << "\n";
      for (Value result : body.getTerminator()->getOperands()) {
        int64_t bytes = std::max<int64_t>(getDeviceBytes(result.getType()), 0);
        os << "  offload " << bytes << " bytes seconds "
           << llvm::format("%.3e",
                           CostModel::getTransferSeconds(bytes, bandwidth))
           << "\n";
      }
    });
  }
};
} // namespace
