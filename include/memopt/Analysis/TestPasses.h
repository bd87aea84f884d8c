//===- TestPasses.h - register the analysis test passes ---------*- C++ -*-===//
#ifndef MEMOPT_ANALYSIS_TESTPASSES_H
#define MEMOPT_ANALYSIS_TESTPASSES_H

namespace mlir::memopt {
/// -memopt-test-memory-model, -memopt-test-binary-values,
/// -memopt-test-cost-model.
void registerAnalysisTestPasses();
} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_TESTPASSES_H
