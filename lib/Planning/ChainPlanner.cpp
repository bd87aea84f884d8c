//===- ChainPlanner.cpp - optimal checkpointing of a chain ----------------===//
#include "memopt/Planning/ChainPlanner.h"

#include <algorithm>
#include <cassert>
#include <limits>

using namespace mlir::memopt;

namespace {

/// What the model knows after a prefix of the chain.
struct PrefixState {
  int64_t retainedBytes = 0;  // saved for backward by groups so far
  bool boundaryRetained = false; // t_i is among them (a stored producer saved it)
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
  int64_t input = segment.savesInput && !inputRetained ? segment.inputBytes : 0;
  int64_t output = segment.savesOutput ? segment.outputBytes : 0;
  effect.retainedBytes = segment.savedBytes + input + output;
  effect.boundaryRetained = segment.savesOutput;
  // Forward: the input is alive while the output is produced.
  int64_t forward = effect.retainedBytes +
                    (inputRetained || segment.savesInput ? 0 : segment.inputBytes) +
                    (segment.savesOutput ? 0 : segment.outputBytes);
  // Backward: gradients of output and input, plus workspace.
  int64_t backward = effect.retainedBytes + segment.outputBytes +
                     segment.inputBytes + segment.backwardTransientBytes;
  effect.localPeak = std::max(forward, backward);
  return effect;
}

GroupEffect checkpointedGroup(const std::vector<ChainSegment> &chain,
                              unsigned begin, unsigned end, InputPolicy policy,
                              bool inputRetained,
                              const ChainPlannerOptions &options) {
  GroupEffect effect;
  const ChainSegment &first = chain[begin];
  if (!first.canStartRegion)
    return effect;
  for (unsigned k = begin; k < end; ++k)
    if (chain[k].forbidCheckpoint)
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

  int64_t restoredInput = 0;
  switch (policy) {
  case InputPolicy::Keep:
    effect.retainedBytes = inputRetained ? 0 : first.inputBytes;
    break;
  case InputPolicy::Compress:
    effect.retainedBytes = *first.packedInputBytes;
    restoredInput = first.inputBytes;
    effect.cost += options.compressSecondsPerByte * first.inputBytes;
    break;
  case InputPolicy::Offload:
    effect.retainedBytes = 0;
    restoredInput = first.inputBytes;
    effect.cost += options.offloadSecondsPerByte * first.inputBytes;
    break;
  }

  // Forward runs without grad: only the current input and output are alive.
  // Backward recomputes the group, keeping what its segments save.
  int64_t forwardWorking = 0, recomputedSaved = 0, backwardWorking = 0;
  for (unsigned k = begin; k < end; ++k) {
    const ChainSegment &segment = chain[k];
    effect.cost += segment.forwardCost;
    forwardWorking =
        std::max(forwardWorking, segment.inputBytes + segment.outputBytes);
    recomputedSaved += segment.savedBytes;
    bool innerBoundarySaved =
        k > begin && (segment.savesInput || chain[k - 1].savesOutput);
    if (innerBoundarySaved)
      recomputedSaved += segment.inputBytes;
    backwardWorking = std::max(backwardWorking, segment.inputBytes +
                                                    segment.backwardTransientBytes);
  }
  const ChainSegment &last = chain[end - 1];
  if (last.savesOutput)
    recomputedSaved += last.outputBytes;
  int64_t forward = effect.retainedBytes + forwardWorking;
  int64_t backward = effect.retainedBytes + restoredInput + recomputedSaved +
                     last.outputBytes + backwardWorking;
  effect.localPeak = std::max(forward, backward);
  effect.valid = true;
  return effect;
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
};

enum class Objective { CostWithinBudget, LeastPeak };

/// Keeps entries not dominated on (retained, second key) where the second
/// key is cost (within budget) or peak (least-peak search).
void insertPareto(std::vector<Entry> &frontier, const Entry &entry,
                  Objective objective) {
  auto key = [&](const Entry &e) {
    return objective == Objective::CostWithinBudget
               ? e.cost
               : static_cast<double>(e.peakBytes);
  };
  for (const Entry &other : frontier)
    if (other.retainedBytes <= entry.retainedBytes && key(other) <= key(entry))
      return;
  frontier.erase(std::remove_if(frontier.begin(), frontier.end(),
                                [&](const Entry &other) {
                                  return entry.retainedBytes <=
                                             other.retainedBytes &&
                                         key(entry) <= key(other);
                                }),
                 frontier.end());
  frontier.push_back(entry);
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

  auto extend = [&](unsigned position, bool flag, unsigned index,
                    const Entry &from, unsigned end, const GroupEffect &effect,
                    ChainGroup group) {
    if (!effect.valid)
      return;
    int64_t peak = std::max(from.peakBytes, from.retainedBytes + effect.localPeak);
    if (peak > budget)
      return;
    Entry next{from.retainedBytes + effect.retainedBytes,
               from.cost + effect.cost,
               peak,
               position,
               flag,
               index,
               group};
    insertPareto(frontiers[effect.boundaryRetained][end], next, objective);
  };

  for (unsigned position = 0; position < n; ++position) {
    for (bool flag : {false, true}) {
      const std::vector<Entry> current = frontiers[flag][position];
      for (unsigned index = 0; index < current.size(); ++index) {
        const Entry &from = current[index];
        extend(position, flag, index, from, position + 1,
               storedSegment(chain[position], flag),
               ChainGroup{position, position + 1, false, InputPolicy::Keep});
        unsigned limit = options.maxGroupLength
                             ? std::min(n, position + options.maxGroupLength)
                             : n;
        for (unsigned end = position + 1; end <= limit; ++end)
          for (InputPolicy policy : kPolicies)
            extend(position, flag, index, from, end,
                   checkpointedGroup(chain, position, end, policy, flag,
                                     options),
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
      int64_t peak = std::max(
          entry.peakBytes, finalPeak(chain, {entry.retainedBytes, flag}));
      if (peak > budget)
        continue;
      bool better =
          !best ||
          (objective == Objective::CostWithinBudget
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
        result.peakBytes = std::max(result.peakBytes,
                                    state.retainedBytes + effect.localPeak);
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
