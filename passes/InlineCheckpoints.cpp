//===- InlineCheckpoints.cpp - memopt-inline-checkpoints ------------------===//
//
// Replaces checkpoint regions by their bodies so that autograd keeps the
// intermediates again.
//
//===----------------------------------------------------------------------===//
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_INLINECHECKPOINTS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {

/// Moves the body of `region` before it, wiring block arguments to the
/// region's inputs and the region's results to the yielded values.
void inlineCheckpoint(CheckpointOp region, RewriterBase &rewriter) {
  Block &body = region.getBodyBlock();
  auto yield = cast<YieldOp>(body.getTerminator());
  // Read the yielded values only after inlining: a yielded block argument
  // becomes the corresponding region input then.
  rewriter.inlineBlockBefore(&body, region, region.getInputs());
  SmallVector<Value> yielded(yield.getValues());
  rewriter.eraseOp(yield);
  rewriter.replaceOp(region, yielded);
}

struct InlineCheckpointsPass
    : public mlir::memopt::impl::InlineCheckpointsBase<InlineCheckpointsPass> {
  using InlineCheckpointsBase::InlineCheckpointsBase;

  void runOnOperation() override {
    llvm::StringSet<> selected;
    for (const std::string &label : labels)
      selected.insert(label);

    SmallVector<CheckpointOp> regions;
    llvm::StringSet<> found;
    getOperation()->walk([&](CheckpointOp region) {
      if (selected.empty() || selected.contains(region.getLabel())) {
        regions.push_back(region);
        found.insert(region.getLabel());
      }
    });
    // A label that matches nothing is almost always a typo in a module path.
    for (const std::string &label : labels) {
      if (!found.contains(label)) {
        getOperation()->emitError("memopt-inline-checkpoints: no checkpoint "
                                  "region is labelled '")
            << label << "'";
        return signalPassFailure();
      }
    }
    IRRewriter rewriter(&getContext());
    for (CheckpointOp region : regions) {
      rewriter.setInsertionPoint(region);
      inlineCheckpoint(region, rewriter);
    }
  }
};

} // namespace
