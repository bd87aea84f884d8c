//===- FunctionChainTest.cpp - which cuts a long function keeps ----------===//
//
// A function of 20 cheap linear layers (4x4) followed by 4 heavy ones
// (512x512),
// coarsened to 6 segments: the cheapest-crossing selection keeps cuts in the
// cheap stretch and leaves the heavy ops in one segment; the balanced one
// splits the heavy stretch, which is what recompute granularity needs.
// Then the refinements of a chosen plan (PlanRefinement).
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/PlanRefinement.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace mlir;
using namespace mlir::memopt;

namespace {

constexpr int kCheapOps = 20, kHeavyOps = 4;

/// A linear layer of its own weight (so that autograd saves its input).
std::string linear(const std::string &result, const std::string &input,
                   const std::string &type, const std::string &weightType,
                   int line) {
  std::string n = std::to_string(line);
  std::string loc = " loc(\"fc" + n + "\"(\"m.py\":" + n + ":1))\n";
  return "  %w" + result.substr(1) + " = memopt.param \"fc" + n +
         ".weight\" : " + weightType + loc + "  " + result +
         " = memopt.op \"aten::linear\"(" + input + ", %w" + result.substr(1) +
         ") [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = \"\"} : "
         "(" +
         type + ", " + weightType + ") -> " + type + loc;
}

std::string makeFunction() {
  const std::string cheap = "tensor<4x4xf32>", heavy = "tensor<512x512xf32>";
  std::string text = "func.func @f(%y: " + cheap + ", %x: " + heavy + ") -> (" +
                     cheap + ", " + heavy + ") {\n";
  std::string last = "%y";
  for (int i = 0; i < kCheapOps; ++i) {
    std::string next = "%c" + std::to_string(i);
    text += linear(next, last, cheap, "tensor<4x4xf32>", i);
    last = next;
  }
  std::string cheapLast = last;
  last = "%x";
  for (int i = 0; i < kHeavyOps; ++i) {
    std::string next = "%h" + std::to_string(i);
    text += linear(next, last, heavy, "tensor<512x512xf32>", kCheapOps + i);
    last = next;
  }
  return text + "  return " + cheapLast + ", " + last + " : " + cheap + ", " +
         heavy + "\n}\n";
}

class FunctionChainTest : public ::testing::Test {
protected:
  FunctionChainTest() {
    context.loadDialect<MemoptDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(makeFunction(), &context);
  }

  FunctionChain build(CutSelection selection, unsigned maxSegments) {
    auto func = cast<func::FuncOp>(module->getBody()->front());
    TrainingMemoryModel memory(func);
    CostModel cost(func);
    BinaryValueAnalysis binary(func);
    FunctionChainOptions options;
    options.maxSegments = maxSegments;
    options.cutSelection = selection;
    FailureOr<FunctionChain> chain =
        buildFunctionChain(func, memory, cost, binary, options);
    EXPECT_TRUE(succeeded(chain));
    return std::move(*chain);
  }

