//===- PlanApplier.h - outline chain plans into regions ---------*- C++ -*-===//
//
// Internal to MemoryPlanner and NestedRegions: applies a chain plan, built
// from the ops of one block, to that block (or to the same block of a copy
// of its function), and predicts the peak that gives.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PLANNING_PLANAPPLIER_H
#define MEMOPT_LIB_PLANNING_PLANAPPLIER_H

#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Planning/MemoryPlanner.h"

#include <algorithm>
#include <functional>
#include <mutex>

namespace mlir::memopt {

/// How the reason of a region nested in another begins: its recompute runs
/// within the enclosing one's.
inline constexpr llvm::StringLiteral kNestedRegionReasonPrefix =
    "within its enclosing region's recompute, ";
/// What the nesting step appends to a nested region's reason, before the
/// enclosing region's label and the local peaks.
inline constexpr llvm::StringLiteral kNestingReasonInfix =
    "; lowers the peak within ";

class PlanApplier {
public:
  /// Finds, in a function (the planned one or a clone of it), the block the
  /// chain's ops are the ops of.
  using BlockLocator = std::function<Block &(func::FuncOp)>;

  /// `source` holds the chain's ops (in the order the target block has
  /// them); `locate` finds the target block in a function.
  PlanApplier(Block &source, const FunctionChain &chain,
              const PlanningOptions &options, BlockLocator locate);

  /// Modelled peak of `func` with `plan` applied (on a scratch copy).
  FailureOr<int64_t> predict(func::FuncOp func, const ChainPlan &plan) const;

  struct Peaks {
    int64_t step = 0;           // the modelled peak
    int64_t outsideRegions = 0; // the highest point outside region bodies:
                                // what regions nested in them cannot lower
  };
  FailureOr<Peaks> predictPeaks(func::FuncOp func, const ChainPlan &plan) const;

  /// How regions are named: as reports show them (the whole module a
  /// region covers, or the range of its submodules), or, for a scratch
  /// copy only modelled, by what its own ops share (no scan of the block
  /// per region).
  enum class Labels { Final, Scratch };

  /// Outlines the plan's checkpointed groups in `func`'s target block.
  LogicalResult apply(func::FuncOp func, const ChainPlan &plan,
                      Labels labels = Labels::Final) const;

  /// The top-level block of a function.
  static Block &functionBody(func::FuncOp func) {
    return func.getBody().front();
  }

private:
  /// What outlining asks of the target block's values before it changes
  /// anything: the same for every copy the plans are applied to, so decided
  /// once (on the first) rather than once per plan.
  struct BlockFacts {
    // By op position, into the next two; one more entry ends the last op.
    std::vector<unsigned> firstResult;
    std::vector<bool> freeResult, binaryResult;
    std::vector<bool> binaryArgument; // by block argument number
    size_t getNumOps() const { return firstResult.size() - 1; }
    /// FreeValueMemo::definesOnlyFree of the op at `position`.
    bool definesOnlyFree(unsigned position) const {
      unsigned begin = firstResult[position], end = firstResult[position + 1];
      return begin < end &&
             std::all_of(freeResult.begin() + begin, freeResult.begin() + end,
                         [](bool free) { return free; });
    }
  };
  const BlockFacts &getFacts(func::FuncOp func, Block &target) const;
  void annotate(CheckpointOp region, const ChainGroup &group) const;

  const FunctionChain &chain;
  const PlanningOptions &options;
  BlockLocator locate;
  DenseMap<Operation *, unsigned> index;
  mutable std::once_flag factsOnce;
  mutable BlockFacts facts;
};

/// Optimal chain plans to judge by the training-memory model (the chain
/// model only approximates it): the least-peak plan, then those for a
/// geometric sweep of chain budgets from its peak up to the peak of storing
/// everything (feasible ones only), then the unbounded (cheapest) one.
std::vector<ChainPlan>
sweepChainBudgets(MLIRContext *context,
                  const std::vector<ChainSegment> &segments,
                  const ChainPlannerOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PLANNING_PLANAPPLIER_H
