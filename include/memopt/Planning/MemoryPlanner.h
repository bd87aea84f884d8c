//===- MemoryPlanner.h - checkpoint regions under a budget ------*- C++ -*-===//
//
// Plans one function: builds its chain, computes the optimal chain plans for
// a sweep of chain budgets, judges each by the training-memory model's peak
// of the function it produces (the chain model only approximates it), and
// outlines the chosen plan's groups into memopt.checkpoint regions with
// their input policies: the cheapest plan within a byte budget, or the
// least peak within a preference's time allowance.
//
// Preferences pick a point on the peak/cost trade-off (PlanningOptions.h).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_MEMORYPLANNER_H
#define MEMOPT_PLANNING_MEMORYPLANNER_H

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Planning/PlanningOptions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

struct MemoryPlanSummary {
  int64_t baselinePeakBytes = 0;
  int64_t plannedPeakBytes = 0;
  int64_t budgetBytes = -1; // -1: planned for a preference
  int64_t minReachablePeakBytes = 0;
  bool feasible = true;
  double recomputeSeconds = 0; // modelled extra time of the plan
  double stepSeconds = 0;      // modelled time of one step without a plan
  unsigned regions = 0;
};

/// Plans `func` in place and records the summary as its `memopt.plan`
/// attribute. Fails with a diagnostic on bad options or an infeasible budget
/// (unless allowOverBudget).
FailureOr<MemoryPlanSummary> planFunctionMemory(func::FuncOp func,
                                                const PlanningOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_MEMORYPLANNER_H
