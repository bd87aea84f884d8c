//===- ChainPlanner.cpp - optimal checkpointing of a chain ----------------===//
#include "memopt/Planning/ChainPlanner.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <limits>

using namespace mlir::memopt;

namespace {

/// What the model knows after a prefix of the chain.
struct PrefixState {
  int64_t retainedBytes = 0; // saved for backward by groups so far
  // The previous segment was stored and kept part of t_i (its output).
  bool boundaryRetained = false;
};

/// What appending one group does.
struct GroupEffect {
  bool valid = false;
  int64_t retainedBytes = 0; // added to the prefix
  int64_t localPeak = 0;     // above the prefix, in its forward or backward
  double cost = 0;
  bool boundaryRetained = false; // t_end is retained by this group
};

GroupEffect storedSegment(const ChainSegment &segment, bool inputRetained) {
  GroupEffect effect;
  effect.valid = !segment.forceCheckpoint;
  int64_t input = segment.savedInputBytes -
                  (inputRetained ? segment.sharedBoundaryBytes : 0);
  effect.retainedBytes =
      segment.savedBytes + input + segment.savedOutputBytes;
  effect.boundaryRetained = segment.savedOutputBytes > 0;
  // Forward: the input is alive while the output is produced.
  int64_t forward =
      effect.retainedBytes +
      std::max<int64_t>(0, segment.inputBytes - segment.savedInputBytes) +
      (segment.outputBytes - segment.savedOutputBytes);
  // Backward: gradients of output and input, plus workspace.
  int64_t backward = effect.retainedBytes + segment.outputBytes +
                     segment.inputBytes + segment.backwardTransientBytes;
  effect.localPeak = std::max(forward, backward);
  return effect;
}

/// A checkpointed group [begin, end) grown one segment at a time, so that
/// the search prices every end for one begin in linear time.
class RegionAccumulator {
public:
  RegionAccumulator(const std::vector<ChainSegment> &chain, unsigned begin,
                    bool inputRetained, const ChainPlannerOptions &options)
      : chain(chain), begin(begin), end(begin), inputRetained(inputRetained),
        options(options) {}

  /// Adds segment `end`; false once a segment may not be recomputed.
  bool grow() {
    const ChainSegment &segment = chain[end];
    if (segment.forbidCheckpoint)
      return false;
    // Tensors crossing into the region that this segment uses first.
    for (const CrossingTensor &tensor : chain[begin].crossing)
      if (tensor.firstUse == end) {
        usedInputBytes += tensor.bytes;
        usedPackedBytes += tensor.packedBytes;
      }
    forwardCost += segment.forwardCost;
    stateBytes += segment.writtenStateBytes;
    for (const ParamUses &param : segment.paramUses) {
      unsigned &inside = paramUsesInside[param.param];
      splitSums -= splitsSum(inside, param.total);
      inside += param.uses;
      splitSums += splitsSum(inside, param.total);
    }
    for (const ActivationUses &activation : segment.activationUses) {
      if (activation.definedIn >= int(begin))
        continue; // made inside: its later uses' gradients come in first
      // The first use inside is the first at or after `begin`.
      auto &[inside, fromBegin] =
          activationUsesInside
              .try_emplace(activation.value, 0u, activation.usesFromHere)
              .first->second;
      splitSums -= splitsSum(inside, fromBegin);
      inside += activation.uses;
      splitSums += splitsSum(inside, fromBegin);
    }
    forwardWorking =
        std::max(forwardWorking, segment.inputBytes + segment.outputBytes);
    recomputedSaved += segment.savedBytes;
    // Inner boundaries: what this segment saves of its input, and what the
    // previous one saved of its output, once.
    if (end > begin)
      recomputedSaved += segment.savedInputBytes +
                         chain[end - 1].savedOutputBytes -
                         segment.sharedBoundaryBytes;
    backwardWorking = std::max(
        backwardWorking, segment.inputBytes + segment.backwardTransientBytes);
    ++end;
    return true;
  }

