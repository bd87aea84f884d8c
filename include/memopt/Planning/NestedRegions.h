//===- NestedRegions.h - regions within a region's recompute ----*- C++ -*-===//
//
// A checkpoint region's backward reruns its body with grad, so everything
// the body's ops save is live at once, on top of the gradients of the rest
// of the step: on a spiking network's first block (full resolution, four
// time steps) that recompute is the step's peak once the rest is planned.
// Regions nested in the body bound it the same way top-level regions bound
// forward: the recompute keeps only their inputs, and each nested region is
// rerun once more, in the enclosing region's backward. This refinement finds
// the region whose body holds the modelled peak, plans its body as a chain
// (the same search as a function's) and outlines the nested regions whose
// whole-step peak is least, repeating while the peak moves into another
// region's body and the extra recompute time stays within its allowance.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_NESTEDREGIONS_H
#define MEMOPT_PLANNING_NESTEDREGIONS_H

#include "memopt/Planning/ChainPlanner.h"
#include "memopt/Planning/MemoryPlanner.h"

namespace mlir::memopt {

struct NestingLimits {
  double extraSeconds = 0; // recompute time the nested regions may add
  // Stop as soon as the peak is at or below this (a budget); 0: the least
  // peak within extraSeconds.
  int64_t targetPeakBytes = 0;
  unsigned maxDepth = 3; // regions within regions within regions, at most
};

struct NestingResult {
  int64_t peakBytes = 0;   // modelled peak of the function afterwards
  double addedSeconds = 0; // recompute time the nested regions add
  unsigned regions = 0;    // nested regions outlined
};

/// Outlines nested regions in `func` (already planned at top level) while
/// each step lowers the modelled peak within `limits`.
FailureOr<NestingResult> nestRegionsAtPeak(func::FuncOp func,
                                           const PlanningOptions &options,
                                           const ChainPlannerOptions &planner,
                                           const NestingLimits &limits);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_NESTEDREGIONS_H
