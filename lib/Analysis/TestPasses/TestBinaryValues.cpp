//===- TestBinaryValues.cpp - remark on binary values ---------------------===//
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/TestPasses.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::memopt {
#define GEN_PASS_DECL_TESTBINARYVALUES
#define GEN_PASS_DEF_TESTBINARYVALUES
#include "TestPasses.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
struct TestBinaryValuesPass
    : public mlir::memopt::impl::TestBinaryValuesBase<TestBinaryValuesPass> {
  using TestBinaryValuesBase::TestBinaryValuesBase;
  void runOnOperation() override {
    SmallVector<std::string> paths(assumeBinary.begin(), assumeBinary.end());
    BinaryValueAnalysis analysis(getOperation(), paths);
    getOperation().walk([&](Operation *op) {
      for (OpResult result : op->getResults()) {
        if (analysis.isProven(result))
          op->emitRemark() << "result #" << result.getResultNumber()
                           << " is binary";
        else if (analysis.isAssumed(result))
          op->emitRemark() << "result #" << result.getResultNumber()
                           << " is assumed binary";
      }
    });
  }
};
} // namespace