  /// The group [begin, end) with its input saved by `policy`.
  GroupEffect effect(InputPolicy policy) const {
    GroupEffect effect;
    const ChainSegment &first = chain[begin];
    if (end == begin || !first.canStartRegion || splitSums)
      return effect;
    // An input a stored producer already keeps costs nothing more to keep;
    // packing or moving a second copy would only add work.
    if (inputRetained && policy != InputPolicy::Keep)
      return effect;
    if (policy == InputPolicy::Compress &&
        (!options.allowCompress || !first.packedInputBytes))
      return effect;
    if (policy == InputPolicy::Offload && !options.allowOffload)
      return effect;

    // The region's inputs: the crossing tensors it uses.
    bool split = !first.crossing.empty();
    int64_t inputBytes = split ? usedInputBytes : first.inputBytes;
    int64_t packedBytes =
        split ? usedPackedBytes : first.packedInputBytes.value_or(inputBytes);
    int64_t restoredInput = 0;
    switch (policy) {
    case InputPolicy::Keep:
      // What the stored producer kept of its output is not kept twice.
      effect.retainedBytes =
          inputRetained
              ? std::max<int64_t>(0, inputBytes -
                                         chain[begin - 1].savedOutputBytes)
              : inputBytes;
      break;
    case InputPolicy::Compress:
      effect.retainedBytes = packedBytes;
      restoredInput = inputBytes;
      effect.cost += options.compressSecondsPerByte * inputBytes;
      break;
    case InputPolicy::Offload:
      effect.retainedBytes = 0;
      restoredInput = inputBytes;
      effect.cost += options.offloadSecondsPerByte * inputBytes;
      break;
    }
    // The copy of the state the group writes stays until its backward.
    effect.retainedBytes += stateBytes;
    // Forward runs without grad: only the current input and output are
    // alive. Backward recomputes the group, keeping what its segments save
    // (and writing a second copy of that state).
    effect.cost += forwardCost;
    const ChainSegment &last = chain[end - 1];
    int64_t saved = recomputedSaved + last.savedOutputBytes;
    int64_t forward = effect.retainedBytes + forwardWorking;
    int64_t backward = effect.retainedBytes + restoredInput + saved +
                       stateBytes + last.outputBytes + backwardWorking;
    effect.localPeak = std::max(forward, backward);
    effect.valid = true;
    return effect;
  }

  unsigned getEnd() const { return end; }

private:
  const std::vector<ChainSegment> &chain;
  unsigned begin, end;
  bool inputRetained;
  const ChainPlannerOptions &options;
  double forwardCost = 0;
  int64_t forwardWorking = 0, recomputedSaved = 0, backwardWorking = 0;
  int64_t stateBytes = 0;
  // Uses of each multiply-used parameter inside, and how many parameters
  // have two or more of their uses, not all, inside.
  llvm::DenseMap<unsigned, unsigned> paramUsesInside;
  // Per activation made before the region: its uses inside, and its uses
  // from the region's start on; a split sum as for parameters.
  llvm::DenseMap<unsigned, std::pair<unsigned, unsigned>> activationUsesInside;
  unsigned splitSums = 0;
  static bool splitsSum(unsigned inside, unsigned total) {
    return inside >= 2 && inside < total;
  }
  int64_t usedInputBytes = 0, usedPackedBytes = 0;
};

GroupEffect checkpointedGroup(const std::vector<ChainSegment> &chain,
                              unsigned begin, unsigned end, InputPolicy policy,
                              bool inputRetained,
                              const ChainPlannerOptions &options) {
  RegionAccumulator region(chain, begin, inputRetained, options);
  while (region.getEnd() < end)
    if (!region.grow())
      return GroupEffect{};
  return region.effect(policy);
}

/// The final activation (the loss or model output) stays alive after forward.
int64_t finalPeak(const std::vector<ChainSegment> &chain,
                  const PrefixState &state) {
  if (chain.empty())
    return state.retainedBytes;
  return state.retainedBytes +
         (state.boundaryRetained ? 0 : chain.back().outputBytes);
}

constexpr InputPolicy kPolicies[] = {InputPolicy::Keep, InputPolicy::Compress,
                                     InputPolicy::Offload};

/// A partial plan the dynamic program reached, with a back pointer: the
/// group that ends it begins at `previousPosition` and ends at the
/// position of the frontier holding the entry.
struct Entry {
  int64_t retainedBytes;
  int64_t peakBytes;
  double cost;
  // retainedBytes / resolution: entries of one bucket compete as equals.
  int64_t bucket;
  uint32_t previousIndex; // in frontiers[previousFlag][previousPosition]
  uint32_t previousPosition;
  bool previousFlag;
  bool checkpointed;
  InputPolicy policy;
};

enum class Objective { CostWithinBudget, LeastPeak };

/// A Pareto frontier of one position: entries not dominated on (bucket,
/// key), where the key is cost (within budget) or peak (least-peak search),
/// one entry per bucket in increasing buckets, so keys strictly decrease
/// along it.
class Frontier {
public:
  explicit Frontier(Objective objective) : objective(objective) {}

