//===- InsertCheckpoints.cpp - memopt-insert-checkpoints ------------------===//
//
// Thin pass over the planner (lib/Planning/MemoryPlanner.cpp): reads the
// options, lets a function's own `memopt.budget` override the budget, and
// skips functions that are passthrough or already planned.
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Planning/MemoryPlanner.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_INSERTCHECKPOINTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct InsertCheckpointsPass
    : public memopt::impl::InsertCheckpointsBase<InsertCheckpointsPass> {
  using InsertCheckpointsBase::InsertCheckpointsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName) ||
        func->hasAttr(kPlanAttrName))
      return markAllAnalysesPreserved();

    MemoryPlanOptions options;
    options.budget = budget;
    if (auto own = func->getAttrOfType<StringAttr>(kBudgetAttrName))
      options.budget = own.str();
    if (!prefer.empty()) {
      options.prefer = parsePreference(prefer);
      if (!options.prefer) {
        func.emitError("unknown preference '")
            << prefer << "' (expected speed, balanced or memory)";
        return signalPassFailure();
      }
    }
    if (device != "cpu" && device != "cuda") {
      func.emitError("unknown device '")
          << device << "' (expected cpu or cuda)";
      return signalPassFailure();
    }
    options.allowOffload = device == "cuda";
    if (!(offloadBandwidth > 0)) {
      std::string given;
      llvm::raw_string_ostream(given)
          << llvm::format("%g", double(offloadBandwidth));
      func.emitError("offload bandwidth must be positive, got ")
          << given << " GB/s";
      return signalPassFailure();
    }
    options.offloadBandwidth = offloadBandwidth * 1e9;
    options.allowOverBudget = allowOverBudget;
    options.checkpoint.assign(checkpoint.begin(), checkpoint.end());
    options.noCheckpoint.assign(noCheckpoint.begin(), noCheckpoint.end());
    options.assumeBinary.assign(assumeBinary.begin(), assumeBinary.end());
    if (failed(planFunctionMemory(func, options)))
      signalPassFailure();
  }
};
} // namespace
