//===- PlanRefinement.cpp - whole modules, no idle regions ----------------===//
#include "memopt/Planning/PlanRefinement.h"

#include "mlir/IR/Threading.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <atomic>
#include <tuple>

using namespace mlir;
using namespace mlir::memopt;

ModuleSplitCounter::ModuleSplitCounter(const FunctionChain &chain)
    : perSegment(chain.ops.size()), opsPerSegment(chain.ops.size(), 0) {
  for (unsigned s = 0; s < chain.ops.size(); ++s)
    for (Operation *op : chain.ops[s]) {
      // Parameter reads say nothing about which module a region covers.
      if (definesOnlyFreeValues(op))
        continue;
      ++opsPerSegment[s];
      std::string path = getModulePath(op);
      for (size_t end = 0; !path.empty() && end != StringRef::npos;) {
        end = path.find('.', end + 1);
        std::string prefix = path.substr(0, end);
        ++perSegment[s][prefix];
        ++total[prefix];
      }
    }
}

unsigned ModuleSplitCounter::countSplit(unsigned begin, unsigned end) const {
  llvm::StringMap<unsigned> inside;
  unsigned ops = 0;
  for (unsigned s = begin; s < end; ++s) {
    ops += opsPerSegment[s];
    for (const auto &entry : perSegment[s])
      inside[entry.getKey()] += entry.getValue();
  }
  // A run of computing ops none of which has a module path can be named by
  // no module: as bad as cutting through one.
  unsigned split = ops > 0 && inside.empty();
  for (const auto &entry : inside)
    split += entry.getValue() < total.lookup(entry.getKey()) &&
             entry.getValue() < ops;
  return split;
}

unsigned
ModuleSplitCounter::countSplit(const std::vector<ChainGroup> &groups) const {
  unsigned split = 0;
  for (const ChainGroup &group : groups)
    if (group.checkpointed)
      split += countSplit(group.begin, group.end);
  return split;
}

/// The regions of `groups` with region `index` moved to [begin, end), tiled
/// with single unstored segments elsewhere.
static std::vector<ChainGroup> moveRegion(const std::vector<ChainGroup> &groups,
                                          unsigned index, unsigned begin,
                                          unsigned end, unsigned count) {
  std::vector<ChainGroup> regions;
  for (unsigned g = 0; g < groups.size(); ++g)
    if (groups[g].checkpointed)
      regions.push_back(g == index
                            ? ChainGroup{begin, end, true, groups[g].policy}
                            : groups[g]);
  std::vector<ChainGroup> tiled;
  unsigned next = 0;
  for (const ChainGroup &region : regions) {
    for (; next < region.begin; ++next)
      tiled.push_back(ChainGroup{next, next + 1, false, InputPolicy::Keep});
    tiled.push_back(region);
    next = region.end;
  }
  for (; next < count; ++next)
    tiled.push_back(ChainGroup{next, next + 1, false, InputPolicy::Keep});
  return tiled;
}

std::optional<size_t>
mlir::memopt::firstAcceptedInOrder(MLIRContext *context, size_t count,
                                   llvm::function_ref<bool(size_t)> accept) {
  if (!context) {
    for (size_t i = 0; i < count; ++i)
      if (accept(i))
        return i;
    return std::nullopt;
  }
  // parallelFor starts the tries in index order: one that starts after an
  // earlier one was accepted cannot be the answer.
  std::atomic<size_t> first{count};
  parallelFor(context, 0, count, [&](size_t i) {
    if (i > first.load() || !accept(i))
      return;
    size_t known = first.load();
    while (i < known && !first.compare_exchange_weak(known, i)) {
    }
  });
  if (first.load() == count)
    return std::nullopt;
  return first.load();
}