  double key(const Entry &e) const {
    return objective == Objective::CostWithinBudget
               ? e.cost
               : static_cast<double>(e.peakBytes);
  }

  /// Adds `batch` (in non-decreasing buckets): the result is what inserting
  /// its entries one by one would keep (an entry dominated by another, or
  /// equal to one that came first, is dropped), in one merge of the two
  /// sorted sequences rather than a binary search and a vector insert per
  /// entry (the search's main cost on chains of ~100 segments).
  void merge(std::vector<Entry> &frontier, const std::vector<Entry> &batch,
             std::vector<Entry> &scratch) const {
    // Walking both in bucket order, an entry is kept when its key is below
    // the least key kept before it. The frontier's own keys strictly
    // decrease, so until a batch entry is kept, every frontier entry is:
    // the result is written only from the first batch entry kept on.
    double least = std::numeric_limits<double>::infinity();
    bool writing = false;
    size_t i = 0, j = 0;
    while (j < batch.size()) {
      int64_t bucket = batch[j].bucket;
      for (; i < frontier.size() && frontier[i].bucket < bucket; ++i) {
        if (writing && key(frontier[i]) >= least)
          continue;
        least = key(frontier[i]);
        if (writing)
          scratch.push_back(frontier[i]);
      }
      // The bucket's least key, the earliest of equal ones: the frontier's
      // entry came before the batch's.
      size_t bucketStart = i;
      const Entry *winner = nullptr;
      if (i < frontier.size() && frontier[i].bucket == bucket)
        winner = &frontier[i++];
      for (; j < batch.size() && batch[j].bucket == bucket; ++j)
        if (!winner || key(batch[j]) < key(*winner))
          winner = &batch[j];
      if (key(*winner) >= least)
        continue;
      least = key(*winner);
      if (!writing && winner != frontier.data() + bucketStart) {
        writing = true;
        scratch.assign(frontier.begin(), frontier.begin() + bucketStart);
      }
      if (writing)
        scratch.push_back(*winner);
    }
    if (!writing)
      return;
    // The rest of the frontier: kept from its first key below the least on.
    while (i < frontier.size() && key(frontier[i]) >= least)
      ++i;
    scratch.insert(scratch.end(), frontier.begin() + i, frontier.end());
    frontier.swap(scratch);
  }

private:
  Objective objective;
};

ChainPlan search(const std::vector<ChainSegment> &chain,
                 const ChainPlannerOptions &options, Objective objective) {
  unsigned n = chain.size();
  // frontiers[boundaryRetained][position]
  std::vector<std::vector<Entry>> frontiers[2];
  frontiers[0].assign(n + 1, {});
  frontiers[1].assign(n + 1, {});
  frontiers[0][0].push_back(
      Entry{0, 0, 0, 0, 0, 0, false, false, InputPolicy::Keep});
  int64_t budget = objective == Objective::CostWithinBudget
                       ? options.budgetBytes
                       : std::numeric_limits<int64_t>::max();
  const int64_t resolution =
      std::max<int64_t>(1, options.retainedResolutionBytes);
  Frontier rule(objective);
  std::vector<Entry> batch, scratch;

  // Extends every entry of the frontier at (position, flag) by one group.
  // Its retained bytes increase along it: once an entry's retained bytes
  // plus the group's local peak exceed the budget, so do all later ones'.
  auto extendAll = [&](unsigned position, bool flag,
                       const std::vector<Entry> &current, unsigned end,
                       const GroupEffect &effect, bool checkpointed,
                       InputPolicy policy) {
    if (!effect.valid)
      return;
    batch.clear();
    for (unsigned index = 0; index < current.size(); ++index) {
      const Entry &from = current[index];
      if (from.retainedBytes > budget - effect.localPeak)
        break;
      int64_t peak =
          std::max(from.peakBytes, from.retainedBytes + effect.localPeak);
      if (peak > budget)
        continue;
      int64_t retained = from.retainedBytes + effect.retainedBytes;
      batch.push_back(Entry{retained, peak, from.cost + effect.cost,
                            retained / resolution, index, position, flag,
                            checkpointed, policy});
    }
    rule.merge(frontiers[effect.boundaryRetained][end], batch, scratch);
  };

  for (unsigned position = 0; position < n; ++position) {
    for (bool flag : {false, true}) {
      // Groups extend to later positions only: this frontier stays as it is.
      const std::vector<Entry> &current = frontiers[flag][position];
      if (current.empty())
        continue;
      extendAll(position, flag, current, position + 1,
                storedSegment(chain[position], flag), false, InputPolicy::Keep);
      unsigned limit = options.maxGroupLength
                           ? std::min(n, position + options.maxGroupLength)
                           : n;
      RegionAccumulator region(chain, position, flag, options);
      while (region.getEnd() < limit && region.grow()) {
        unsigned end = region.getEnd();
        for (InputPolicy policy : kPolicies)
          extendAll(position, flag, current, end, region.effect(policy), true,
                    policy);
      }
    }
  }

  // Pick the best complete plan, counting the final activation.
  const Entry *best = nullptr;
  int64_t bestPeak = 0;
  for (bool flag : {false, true}) {
    for (const Entry &entry : frontiers[flag][n]) {
      int64_t peak = std::max(entry.peakBytes,
                              finalPeak(chain, {entry.retainedBytes, flag}));
      if (peak > budget)
        continue;
      bool better =
          !best || (objective == Objective::CostWithinBudget
                        ? (entry.cost < best->cost ||
                           (entry.cost == best->cost && peak < bestPeak))
                        : (peak < bestPeak ||
                           (peak == bestPeak && entry.cost < best->cost)));
      if (better) {
        best = &entry;
        bestPeak = peak;
      }
    }
  }
  ChainPlan plan;
  if (!best)
    return plan;
  plan.feasible = true;
  plan.peakBytes = bestPeak;
  plan.cost = best->cost;
  unsigned position = n;
  const Entry *entry = best;
  while (position != 0) {
    plan.groups.push_back(ChainGroup{entry->previousPosition, position,
                                     entry->checkpointed, entry->policy});
    position = entry->previousPosition;
    entry = &frontiers[entry->previousFlag][position][entry->previousIndex];
  }
  std::reverse(plan.groups.begin(), plan.groups.end());
  return plan;
}

} // namespace

