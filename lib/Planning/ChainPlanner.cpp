//===- ChainPlanner.cpp - optimal checkpointing of a chain ----------------===//
#include "memopt/Planning/ChainPlanner.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cassert>
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

/// One Pareto-frontier entry of the dynamic program, with a back pointer.
struct Entry {
  int64_t retainedBytes;
  double cost;
  int64_t peakBytes;
  unsigned previousPosition;
  bool previousFlag;
  unsigned previousIndex;
  ChainGroup group;
  // retainedBytes / resolution: entries of one bucket compete as equals
  // (kept here, as the frontier's searches compare it on every probe).
  int64_t bucket = 0;
};

enum class Objective { CostWithinBudget, LeastPeak };

/// Keeps entries not dominated on (retained, second key) where the second
/// key is cost (within budget) or peak (least-peak search). The frontier is
/// sorted by retained bytes, so its keys strictly decrease along it.
void insertPareto(std::vector<Entry> &frontier, const Entry &entry,
                  Objective objective) {
  auto key = [&](const Entry &e) {
    return objective == Objective::CostWithinBudget
               ? e.cost
               : static_cast<double>(e.peakBytes);
  };
  // Entries whose retained bytes differ by less than the resolution compete
  // as equals (resolution 1: exact).
  int64_t mine = entry.bucket;
  auto above =
      std::upper_bound(frontier.begin(), frontier.end(), mine,
                       [](int64_t b, const Entry &e) { return b < e.bucket; });
  // The last entry retaining no more has the least key of all such entries.
  if (above != frontier.begin() && key(*std::prev(above)) <= key(entry))
    return;
  auto first =
      std::lower_bound(frontier.begin(), above, mine,
                       [](const Entry &e, int64_t b) { return e.bucket < b; });
  auto last = first;
  while (last != frontier.end() && key(*last) >= key(entry))
    ++last;
  // Replace the first dominated entry in place: one move of the tail at
  // most, where erase + insert moved it twice.
  if (first == last) {
    frontier.insert(first, entry);
    return;
  }
  *first = entry;
  frontier.erase(std::next(first), last);
}

ChainPlan search(const std::vector<ChainSegment> &chain,
                 const ChainPlannerOptions &options, Objective objective) {
  unsigned n = chain.size();
  // frontiers[position][boundaryRetained]
  std::vector<std::vector<Entry>> frontiers[2];
  frontiers[0].assign(n + 1, {});
  frontiers[1].assign(n + 1, {});
  frontiers[0][0].push_back(Entry{0, 0, 0, 0, false, 0, ChainGroup{}});
  int64_t budget = objective == Objective::CostWithinBudget
                       ? options.budgetBytes
                       : std::numeric_limits<int64_t>::max();
  const int64_t resolution =
      std::max<int64_t>(1, options.retainedResolutionBytes);

  auto extend = [&](unsigned position, bool flag, unsigned index,
                    const Entry &from, unsigned end, const GroupEffect &effect,
                    ChainGroup group) {
    if (!effect.valid)
      return;
    int64_t peak =
        std::max(from.peakBytes, from.retainedBytes + effect.localPeak);
    if (peak > budget)
      return;
    Entry next{from.retainedBytes + effect.retainedBytes,
               from.cost + effect.cost,
               peak,
               position,
               flag,
               index,
               group};
    next.bucket = next.retainedBytes / resolution;
    insertPareto(frontiers[effect.boundaryRetained][end], next, objective);
  };

  // A frontier holds one entry per bucket, in increasing buckets, so its
  // retained bytes never decrease along it: once an entry's retained bytes
  // plus a group's local peak exceed the budget, so do all later ones'.
  auto extendAll = [&](unsigned position, bool flag,
                       const std::vector<Entry> &current, unsigned end,
                       const GroupEffect &effect, ChainGroup group) {
    if (!effect.valid)
      return;
    for (unsigned index = 0; index < current.size(); ++index) {
      if (current[index].retainedBytes > budget - effect.localPeak)
        return;
      extend(position, flag, index, current[index], end, effect, group);
    }
  };

  for (unsigned position = 0; position < n; ++position) {
    for (bool flag : {false, true}) {
      // Groups extend to later positions only: this frontier stays as it is.
      const std::vector<Entry> &current = frontiers[flag][position];
      if (current.empty())
        continue;
      extendAll(position, flag, current, position + 1,
                storedSegment(chain[position], flag),
                ChainGroup{position, position + 1, false, InputPolicy::Keep});
      unsigned limit = options.maxGroupLength
                           ? std::min(n, position + options.maxGroupLength)
                           : n;
      RegionAccumulator region(chain, position, flag, options);
      while (region.getEnd() < limit && region.grow()) {
        unsigned end = region.getEnd();
        for (InputPolicy policy : kPolicies)
          extendAll(position, flag, current, end, region.effect(policy),
                    ChainGroup{position, end, true, policy});
      }
    }
  }

  // Pick the best complete plan, counting the final activation.
  const Entry *best = nullptr;
  bool bestFlag = false;
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
        bestFlag = flag;
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
  bool flag = bestFlag;
  const Entry *entry = best;
  while (position != 0) {
    plan.groups.push_back(entry->group);
    unsigned previousPosition = entry->previousPosition;
    bool previousFlag = entry->previousFlag;
    entry = &frontiers[previousFlag][previousPosition][entry->previousIndex];
    position = previousPosition;
    flag = previousFlag;
  }
  (void)flag;
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
