//===- PlanRefinement.h - whole modules, no idle regions --------*- C++ -*-===//
//
// Two refinements of a chosen plan, judged by the training-memory model:
// - a region that starts or ends inside a module (`layer1.1.bn1..layer2.0`)
//   is harder to read in a report than one of whole modules (`layer1.1`), so
//   region boundaries move onto module boundaries where that costs nothing
//   (no higher modelled peak, no more recompute time);
// - a region whose removal leaves the modelled peak where it is costs time
//   for nothing (the chain model only approximates), so it is dropped.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_PLANREFINEMENT_H
#define MEMOPT_PLANNING_PLANREFINEMENT_H

#include "memopt/Planning/ChainPlanner.h"
#include "memopt/Planning/FunctionChain.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace mlir::memopt {

/// Counts the modules a run of chain segments cuts through.
class ModuleSplitCounter {
public:
  explicit ModuleSplitCounter(const FunctionChain &chain);

  /// Modules (by path) that have computing ops both inside segments
  /// [begin, end) and outside them, not counting those that contain the
  /// whole run (`blocks` for `blocks.0..blocks.3`); 1 for a run that no
  /// module path names.
  unsigned countSplit(unsigned begin, unsigned end) const;

  /// countSplit summed over the checkpointed groups of `groups`.
  unsigned countSplit(const std::vector<ChainGroup> &groups) const;

private:
  /// Computing ops under each module path (every prefix of an op's path),
  /// per segment and in total.
  std::vector<llvm::StringMap<unsigned>> perSegment;
  std::vector<unsigned> opsPerSegment;
  llvm::StringMap<unsigned> total;
};

struct AlignmentLimits {
  int64_t peakBytes = 0; // the plan's modelled peak: never exceeded
  double cost = 0;       // the plan's recompute cost: never exceeded
  unsigned window = 2;   // segments a boundary may move either way
};

/// The least index in [0, count) that `accept` accepts, or nothing: the
/// answer a scan in order gives. With `context`'s threads the tries run in
/// parallel (`accept` must then be safe to call from several threads and
/// keep its results by index), and none after an accepted one is started;
/// without a context, one after the other.
std::optional<size_t>
firstAcceptedInOrder(MLIRContext *context, size_t count,
                     llvm::function_ref<bool(size_t)> accept);

/// `plan` with region boundaries moved, one region at a time, to where they
/// split fewer modules, when the moved plan is valid, costs no more and
/// `predictPeak` finds its peak no higher than `limits` (a failure: the
/// moved plan cannot be built; it must not have reported anything). With
/// `context`, a region's moves are predicted in parallel (the same plan
/// results).
ChainPlan alignRegionsToModules(
    const ChainPlan &plan, const std::vector<ChainSegment> &segments,
    const ModuleSplitCounter &splits, const ChainPlannerOptions &options,
    const AlignmentLimits &limits,
    llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)> predictPeak,
    MLIRContext *context = nullptr);

/// `plan` without the regions whose removal leaves `predictPeak` at or below
/// `peak`, tried in order. Regions the chain model needs (forced by
/// --checkpoint) stay. With `context`, the tries from one plan run in
/// parallel (the same plan results).
ChainPlan dropIdleRegions(
    ChainPlan plan, const std::vector<ChainSegment> &segments,
    const ChainPlannerOptions &options, int64_t peak,
    llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)> predictPeak,
    MLIRContext *context = nullptr);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_PLANREFINEMENT_H
