//===- CheckpointAnalysisTest.cpp - Region write/RNG/side-effect analysis -===//

#include "../../../lib/Runtime/CheckpointRegion.h"
#include "memopt/Runtime/Checkpoint.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>

using namespace memopt::runtime;

namespace {

std::shared_ptr<torch::jit::Graph> parse(const std::string &ir) {
  auto graph = std::make_shared<torch::jit::Graph>();
  torch::jit::parseIR(ir, graph.get());
  return graph;
}

std::vector<bool> written(const std::string &ir, size_t numTensors) {
  return analyzeRegionEffects(*parse(ir), numTensors).writtenInputs;
}

TEST(CheckpointAnalysis, BatchNormStatisticsAreWritten) {
  auto w = written(R"IR(
graph(%x : Tensor, %g : Tensor, %b : Tensor, %m : Tensor, %v : Tensor,
      %n : Tensor):
  %one : int = prim::Constant[value=1]()
  %t : bool = prim::Constant[value=1]()
  %mom : float = prim::Constant[value=0.1]()
  %eps : float = prim::Constant[value=1e-05]()
  %n2 : Tensor = aten::add_(%n, %one, %one)
  %y : Tensor = aten::batch_norm(%x, %g, %b, %m, %v, %t, %mom, %eps, %t)
  return (%y))IR",
                   6);
  EXPECT_EQ(w, (std::vector<bool>{false, false, false, true, true, true}));
}

TEST(CheckpointAnalysis, WritesThroughViewsAndLoops) {
  auto w = written(R"IR(
graph(%x : Tensor, %y : Tensor, %z : Tensor):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %three : int = prim::Constant[value=3]()
  %t : bool = prim::Constant[value=1]()
  %row : Tensor = aten::select(%x, %zero, %zero)
  %r : Tensor = aten::relu_(%row)
  %out : Tensor = prim::Loop(%three, %t, %y)
    block0(%i : int, %acc : Tensor):
      %acc2 : Tensor = aten::mul_(%acc, %z)
      -> (%t, %acc2)
  return (%out))IR",
                   3);
  // x through a view; y as the loop-carried value; z is only read.
  EXPECT_EQ(w, (std::vector<bool>{true, true, false}));
}

TEST(CheckpointAnalysis, ListWritesAndFreshValuesAreNotInputWrites) {
  auto w = written(R"IR(
graph(%x : Tensor, %y : Tensor):
  %l : Tensor[] = prim::ListConstruct(%x)
  %u : Tensor[] = aten::append(%l, %y)
  %c : Tensor = aten::mul(%x, %y)
  %d : Tensor = aten::relu_(%c)
  return (%d))IR",
                   2);
  EXPECT_EQ(w, (std::vector<bool>{false, false}));
}

TEST(CheckpointAnalysis, WritesInBranchesAndElementWrites) {
  auto w = written(R"IR(
graph(%x : Tensor, %y : Tensor, %z : Tensor, %c : bool):
  %one : int = prim::Constant[value=1]()
  %v : Tensor = prim::If(%c)
    block0():
      -> (%x)
    block1():
      %t : Tensor = aten::t(%y)
      -> (%t)
  %w : Tensor = aten::add_(%v, %one, %one)
  %l : Tensor[] = prim::ListConstruct(%z)
  aten::_foreach_add_(%l, %one)
  return (%w))IR",
                   3);
  EXPECT_EQ(w, (std::vector<bool>{true, true, true}));
}

TEST(CheckpointAnalysis, RandomNumbersDetected) {
  auto effects = analyzeRegionEffects(*parse(R"IR(
graph(%x : Tensor, %p : float):
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::dropout(%x, %p, %t)
  return (%y))IR"),
                                      1);
  EXPECT_TRUE(effects.nondeterministic);
  effects = analyzeRegionEffects(*parse(R"IR(
graph(%x : Tensor):
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::bernoulli(%x, %none)
  return (%y))IR"),
                                 1);
  EXPECT_TRUE(effects.nondeterministic);
  effects = analyzeRegionEffects(*parse(R"IR(
graph(%x : Tensor):
  %shape : int[] = prim::Constant[value=[4]]()
  %none : NoneType = prim::Constant()
  %eps : float = prim::Constant[value=1.0000000000000001e-05]()
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::layer_norm(%x, %shape, %none, %none, %eps, %t)
  return (%y))IR"),
                                 1);
  EXPECT_FALSE(effects.nondeterministic);
}

TEST(CheckpointAnalysis, SideEffectsRefused) {
  auto graph = parse(R"IR(
graph(%x : Tensor):
  prim::Print(%x)
  return (%x))IR");
  try {
    checkRegionSideEffects(*graph, "r");
    FAIL() << "prim::Print accepted";
  } catch (const c10::Error &e) {
    EXPECT_NE(std::string(e.what()).find("(prim::Print"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(checkRegionSideEffects(*parse(R"IR(
graph(%x : Tensor, %c : bool):
  %msg : str = prim::Constant[value="bad"]()
  prim::If(%c)
    block0():
      prim::RaiseException(%msg)
      -> ()
    block1():
      -> ()
  return (%x))IR"),
                                         "r"));
}

TEST(CheckpointPolicy, ParsesAndPrints) {
  for (const char *text :
       {"keep", "offload:host", "offload:unified", "compress:bit",
        "compress:bool", "compress:uint8", "compress:sparse",
        "compress:bit:check"})
    EXPECT_EQ(SavePolicy::parse(text).str(), text);
  EXPECT_TRUE(SavePolicy::parse("compress:sparse:check").check);
  EXPECT_THROW(SavePolicy::parse("compress:"), c10::Error);
  EXPECT_THROW(SavePolicy::parse("offload"), c10::Error);
  EXPECT_THROW(SavePolicy::parse("keep:check"), c10::Error);
}

} // namespace
