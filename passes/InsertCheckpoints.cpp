//===- InsertCheckpoints.cpp - memopt-insert-checkpoints ------------------===//
//
// Thin pass over the planner (lib/Planning/MemoryPlanner.cpp): parses the
// options (PlanningOptions.h) and skips functions that are passthrough or
// already planned. A function's own `memopt.budget` overrides the budget
// (BaselineStamp.h).
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Planning/MemoryPlanner.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_INSERTCHECKPOINTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct InsertCheckpointsPass
    : public mlir::memopt::impl::InsertCheckpointsBase<InsertCheckpointsPass> {
  using InsertCheckpointsBase::InsertCheckpointsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName) ||
        func->hasAttr(kPlanAttrName))
      return markAllAnalysesPreserved();

    std::string error;
    FailureOr<PlanningOptions> options = parsePlanningOptions(
        budget, prefer, device, offloadBandwidth, allowOverBudget, checkpoint,
        noCheckpoint, assumeBinary, error);
    if (failed(options) ||
        failed(parseOffloadOptions(*options, offloadPolicy, offloadD2HBandwidth,
                                   error))) {
      func.emitError(error);
      return signalPassFailure();
    }
    if (failed(planFunctionMemory(func, *options)))
      signalPassFailure();
  }
};
} // namespace
