//===- Passes.h - memopt pass entry points ----------------------*- C++ -*-===//
#ifndef MEMOPT_TRANSFORMS_PASSES_H
#define MEMOPT_TRANSFORMS_PASSES_H

#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Planning/PlanningOptions.h" // option defaults
#include "mlir/Pass/Pass.h"

namespace mlir::memopt {

#define GEN_PASS_DECL
#include "memopt/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "memopt/Transforms/Passes.h.inc"

/// Registers `memopt-pipeline` (passes/MemoptPipeline.cpp).
void registerMemoptPipeline();

/// Every memopt pass and pipeline, for tools.
inline void registerAllMemoptPasses() {
  registerMemoptPasses();
  registerMemoptPipeline();
}

} // namespace mlir::memopt

#endif // MEMOPT_TRANSFORMS_PASSES_H