  /// How many segments hold a heavy linear layer.
  static unsigned heavySegments(const FunctionChain &chain) {
    std::set<unsigned> segments;
    for (unsigned s = 0; s < chain.ops.size(); ++s)
      for (Operation *op : chain.ops[s])
        if (isa<TorchOp>(op) &&
            cast<ShapedType>(op->getResult(0).getType()).getDimSize(0) == 512)
          segments.insert(s);
    return segments.size();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(FunctionChainTest, ShortFunctionsAreNotCoarsened) {
  ASSERT_TRUE(module);
  for (CutSelection selection :
       {CutSelection::CheapestCrossing, CutSelection::BalancedSaved}) {
    FunctionChain chain = build(selection, 96);
    EXPECT_FALSE(chain.coarsened);
    EXPECT_GE(chain.segments.size(), unsigned(kCheapOps + kHeavyOps));
    EXPECT_EQ(heavySegments(chain), unsigned(kHeavyOps));
  }
}

TEST_F(FunctionChainTest, CheapestCrossingKeepsCutsWhereLittleCrosses) {
  ASSERT_TRUE(module);
  FunctionChain chain = build(CutSelection::CheapestCrossing, 6);
  EXPECT_TRUE(chain.coarsened);
  EXPECT_EQ(chain.segments.size(), 6u);
  EXPECT_EQ(heavySegments(chain), 1u);
}

TEST_F(FunctionChainTest, BalancedSavedSplitsTheHeavyStretch) {
  ASSERT_TRUE(module);
  FunctionChain chain = build(CutSelection::BalancedSaved, 6);
  EXPECT_TRUE(chain.coarsened);
  EXPECT_EQ(chain.segments.size(), 6u);
  // Every heavy layer alone; the twenty cheap ones share what is left.
  EXPECT_EQ(heavySegments(chain), unsigned(kHeavyOps));
}

/// Four blocks of a linear layer (`blocks.i.fc`) then a tanh (`blocks.i.act`).
std::string makeBlocks() {
  const std::string type = "tensor<256x256xf32>";
  std::string text = "func.func @f(%x: " + type + ") -> " + type + " {\n",
              last = "%x";
  for (int i = 0; i < 4; ++i) {
    std::string n = std::to_string(i);
    auto loc = [&](const std::string &name) {
      return " loc(\"blocks." + n + "." + name + "\"(\"m.py\":" + n + ":1))\n";
    };
    text += "  %w" + n + " = memopt.param \"blocks." + n +
            ".fc.weight\" : " + type + loc("fc");
    text += "  %h" + n + " = memopt.op \"aten::linear\"(" + last + ", %w" + n +
            ") [#memopt.arg<0>, #memopt.arg<1>, #memopt.none] {overload = "
            "\"\"} : (" +
            type + ", " + type + ") -> " + type + loc("fc");
    text += "  %a" + n + " = memopt.op \"aten::tanh\"(%h" + n +
            ") [#memopt.arg<0>] {overload = \"\"} : (" + type + ") -> " + type +
            loc("act");
    last = "%a" + n;
  }
  return text + "  return " + last + " : " + type + "\n}\n";
}

class ModuleAlignmentTest : public ::testing::Test {
protected:
  ModuleAlignmentTest() {
    context.loadDialect<MemoptDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(makeBlocks(), &context);
    auto func = cast<func::FuncOp>(module->getBody()->front());
    TrainingMemoryModel memory(func);
    CostModel cost(func);
    BinaryValueAnalysis binary(func);
    chain = std::move(*buildFunctionChain(func, memory, cost, binary, {}));
  }

  /// The segment holding the op at `modulePath`.
  unsigned segmentOf(StringRef modulePath) {
    for (unsigned s = 0; s < chain.ops.size(); ++s)
      for (Operation *op : chain.ops[s])
        if (isa<TorchOp>(op) && getModulePath(op) == modulePath)
          return s;
    ADD_FAILURE() << "no op of " << modulePath.str();
    return 0;
  }

  /// Regions over the given [begin, end) ranges (in order, disjoint),
  /// single unstored segments around them.
  ChainPlan planWithRegions(ArrayRef<std::pair<unsigned, unsigned>> ranges) {
    ChainPlan plan;
    unsigned next = 0;
    for (auto [begin, end] : ranges) {
      for (; next < begin; ++next)
        plan.groups.push_back({next, next + 1, false, InputPolicy::Keep});
      plan.groups.push_back({begin, end, true, InputPolicy::Keep});
      next = end;
    }
    for (; next < chain.segments.size(); ++next)
      plan.groups.push_back({next, next + 1, false, InputPolicy::Keep});
    plan.cost = evaluateChainPlan(chain.segments, plan.groups, {}).cost;
    return plan;
  }

  /// One region over segments [begin, end), single unstored segments around.
  ChainPlan planWithRegion(unsigned begin, unsigned end) {
    return planWithRegions({{begin, end}});
  }

  static const ChainGroup &region(const ChainPlan &plan) {
    return *llvm::find_if(plan.groups,
                          [](const ChainGroup &g) { return g.checkpointed; });
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  FunctionChain chain;
};

TEST_F(ModuleAlignmentTest, CountsModulesARunCutsThrough) {
  ASSERT_TRUE(module);
  ModuleSplitCounter splits(chain);
  unsigned fc1 = segmentOf("blocks.1.fc"), act1 = segmentOf("blocks.1.act");
  EXPECT_EQ(splits.countSplit(fc1, act1 + 1), 0u); // blocks.1 whole
  EXPECT_EQ(splits.countSplit(fc1, fc1 + 1), 0u);  // inside blocks.1 only
  // blocks.0.act .. blocks.1.fc cuts through blocks.0 and blocks.1.
  EXPECT_EQ(splits.countSplit(segmentOf("blocks.0.act"), fc1 + 1), 2u);
  EXPECT_EQ(splits.countSplit(0, chain.segments.size()), 0u);
}

TEST_F(ModuleAlignmentTest, MovesARegionOntoWholeModulesWhenFree) {
  ASSERT_TRUE(module);
  ModuleSplitCounter splits(chain);
  ChainPlan plan =
      planWithRegion(segmentOf("blocks.0.act"), segmentOf("blocks.1.fc") + 1);
  ASSERT_EQ(splits.countSplit(plan.groups), 2u);
  unsigned predictions = 0;
  ChainPlan aligned = alignRegionsToModules(
      plan, chain.segments, splits, {}, AlignmentLimits{1000, plan.cost},
      [&](const ChainPlan &candidate) -> FailureOr<int64_t> {
        ++predictions;
        EXPECT_LE(candidate.cost, plan.cost * (1 + 1e-9));
        return 1000;
      });
  EXPECT_EQ(splits.countSplit(aligned.groups), 0u);
  EXPECT_EQ(predictions, 1u);
}

TEST_F(ModuleAlignmentTest, KeepsTheRegionWhenMovingRaisesThePeak) {
  ASSERT_TRUE(module);
  ModuleSplitCounter splits(chain);
  ChainPlan plan =
      planWithRegion(segmentOf("blocks.0.act"), segmentOf("blocks.1.fc") + 1);
  auto higher = [](const ChainPlan &) -> FailureOr<int64_t> { return 1001; };
  auto unbuildable = [](const ChainPlan &) -> FailureOr<int64_t> {
    return failure();
  };
  for (auto predict :
       {llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)>(higher),
        llvm::function_ref<FailureOr<int64_t>(const ChainPlan &)>(
            unbuildable)}) {
    ChainPlan kept =
        alignRegionsToModules(plan, chain.segments, splits, {},
                              AlignmentLimits{1000, plan.cost}, predict);
    EXPECT_EQ(region(kept).begin, region(plan).begin);
    EXPECT_EQ(region(kept).end, region(plan).end);
  }
}

TEST_F(ModuleAlignmentTest, NeverSpendsMoreRecomputeTime) {
  ASSERT_TRUE(module);
  ModuleSplitCounter splits(chain);
  ChainPlan plan =
      planWithRegion(segmentOf("blocks.0.act"), segmentOf("blocks.1.fc") + 1);
  // Every other region recomputes something: none fits in no time at all.
  unsigned predictions = 0;
  ChainPlan kept = alignRegionsToModules(
      plan, chain.segments, splits, {}, AlignmentLimits{1000, 0.0},
      [&](const ChainPlan &) -> FailureOr<int64_t> {
        ++predictions;
        return 1000;
      });
  EXPECT_EQ(predictions, 0u);
  EXPECT_EQ(region(kept).begin, region(plan).begin);
  EXPECT_EQ(region(kept).end, region(plan).end);
}

TEST_F(ModuleAlignmentTest, DropsRegionsThatLowerNoPeak) {
  ASSERT_TRUE(module);
  ChainPlan plan =
      planWithRegion(segmentOf("blocks.1.fc"), segmentOf("blocks.1.act") + 1);
  auto regions = [](const ChainPlan &p) {
    return llvm::count_if(p.groups,
                          [](const ChainGroup &g) { return g.checkpointed; });
  };
  auto same = [](const ChainPlan &) -> FailureOr<int64_t> { return 1000; };
  auto higher = [](const ChainPlan &) -> FailureOr<int64_t> { return 1001; };
  ChainPlan dropped = dropIdleRegions(plan, chain.segments, {}, 1000, same);
  EXPECT_EQ(regions(dropped), 0);
  EXPECT_LT(dropped.cost, plan.cost);
  EXPECT_EQ(regions(dropIdleRegions(plan, chain.segments, {}, 1000, higher)),
            1);
  // --checkpoint blocks.1: the region stays whatever the peak.
  std::vector<ChainSegment> forced = chain.segments;
  forced[segmentOf("blocks.1.fc")].forceCheckpoint = true;
  EXPECT_EQ(regions(dropIdleRegions(plan, forced, {}, 1000, same)), 1);
}

TEST(FirstAcceptedInOrderTest, GivesTheAnswerOfAScanInOrder) {
  MLIRContext threaded; // several threads (the test host has at least 2)
  MLIRContext sequential;
  sequential.disableMultithreading();
  for (unsigned pattern = 0; pattern < 64; ++pattern) {
    auto accepts = [&](size_t i) { return (pattern >> i) & 1; };
    std::optional<size_t> expected;
    for (size_t i = 0; i < 6 && !expected; ++i)
      if (accepts(i))
        expected = i;
    EXPECT_EQ(firstAcceptedInOrder(nullptr, 6, accepts), expected);
    EXPECT_EQ(firstAcceptedInOrder(&sequential, 6, accepts), expected);
    EXPECT_EQ(firstAcceptedInOrder(&threaded, 6, accepts), expected);
  }
  EXPECT_EQ(firstAcceptedInOrder(&threaded, 0, [](size_t) { return true; }),
            std::nullopt);
}

TEST(FirstAcceptedInOrderTest, StartsNoTryAfterAnAcceptedOneInOrder) {
  MLIRContext sequential;
  sequential.disableMultithreading();
  std::vector<size_t> tried;
  auto accepts = [&](size_t i) {
    tried.push_back(i);
    return i == 2;
  };
  EXPECT_EQ(firstAcceptedInOrder(&sequential, 8, accepts), 2u);
  EXPECT_EQ(tried, (std::vector<size_t>{0, 1, 2}));
  tried.clear();
  EXPECT_EQ(firstAcceptedInOrder(nullptr, 8, accepts), 2u);
  EXPECT_EQ(tried, (std::vector<size_t>{0, 1, 2}));
}

TEST_F(ModuleAlignmentTest, PredictingMovesInParallelKeepsThePlan) {
  ASSERT_TRUE(module);
  ModuleSplitCounter splits(chain);
  ChainPlan plan =
      planWithRegion(segmentOf("blocks.0.act"), segmentOf("blocks.1.fc") + 1);
  // Only moves that keep blocks.0.act in the region are accepted: the
  // first of them in the order tried wins, however the threads run.
  unsigned act0 = segmentOf("blocks.0.act");
  auto predict = [&](const ChainPlan &candidate) -> FailureOr<int64_t> {
    return region(candidate).begin <= act0 ? 1000 : 2000;
  };
  ChainPlan alone =
      alignRegionsToModules(plan, chain.segments, splits, {},
                            AlignmentLimits{1000, plan.cost}, predict);
  ChainPlan together = alignRegionsToModules(plan, chain.segments, splits, {},
                                             AlignmentLimits{1000, plan.cost},
                                             predict, &context);
  EXPECT_EQ(region(together).begin, region(alone).begin);
  EXPECT_EQ(region(together).end, region(alone).end);
  EXPECT_LT(splits.countSplit(together.groups), 2u);
}

TEST_F(ModuleAlignmentTest, DroppingInParallelKeepsTheOrderOfTries) {
  ASSERT_TRUE(module);
  // Three regions: blocks.0, blocks.1 and blocks.2.
  std::vector<std::pair<unsigned, unsigned>> blocks;
  for (unsigned b = 0; b < 3; ++b) {
    std::string block = "blocks." + std::to_string(b);
    blocks.emplace_back(segmentOf(block + ".fc"),
                        segmentOf(block + ".act") + 1);
  }
  ChainPlan plan = planWithRegions(blocks);
  ASSERT_TRUE(evaluateChainPlan(chain.segments, plan.groups, {}).valid);
  auto kept = [](const ChainPlan &p) {
    std::vector<unsigned> begins;
    for (const ChainGroup &g : p.groups)
      if (g.checkpointed)
        begins.push_back(g.begin);
    return begins;
  };
  // Any one region may go, not two: the scan in order drops the first only,
  // and a parallel scan must too (the later tries it started from the
  // first plan are stale once the first is dropped).
  auto onePlanAway = [&](const ChainPlan &p) -> FailureOr<int64_t> {
    return kept(p).size() >= 2 ? 1000 : 2000;
  };
  ChainPlan alone =
      dropIdleRegions(plan, chain.segments, {}, 1000, onePlanAway);
  ChainPlan together =
      dropIdleRegions(plan, chain.segments, {}, 1000, onePlanAway, &context);
  ASSERT_EQ(kept(alone).size(), 2u);
  EXPECT_EQ(kept(alone).front(), segmentOf("blocks.1.fc"));
  EXPECT_EQ(kept(together), kept(alone));
  // Only the last may go: found after two refused tries.
  unsigned last = segmentOf("blocks.2.fc");
  auto lastOnly = [&](const ChainPlan &p) -> FailureOr<int64_t> {
    std::vector<unsigned> begins = kept(p);
    return begins.size() == 2 && begins.back() != last ? 1000 : 2000;
  };
  EXPECT_EQ(
      kept(dropIdleRegions(plan, chain.segments, {}, 1000, lastOnly, &context)),
      kept(dropIdleRegions(plan, chain.segments, {}, 1000, lastOnly)));
  EXPECT_EQ(
      kept(dropIdleRegions(plan, chain.segments, {}, 1000, lastOnly)).size(),
      2u);
}

} // namespace
