//===- MemoryPlanner.h - checkpoint regions under a budget ------*- C++ -*-===//
//
// Plans one function: builds its chain, computes the optimal chain plans for
// a sweep of chain budgets, judges each by the training-memory model's peak
// of the function it produces (the chain model only approximates it), and
// outlines the chosen plan's groups into memopt.checkpoint regions with
// their input policies: the cheapest plan within a byte budget, or the
// least peak within a preference's time allowance.
//
// Preferences pick a point on the peak/cost trade-off: the least peak whose
// modelled recompute + packing + transfer time stays within a fraction of
// the modelled step (speed 5%, balanced 12%, memory 25%).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_MEMORYPLANNER_H
#define MEMOPT_PLANNING_MEMORYPLANNER_H

#include "memopt/Dialect/MemoptAttrNames.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

enum class Preference { Speed, Balanced, Memory };

/// "speed" | "balanced" | "memory".
std::optional<Preference> parsePreference(StringRef text);
StringRef stringifyPreference(Preference preference);
/// Allowed extra time as a fraction of the modelled step.
double getTimeBudgetFraction(Preference preference);

/// The copy bandwidth CUDA plans assume by default, GB/s each way (an H100
/// over PCIe Gen5: 54.8 / 54.5 measured, docs/gpu.md); the CLI, pipeline
/// and pass options all default to it.
inline constexpr double kDefaultOffloadBandwidthGBps = 55.0;

struct MemoryPlanOptions {
  std::string budget;                    // empty: use the preference
  std::optional<Preference> prefer;      // neither: balanced
  bool allowOffload = false;             // CUDA plans only
  /// Device<->host copy bandwidth each way, bytes/s.
  double offloadBandwidth = kDefaultOffloadBandwidthGBps * 1e9;
  bool allowOverBudget = false;          // apply the least-peak plan if needed
  std::vector<std::string> checkpoint;   // module paths forced into regions
  std::vector<std::string> noCheckpoint; // module paths kept out of regions
  std::vector<std::string> assumeBinary; // module outputs asserted binary
};

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
FailureOr<MemoryPlanSummary>
planFunctionMemory(func::FuncOp func, const MemoryPlanOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_MEMORYPLANNER_H
