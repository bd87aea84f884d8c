//===- CompileDriver.h - import, plan and export in one process -*- C++ -*-===//
//
// memopt-compile's work, as a library call: validate the options, import
// the TorchScript model for its input signature(s), predict the baseline,
// run the registered planning pipeline (`memopt-pipeline`), predict the
// planned peak, write the compiled .pt, the IR, the JSON report and the
// summary. Every failure is exactly one `memopt: error: ...` line.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_COMPILE_COMPILEDRIVER_H
#define MEMOPT_COMPILE_COMPILEDRIVER_H

#include "memopt/Compile/CompileOptions.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::memopt {

/// Runs one compile. Diagnostics and the summary go to `errs`. Returns the
/// process exit code: 0 on success, 1 on any error.
int runCompile(const CompileOptions &options, llvm::raw_ostream &errs);

} // namespace mlir::memopt

#endif // MEMOPT_COMPILE_COMPILEDRIVER_H
