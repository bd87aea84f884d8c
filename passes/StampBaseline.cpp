//===- StampBaseline.cpp - memopt-stamp-baseline --------------------------===//
//
// Thin pass over stampBaseline (lib/Planning/BaselineStamp.cpp): the peak
// and budget every later pass and the report refer to.
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Planning/BaselineStamp.h"
#include "memopt/Transforms/Passes.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_STAMPBASELINE
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct StampBaselinePass
    : public mlir::memopt::impl::StampBaselineBase<StampBaselinePass> {
  using StampBaselineBase::StampBaselineBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
      return markAllAnalysesPreserved();
    std::optional<Budget> parsed;
    if (!budget.empty()) {
      std::string error;
      FailureOr<Budget> given = parseBudget(budget, error);
      if (failed(given)) {
        func.emitError(error);
        return signalPassFailure();
      }
      parsed = *given;
    }
    if (failed(stampBaseline(func, parsed)))
      signalPassFailure();
  }
};
} // namespace
