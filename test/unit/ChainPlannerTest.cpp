//===- ChainPlannerTest.cpp - the chain planner against brute force -------===//
#include "memopt/Planning/ChainPlanner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace mlir::memopt;

namespace {

/// Every tiling of the chain into stored segments and checkpointed groups
/// with every input policy; the least cost within budget and the least peak.
struct BruteForce {
  double bestCost = INFINITY;
  int64_t bestPeakWithinBudget = 0;
  int64_t leastPeak = INT64_MAX;
  unsigned plansTried = 0;
};

BruteForce bruteForce(const std::vector<ChainSegment> &chain,
                      const ChainPlannerOptions &options) {
  BruteForce result;
  std::vector<ChainGroup> groups;
  std::function<void(unsigned)> recurse = [&](unsigned position) {
    if (position == chain.size()) {
      ChainPlanEvaluation evaluation =
          evaluateChainPlan(chain, groups, options);
      if (!evaluation.valid)
        return;
      ++result.plansTried;
      result.leastPeak = std::min(result.leastPeak, evaluation.peakBytes);
      if (evaluation.peakBytes <= options.budgetBytes &&
          evaluation.cost < result.bestCost) {
        result.bestCost = evaluation.cost;
        result.bestPeakWithinBudget = evaluation.peakBytes;
      }
      return;
    }
    groups.push_back({position, position + 1, false, InputPolicy::Keep});
    recurse(position + 1);
    groups.pop_back();
    for (unsigned end = position + 1; end <= chain.size(); ++end)
      for (InputPolicy policy :
           {InputPolicy::Keep, InputPolicy::Compress, InputPolicy::Offload}) {
        // Skip subtrees that can only end in invalid plans (saves time; the
        // evaluation would reject them anyway).
        if ((policy == InputPolicy::Offload && !options.allowOffload) ||
            (policy == InputPolicy::Compress &&
             !chain[position].packedInputBytes))
          continue;
        groups.push_back({position, end, true, policy});
        recurse(end);
        groups.pop_back();
      }
  };
  recurse(0);
  return result;
}

std::vector<ChainSegment> randomChain(std::mt19937 &rng, unsigned length) {
  std::uniform_int_distribution<int64_t> bytes(1, 64);
  std::uniform_int_distribution<int> coin(0, 9);
  std::uniform_real_distribution<double> seconds(0.1, 3.0);
  std::vector<ChainSegment> chain(length);
  int64_t boundary = bytes(rng) * 1024;
  for (unsigned i = 0; i < length; ++i) {
    ChainSegment &segment = chain[i];
    segment.label = "s" + std::to_string(i);
    segment.inputBytes = boundary;
    boundary = bytes(rng) * 1024;
    segment.outputBytes = boundary;
    segment.savedBytes = coin(rng) < 5 ? 0 : bytes(rng) * 512;
    // Some boundaries are saved whole, some in part (a residual's branch).
    segment.savedInputBytes =
        coin(rng) < 7 ? segment.inputBytes / (coin(rng) < 3 ? 2 : 1) : 0;
    segment.savedOutputBytes =
        coin(rng) < 3 ? segment.outputBytes / (coin(rng) < 3 ? 2 : 1) : 0;
    if (i > 0)
      segment.sharedBoundaryBytes = std::min(segment.savedInputBytes,
                                             chain[i - 1].savedOutputBytes);
    segment.backwardTransientBytes = coin(rng) < 5 ? 0 : bytes(rng) * 256;
    segment.writtenStateBytes = coin(rng) < 7 ? 0 : bytes(rng) * 64;
    segment.forwardCost = seconds(rng);
    if (coin(rng) < 3)
      segment.packedInputBytes = segment.inputBytes / 32;
    segment.canStartRegion = coin(rng) < 8;
  }
  return chain;
}

TEST(ChainPlanner, MatchesBruteForceOnRandomChains) {
  std::mt19937 rng(20261121);
  unsigned checked = 0, infeasible = 0;
  for (unsigned trial = 0; trial < 60; ++trial) {
    unsigned length = 1 + trial % 12;
    std::vector<ChainSegment> chain = randomChain(rng, length);
    ChainPlannerOptions options;
    options.allowOffload = trial % 3 == 0 && length <= 9;
    options.compressSecondsPerByte = 1e-6;
    options.offloadSecondsPerByte = 4e-6;
    // Budgets from generous to impossible, relative to storing everything.
    ChainPlanEvaluation stored = evaluateChainPlan(
        chain, {{0, length, false, InputPolicy::Keep}}, options);
    ASSERT_TRUE(stored.valid);
    for (double fraction : {1.1, 0.8, 0.6, 0.4, 0.05}) {
      options.budgetBytes = static_cast<int64_t>(stored.peakBytes * fraction);
      BruteForce expected = bruteForce(chain, options);
      ChainPlan plan = planChain(chain, options);
      ChainPlanEvaluation replayed =
          evaluateChainPlan(chain, plan.groups, options);
      ASSERT_TRUE(replayed.valid) << "trial " << trial;
      EXPECT_EQ(replayed.peakBytes, plan.peakBytes) << "trial " << trial;
      if (std::isfinite(expected.bestCost)) {
        ASSERT_TRUE(plan.feasible) << "trial " << trial << " budget "
                                   << options.budgetBytes;
        EXPECT_NEAR(plan.cost, expected.bestCost, 1e-9) << "trial " << trial;
        EXPECT_LE(plan.peakBytes, options.budgetBytes);
      } else {
        ++infeasible;
        EXPECT_FALSE(plan.feasible) << "trial " << trial;
        EXPECT_EQ(plan.peakBytes, expected.leastPeak) << "trial " << trial;
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 300u);
  EXPECT_GT(infeasible, 0u); // the 5% budgets exercise the infeasible path
}

// With a coarse resolution, partial plans whose retained bytes share a
// bucket compete on their key alone: the search may miss the optimum, but
// what it returns must be a real plan, priced as it reports, within the
// budget, and never better than the optimum.
TEST(ChainPlanner, CoarseResolutionReturnsHonestPlans) {
  std::mt19937 rng(20261127);
  unsigned feasible = 0, infeasible = 0;
  for (unsigned trial = 0; trial < 48; ++trial) {
    unsigned length = 2 + trial % 8;
    std::vector<ChainSegment> chain = randomChain(rng, length);
    ChainPlannerOptions options;
    options.allowOffload = trial % 4 == 0 && length <= 7;
    options.compressSecondsPerByte = 1e-6;
    options.offloadSecondsPerByte = 4e-6;
    ChainPlanEvaluation stored = evaluateChainPlan(
        chain, {{0, length, false, InputPolicy::Keep}}, options);
    ASSERT_TRUE(stored.valid);
    for (int64_t buckets : {4, 16, 64}) {
      options.retainedResolutionBytes = stored.peakBytes / buckets;
      for (double fraction : {1.1, 0.7, 0.45, 0.05}) {
        options.budgetBytes = static_cast<int64_t>(stored.peakBytes * fraction);
        BruteForce optimum = bruteForce(chain, options);
        ChainPlan plan = planChain(chain, options);
        ChainPlanEvaluation replayed =
            evaluateChainPlan(chain, plan.groups, options);
        ASSERT_TRUE(replayed.valid) << "trial " << trial;
        EXPECT_EQ(replayed.peakBytes, plan.peakBytes) << "trial " << trial;
        EXPECT_NEAR(replayed.cost, plan.cost, 1e-9) << "trial " << trial;
        if (plan.feasible) {
          ++feasible;
          EXPECT_LE(plan.peakBytes, options.budgetBytes);
          EXPECT_GE(plan.cost, optimum.bestCost - 1e-9) << "trial " << trial;
        } else {
          ++infeasible;
          EXPECT_GE(plan.peakBytes, optimum.leastPeak) << "trial " << trial;
        }
      }
    }
  }
  // Both paths are exercised (the counts of this seed: 185 and 391).
  EXPECT_GT(feasible, 100u);
  EXPECT_GT(infeasible, 100u);
}

TEST(ChainPlanner, GenerousBudgetStoresEverything) {
  std::mt19937 rng(7);
  std::vector<ChainSegment> chain = randomChain(rng, 10);
  ChainPlannerOptions options;
  ChainPlan plan = planChain(chain, options);
  ASSERT_TRUE(plan.feasible);
  EXPECT_EQ(plan.cost, 0);
  for (const ChainGroup &group : plan.groups)
    EXPECT_FALSE(group.checkpointed);
}

TEST(ChainPlanner, ForcedAndForbiddenSegmentsAreHonoured) {
  std::mt19937 rng(11);
  std::vector<ChainSegment> chain = randomChain(rng, 8);
  for (ChainSegment &segment : chain)
    segment.canStartRegion = true;
  chain[3].forceCheckpoint = true;
  chain[5].forbidCheckpoint = true;
  ChainPlannerOptions options;
  ChainPlan plan = planChain(chain, options);
  ASSERT_TRUE(plan.feasible);
  for (const ChainGroup &group : plan.groups) {
    if (group.begin <= 3 && 3 < group.end) {
      EXPECT_TRUE(group.checkpointed);
    }
    if (group.begin <= 5 && 5 < group.end) {
      EXPECT_FALSE(group.checkpointed);
    }
  }
}

TEST(ChainPlanner, CompressesBinaryInputsWhenThatIsCheapest) {
  // Two segments whose inputs are spikes: packing beats keeping them.
  std::vector<ChainSegment> chain(2);
  for (ChainSegment &segment : chain) {
    segment.inputBytes = segment.outputBytes = 32 * 1024;
    segment.savedInputBytes = segment.inputBytes;
    segment.forwardCost = 1.0;
    segment.packedInputBytes = 1024;
  }
  ChainPlannerOptions options;
  options.compressSecondsPerByte = 1e-9;
  ChainPlanEvaluation stored = evaluateChainPlan(
      chain, {{0, 2, false, InputPolicy::Keep}}, options);
  options.budgetBytes = stored.peakBytes - 16 * 1024;
  ChainPlan plan = planChain(chain, options);
  ASSERT_TRUE(plan.feasible);
  bool compressed = false;
  for (const ChainGroup &group : plan.groups)
    compressed |= group.checkpointed && group.policy == InputPolicy::Compress;
  EXPECT_TRUE(compressed);
  EXPECT_LE(plan.peakBytes, options.budgetBytes);
}

TEST(ChainPlanner, RegionsKeepACopyOfTheStateTheyWrite) {
  // One segment updating 2 KiB of running statistics: as a region it keeps
  // a copy from forward to backward and recomputes on a second one.
  std::vector<ChainSegment> chain(1);
  chain[0].inputBytes = chain[0].outputBytes = 4096;
  chain[0].savedBytes = 16384;
  chain[0].forwardCost = 1.0;
  ChainPlannerOptions options;
  std::vector<ChainGroup> region = {{0, 1, true, InputPolicy::Keep}};
  ChainPlanEvaluation without = evaluateChainPlan(chain, region, options);
  chain[0].writtenStateBytes = 2048;
  ChainPlanEvaluation with = evaluateChainPlan(chain, region, options);
  ASSERT_TRUE(without.valid && with.valid);
  EXPECT_EQ(with.peakBytes, without.peakBytes + 2 * 2048);
  // Stored, the segment copies nothing.
  std::vector<ChainGroup> stored = {{0, 1, false, InputPolicy::Keep}};
  chain[0].writtenStateBytes = 0;
  int64_t storedWithout = evaluateChainPlan(chain, stored, options).peakBytes;
  chain[0].writtenStateBytes = 2048;
  EXPECT_EQ(evaluateChainPlan(chain, stored, options).peakBytes, storedWithout);
}

TEST(ChainPlanner, NoRegionSplitsTheGradientSumOfAParameter) {
  // Four segments, each using parameter 0 once (a neuron's learnable decay
  // read at every time step); the last one's saved bytes dominate, so a
  // region over segments 1..3 would be the cheapest way to lower the peak.
  std::vector<ChainSegment> chain(4);
  for (unsigned i = 0; i < chain.size(); ++i) {
    chain[i].inputBytes = chain[i].outputBytes = 1024;
    chain[i].savedBytes = i == 0 ? 1024 : 64 * 1024;
    chain[i].forwardCost = 1.0;
    chain[i].paramUses = {{0, 1, 4}};
  }
  ChainPlannerOptions options;
  ChainPlanEvaluation stored =
      evaluateChainPlan(chain, {{0, 4, false, InputPolicy::Keep}}, options);
  // Two or three of the four uses in one region: never a valid region.
  EXPECT_FALSE(evaluateChainPlan(chain,
                                 {{0, 1, false, InputPolicy::Keep},
                                  {1, 4, true, InputPolicy::Keep}},
                                 options)
                   .valid);
  // One use, or all four: valid.
  EXPECT_TRUE(evaluateChainPlan(chain,
                                {{0, 3, false, InputPolicy::Keep},
                                 {3, 4, true, InputPolicy::Keep}},
                                options)
                  .valid);
  EXPECT_TRUE(
      evaluateChainPlan(chain, {{0, 4, true, InputPolicy::Keep}}, options)
          .valid);
  options.budgetBytes = stored.peakBytes - 32 * 1024;
  ChainPlan plan = planChain(chain, options);
  ASSERT_TRUE(plan.feasible);
  for (const ChainGroup &group : plan.groups) {
    unsigned uses = group.end - group.begin;
    if (group.checkpointed) {
      EXPECT_TRUE(uses == 1 || uses == 4) << group.begin << ".." << group.end;
    }
  }
}

TEST(ChainPlanner, NoRegionSplitsTheGradientSumOfAnActivation) {
  // An activation made in segment 0 and used once in each of segments 1..3
  // (parallel branches reading one feature map): backward adds the later
  // uses' gradients first, so a region may hold two or more of its uses
  // only when no use follows the region.
  std::vector<ChainSegment> chain(4);
  for (unsigned i = 0; i < chain.size(); ++i) {
    chain[i].inputBytes = chain[i].outputBytes = 1024;
    chain[i].savedBytes = 64 * 1024;
    chain[i].forwardCost = 1.0;
    if (i > 0)
      chain[i].activationUses = {{0, 1, 4 - i, 0}};
  }
  ChainPlannerOptions options;
  auto valid = [&](unsigned begin, unsigned end) {
    std::vector<ChainGroup> groups;
    for (unsigned s = 0; s < begin; ++s)
      groups.push_back({s, s + 1, false, InputPolicy::Keep});
    groups.push_back({begin, end, true, InputPolicy::Keep});
    for (unsigned s = end; s < chain.size(); ++s)
      groups.push_back({s, s + 1, false, InputPolicy::Keep});
    return evaluateChainPlan(chain, groups, options).valid;
  };
  EXPECT_FALSE(valid(1, 3)); // two uses, the third after it
  EXPECT_TRUE(valid(2, 4));  // the last two uses
  EXPECT_TRUE(valid(1, 4));  // all three
  EXPECT_TRUE(valid(1, 2));  // one use
  EXPECT_TRUE(valid(0, 3));  // made inside: its later use comes in first
  options.budgetBytes =
      evaluateChainPlan(chain, {{0, 4, false, InputPolicy::Keep}}, options)
          .peakBytes -
      64 * 1024;
  ChainPlan plan = planChain(chain, options);
  ASSERT_TRUE(plan.feasible);
  for (const ChainGroup &group : plan.groups)
    if (group.checkpointed)
      EXPECT_FALSE(group.begin == 1 && group.end == 3);
}

} // namespace
