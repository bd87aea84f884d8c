//===- KeptControlFlowTest.cpp - control flow on tensor data, kept whole --===//
//
// describeKeptControlFlow, hoistStateReads and runKeptControlFlow on
// hand-written TorchScript: which values a kept If or Loop reads (and in
// what order), that its text reads back (non-finite constants included),
// which inputs it writes, which effects it has, and what it refuses.
//
//===----------------------------------------------------------------------===//
#include "../../lib/Conversion/TorchScriptImport/ImportInternal.h"

#include <ATen/Functions.h>
#include <torch/jit.h>

#include "gtest/gtest.h"

namespace {

using namespace mlir::memopt::detail;
namespace tj = torch::jit;

/// The graph of function `f` in TorchScript `source`.
std::shared_ptr<tj::Graph> graphOf(const std::string &source) {
  auto unit = tj::compile(source);
  return tj::toGraphFunction(unit->get_function("f")).graph()->copy();
}

/// The first top-level node of `kind`.
tj::Node *first(tj::Graph &graph, c10::Symbol kind) {
  for (tj::Node *node : graph.nodes())
    if (node->kind() == kind)
      return node;
  return nullptr;
}

std::vector<std::string> names(const std::vector<tj::Value *> &values) {
  std::vector<std::string> result;
  for (tj::Value *value : values)
    result.push_back(value->debugNameBase());
  return result;
}

TEST(KeptControlFlowTest, ReadsConditionFirstThenValuesInReadingOrder) {
  auto graph = graphOf(R"(
def f(c: bool, x, y, unused):
    if c:
        z = y * 2.0 + x
    else:
        z = x
    return z
)");
  tj::Node *node = first(*graph, c10::prim::If);
  ASSERT_NE(node, nullptr);
  KeptControlFlow kept = describeKeptControlFlow(node);
  // The constant 2.0 is made inside the graph, not read from outside.
  EXPECT_EQ(names(kept.inputs), (std::vector<std::string>{"c", "y", "x"}));
  EXPECT_TRUE(kept.written.empty());
  EXPECT_FALSE(kept.nondeterministic);
  EXPECT_FALSE(kept.sideEffects);
  EXPECT_EQ(kept.script.find("#"), std::string::npos) << kept.script;

  at::Tensor x = at::ones({2}), y = at::full({2}, 3.0);
  std::vector<c10::IValue> then =
      runKeptControlFlow(kept, {c10::IValue(false), y, x}, true);
  std::vector<c10::IValue> otherwise =
      runKeptControlFlow(kept, {c10::IValue(true), y, x}, false);
  ASSERT_EQ(then.size(), 1u);
  EXPECT_TRUE(at::equal(then[0].toTensor(), at::full({2}, 7.0)));
  EXPECT_TRUE(at::equal(otherwise[0].toTensor(), x));
}

TEST(KeptControlFlowTest, NonFiniteConstantsReadBack) {
  auto graph = graphOf(R"(
def f(c: bool, x):
    if c:
        x = x.masked_fill(x > 0, float("-inf"))
    return x
)");
  KeptControlFlow kept = describeKeptControlFlow(first(*graph, c10::prim::If));
  EXPECT_NE(kept.script.find("aten::Float"), std::string::npos) << kept.script;
  std::vector<c10::IValue> result = runKeptControlFlow(
      kept, {c10::IValue(true), at::ones({3})}, std::nullopt);
  EXPECT_TRUE(at::all(at::isinf(result[0].toTensor())).item<bool>());
}

TEST(KeptControlFlowTest, WritesOfInputsAndOfViewsOfThemAreEffects) {
  auto direct = graphOf(R"(
def f(c: bool, x, y):
    if c:
        x.add_(1.0)
    return y * 2.0
)");
  EXPECT_EQ(describeKeptControlFlow(first(*direct, c10::prim::If)).written,
            (std::vector<int64_t>{1}));

  // Through a view made inside: any tensor input may be the one written.
  auto viewed = graphOf(R"(
def f(c: bool, x, y):
    if c:
        v = x.view(-1)
        v.add_(y.sum())
    return y * 2.0
)");
  EXPECT_EQ(describeKeptControlFlow(first(*viewed, c10::prim::If)).written,
            (std::vector<int64_t>{1, 2}));

  // A tensor made inside and written there changes nothing outside.
  auto local = graphOf(R"(
def f(c: bool, x):
    if c:
        z = x * 2.0
        z.add_(1.0)
        x = z
    return x
)");
  EXPECT_TRUE(
      describeKeptControlFlow(first(*local, c10::prim::If)).written.empty());
}

TEST(KeptControlFlowTest, RandomDrawsAndPrintingAreEffectsRaisingIsNot) {
  auto random = graphOf(R"(
def f(c: bool, x):
    if c:
        x = torch.dropout(x, 0.5, True)
    return x
)");
  EXPECT_TRUE(
      describeKeptControlFlow(first(*random, c10::prim::If)).nondeterministic);

  auto printing = graphOf(R"(
def f(c: bool, x):
    if c:
        print("large")
    return x * 2.0
)");
  EXPECT_TRUE(
      describeKeptControlFlow(first(*printing, c10::prim::If)).sideEffects);

  auto raising = graphOf(R"(
def f(c: bool, x):
    if c:
        assert x.dim() == 1, "not a vector"
    return x * 2.0
)");
  KeptControlFlow kept =
      describeKeptControlFlow(first(*raising, c10::prim::If));
  EXPECT_FALSE(kept.sideEffects);
  EXPECT_FALSE(kept.nondeterministic);
}

TEST(KeptControlFlowTest, ALoopTheImportsDataNeverEndsStopsAtTheCap) {
  auto graph = graphOf(R"(
def f(x):
    while bool(x.sum() > -1.0):
        x = x + 1.0
    return x
)");
  KeptControlFlow kept =
      describeKeptControlFlow(first(*graph, c10::prim::Loop));
  std::vector<c10::IValue> result = runKeptControlFlow(
      kept,
      {kept.inputs.size() == 2 ? c10::IValue(true) : c10::IValue(),
       at::ones({2})},
      std::nullopt);
  // 1000 iterations, then the import's run stops (a model would not).
  EXPECT_TRUE(at::equal(result[0].toTensor(), at::full({2}, 1001.0)));
}

TEST(KeptControlFlowTest, StateReadsMoveOutAndAssignmentsAreRefused) {
  tj::Module module("M");
  module.register_parameter("weight", at::ones({2}), false);
  module.register_attribute("hits", c10::IntType::get(), c10::IValue(0));
  module.define(R"(
def forward(self, x):
    if bool(x.sum() > 0):
        x = x * self.weight
    return x

def counting(self, x):
    if bool(x.sum() > 0):
        self.hits = self.hits + 1
    return x
)");
  auto graph = module.get_method("forward").graph()->copy();
  tj::Node *node = first(*graph, c10::prim::If);
  tj::Node *read = hoistStateReads(node);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->kind(), c10::prim::GetAttr);
  EXPECT_TRUE(read->isBefore(node));
  EXPECT_EQ(hoistStateReads(node), nullptr) << "nothing left to move";
  // `self` is no longer read inside: the weight is an input.
  KeptControlFlow kept = describeKeptControlFlow(node);
  EXPECT_EQ(kept.inputs.size(), 3u);
  EXPECT_EQ(kept.inputs[2], read->output());

  auto counting = module.get_method("counting").graph()->copy();
  tj::Node *assigning = first(*counting, c10::prim::If);
  hoistStateReads(assigning);
  try {
    describeKeptControlFlow(assigning);
    FAIL() << "an assignment inside was kept";
  } catch (const ImportError &error) {
    EXPECT_NE(std::string(error.what())
                  .find("forward assigns module attribute 'hits' inside "
                        "prim::If on tensor data"),
              std::string::npos)
        << error.what();
  }
}

} // namespace