ChainPlan mlir::memopt::alignRegionsToModules(
    const ChainPlan &plan, const std::vector<ChainSegment> &segments,
    const ModuleSplitCounter &splits, const ChainPlannerOptions &options,
    const AlignmentLimits &limits,
    llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)> predictPeak,
    MLIRContext *context) {
  ChainPlan current = plan;
  unsigned count = segments.size();
  unsigned regions = llvm::count_if(
      plan.groups, [](const ChainGroup &g) { return g.checkpointed; });
  for (unsigned region = 0; region < regions; ++region) {
    // The region's group and its neighbours, which bound how far it moves.
    unsigned index = 0, low = 0, high = count;
    for (unsigned g = 0, seen = 0; g < current.groups.size(); ++g) {
      if (!current.groups[g].checkpointed)
        continue;
      if (seen < region)
        low = current.groups[g].end;
      else if (seen == region)
        index = g;
      else if (high == count)
        high = current.groups[g].begin;
      ++seen;
    }
    const ChainGroup group = current.groups[index];
    unsigned splitNow = splits.countSplit(group.begin, group.end);
    if (splitNow == 0)
      continue;
    struct Move {
      unsigned split;
      double cost;
      std::vector<ChainGroup> groups;
    };
    std::vector<Move> moves;
    unsigned window = limits.window;
    unsigned firstBegin =
        std::max(low, group.begin - std::min(group.begin, window));
    for (unsigned b = firstBegin; b <= group.begin + window && b < high; ++b)
      for (unsigned e =
               std::max(b + 1, group.end - std::min(group.end, window));
           e <= group.end + window && e <= high; ++e) {
        unsigned split = splits.countSplit(b, e);
        if (split >= splitNow)
          continue;
        // A packed input must stay binary at the new start.
        if (group.policy == InputPolicy::Compress &&
            !segments[b].packedInputBytes)
          continue;
        std::vector<ChainGroup> moved =
            moveRegion(current.groups, index, b, e, count);
        ChainPlanEvaluation evaluation =
            evaluateChainPlan(segments, moved, options);
        if (!evaluation.valid || evaluation.cost > limits.cost * (1 + 1e-9))
          continue;
        moves.push_back({split, evaluation.cost, std::move(moved)});
      }
    std::stable_sort(
        moves.begin(), moves.end(), [](const Move &a, const Move &b) {
          return std::tie(a.split, a.cost) < std::tie(b.split, b.cost);
        });
    // The full memory model is the judge; a few tries per region bound the
    // time it takes.
    constexpr size_t kTries = 4;
    size_t tries = std::min(moves.size(), kTries);
    std::vector<ChainPlan> candidates(tries, current);
    std::optional<size_t> accepted =
        firstAcceptedInOrder(context, tries, [&](size_t t) {
          ChainPlan &candidate = candidates[t];
          candidate.groups = moves[t].groups;
          candidate.cost = moves[t].cost;
          // A moved region the outliner refuses (one that would compute
          // nothing used after it) is no candidate.
          FailureOr<int64_t> peak = predictPeak(candidate);
          if (failed(peak) || *peak > limits.peakBytes)
            return false;
          candidate.peakBytes = *peak;
          return true;
        });
    if (accepted)
      current = std::move(candidates[*accepted]);
  }
  return current;
}

ChainPlan mlir::memopt::dropIdleRegions(
    ChainPlan plan, const std::vector<ChainSegment> &segments,
    const ChainPlannerOptions &options, int64_t peak,
    llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)> predictPeak,
    MLIRContext *context) {
  // Regions are tried in order, each on the plan the earlier ones left.
  // Every try after the last removal starts from the same plan: they run
  // in parallel, the first removable one in order wins, and the scan goes
  // on after it.
  for (unsigned next = 0;;) {
    std::vector<unsigned> regions;
    for (unsigned g = next; g < plan.groups.size(); ++g)
      if (plan.groups[g].checkpointed)
        regions.push_back(g);
    std::vector<ChainPlan> withouts(regions.size());
    std::optional<size_t> removable =
        firstAcceptedInOrder(context, regions.size(), [&](size_t i) {
          ChainPlan &without = withouts[i];
          without = plan;
          without.groups[regions[i]].checkpointed = false;
          without.groups[regions[i]].policy = InputPolicy::Keep;
          ChainPlanEvaluation evaluation =
              evaluateChainPlan(segments, without.groups, options);
          if (!evaluation.valid)
            return false;
          FailureOr<int64_t> withoutPeak = predictPeak(without);
          if (failed(withoutPeak) || *withoutPeak > peak)
            return false;
          without.cost = evaluation.cost;
          without.peakBytes = *withoutPeak;
          return true;
        });
    if (!removable)
      return plan;
    plan = std::move(withouts[*removable]);
    next = regions[*removable] + 1;
  }
}
