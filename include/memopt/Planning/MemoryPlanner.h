//===- MemoryPlanner.h - checkpoint regions under a budget ------*- C++ -*-===//
//
// Plans one function: builds its chain, searches the optimal chain plan for
// a byte budget or a preference, outlines the chosen groups into
// memopt.checkpoint regions with their input policies, and checks the
// result against the training-memory model (the chain model is an
// approximation of it; when the modelled peak of the outlined function is
// over budget the chain budget is tightened and the search repeated).
//
// Preferences pick a point on the peak/cost trade-off: the least peak whose
// modelled recompute + packing + transfer time stays within a fraction of
// the modelled step (speed 5%, balanced 12%, memory 25%).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_MEMORYPLANNER_H
#define MEMOPT_PLANNING_MEMORYPLANNER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

enum class Preference { Speed, Balanced, Memory };

/// The predicted peak of a function before any memopt transformation
/// (set by the first pass that changes what autograd saves); budgets given
/// in percent refer to it.
inline constexpr llvm::StringLiteral kUnplannedPeakAttrName =
    "memopt.unplanned_peak_bytes";

/// "speed" | "balanced" | "memory".
std::optional<Preference> parsePreference(StringRef text);
StringRef stringifyPreference(Preference preference);
/// Allowed extra time as a fraction of the modelled step.
double getTimeBudgetFraction(Preference preference);

/// Bytes from "123", "800MB", "1.5GiB" (B, KB, MB, GB decimal; KiB, MiB, GiB
/// binary) or "40%" of `baselineBytes`; an error message otherwise.
FailureOr<int64_t> parseBudget(StringRef text, int64_t baselineBytes,
                               std::string &error);

struct MemoryPlanOptions {
  std::string budget;                    // empty: use the preference
  std::optional<Preference> prefer;      // neither: balanced
  bool allowOffload = false;             // CUDA plans only
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
