//===- TestPassRegistration.cpp - register the analysis test passes -------===//
#include "memopt/Analysis/TestPasses.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::memopt {
#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "TestPasses.h.inc"
} // namespace mlir::memopt

void mlir::memopt::registerAnalysisTestPasses() {
  registerMemoptAnalysisTestPasses();
}