ChainPlanEvaluation
mlir::memopt::evaluateChainPlan(const std::vector<ChainSegment> &chain,
                                const std::vector<ChainGroup> &groups,
                                const ChainPlannerOptions &options) {
  ChainPlanEvaluation result;
  PrefixState state;
  unsigned expectedBegin = 0;
  for (const ChainGroup &group : groups) {
    if (group.begin != expectedBegin || group.end <= group.begin ||
        group.end > chain.size())
      return result;
    expectedBegin = group.end;
    if (!group.checkpointed) {
      // A stored group behaves as its segments stored one by one.
      for (unsigned k = group.begin; k < group.end; ++k) {
        GroupEffect effect = storedSegment(chain[k], state.boundaryRetained);
        if (!effect.valid)
          return result;
        result.peakBytes =
            std::max(result.peakBytes, state.retainedBytes + effect.localPeak);
        state = {state.retainedBytes + effect.retainedBytes,
                 effect.boundaryRetained};
      }
      continue;
    }
    GroupEffect effect =
        checkpointedGroup(chain, group.begin, group.end, group.policy,
                          state.boundaryRetained, options);
    if (!effect.valid)
      return result;
    result.peakBytes =
        std::max(result.peakBytes, state.retainedBytes + effect.localPeak);
    result.cost += effect.cost;
    state = {state.retainedBytes + effect.retainedBytes,
             effect.boundaryRetained};
  }
  if (expectedBegin != chain.size())
    return result;
  result.peakBytes = std::max(result.peakBytes, finalPeak(chain, state));
  result.valid = true;
  return result;
}

ChainPlan mlir::memopt::planChain(const std::vector<ChainSegment> &chain,
                                  const ChainPlannerOptions &options) {
  ChainPlan plan = search(chain, options, Objective::CostWithinBudget);
  if (plan.feasible)
    return plan;
  // Nothing fits: report the smallest reachable peak and how to get it.
  plan = search(chain, options, Objective::LeastPeak);
  plan.feasible = false;
  return plan;
}
