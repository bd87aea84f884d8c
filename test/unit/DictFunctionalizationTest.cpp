//===- DictFunctionalizationTest.cpp - dicts built in forward -------------===//
//
// functionalizeDicts on hand-written TorchScript graphs: which dicts it
// rewrites (reads of known keys, a returned dict built once before its
// reader) and which it must leave alone (a write after a reader, an op
// that writes the dict, a key not known or not stored). And which
// attribute values an exported forward can check (isGuardableConstant).
//
//===----------------------------------------------------------------------===//
#include "../../lib/Conversion/TorchScriptImport/DictFunctionalization.h"

#include <ATen/Functions.h>
#include <torch/jit.h>

#include "gtest/gtest.h"

namespace {

using namespace mlir::memopt::detail;

/// The graph of function `f` in TorchScript `source`, and the facts of
/// every dict item key that is a constant (as the specializer records
/// them), except `unknown`.
struct Parsed {
  std::shared_ptr<torch::jit::Graph> graph;
  DictKeyFacts keys;
};

Parsed parse(const std::string &source, const std::string &unknown = "") {
  Parsed parsed;
  auto unit = torch::jit::compile(source);
  parsed.graph =
      torch::jit::toGraphFunction(unit->get_function("f")).graph()->copy();
  for (torch::jit::Node *node : parsed.graph->nodes()) {
    std::string kind = node->kind().toQualString();
    ValueFacts facts;
    facts.isStatic = true;
    if (node->kind() == c10::prim::DictConstruct) {
      c10::impl::GenericList keys(c10::AnyType::get());
      for (size_t i = 0; i < node->inputs().size(); i += 2)
        keys.push_back(*torch::jit::toIValue(node->input(i)));
      facts.value = c10::IValue(keys);
      parsed.keys[node] = facts;
      continue;
    }
    if (kind != "aten::_set_item" && kind != "aten::__getitem__")
      continue;
    std::optional<c10::IValue> key = torch::jit::toIValue(node->input(1));
    if (!key || (key->isString() && key->toStringRef() == unknown))
      continue;
    facts.value = *key;
    parsed.keys[node] = facts;
  }
  return parsed;
}

int count(const torch::jit::Graph &graph, const std::string &kind) {
  int n = 0;
  for (const torch::jit::Node *node : graph.nodes())
    n += node->kind().toQualString() == kind;
  return n;
}

std::string text(const torch::jit::Graph &graph) {
  std::ostringstream os;
  os << graph;
  return os.str();
}

int rewrite(Parsed &parsed, bool checkable = true) {
  int assumed = 0;
  DictRewriteHooks hooks;
  hooks.canAssume = [&](const ValueFacts &) { return checkable; };
  hooks.assume = [&](const ValueFacts &, torch::jit::Node *) { ++assumed; };
  hooks.destroy = [](torch::jit::Node *node) { node->destroy(); };
  functionalizeDicts(*parsed.graph, parsed.keys, hooks);
  return assumed;
}

// Taps written as the stages run, read back by key, then a result dict
// returned: the reads are the tensors, the result is built once.
constexpr const char *kTapsAndResult = R"JIT(
def f(x: Tensor) -> Dict[str, Tensor]:
    taps: Dict[str, Tensor] = {}
    a = torch.relu(x)
    taps["low"] = a
    b = torch.tanh(a)
    c = taps["low"] * b
    result: Dict[str, Tensor] = {}
    result["out"] = c
    result["low"] = a
    result["out"] = b
    return result
)JIT";

TEST(DictFunctionalizationTest, ReadsBecomeValuesAndResultIsBuiltOnce) {
  Parsed parsed = parse(kTapsAndResult);
  // Every set and read rests on its key, and so do the two literals.
  EXPECT_EQ(rewrite(parsed), 7);
  const torch::jit::Graph &graph = *parsed.graph;
  EXPECT_EQ(count(graph, "prim::DictConstruct"), 1) << text(graph);
  EXPECT_EQ(count(graph, "aten::_set_item"), 0) << text(graph);
  EXPECT_EQ(count(graph, "aten::__getitem__"), 0) << text(graph);
  // mul reads relu's result itself.
  const torch::jit::Node *mul = nullptr;
  for (const torch::jit::Node *node : graph.nodes())
    if (node->kind().toQualString() == std::string("aten::mul"))
      mul = node;
  ASSERT_TRUE(mul);
  EXPECT_EQ(mul->input(0)->node()->kind().toQualString(),
            std::string("aten::relu"));
  // The result: out (its last value, tanh's, at its first position), low.
  const torch::jit::Node *dict = graph.outputs()[0]->node();
  ASSERT_EQ(dict->kind(), c10::prim::DictConstruct) << text(graph);
  ASSERT_EQ(dict->inputs().size(), 4u);
  EXPECT_EQ(torch::jit::toIValue(dict->input(0))->toStringRef(), "out");
  EXPECT_EQ(dict->input(1)->node()->kind().toQualString(),
            std::string("aten::tanh"));
  EXPECT_EQ(torch::jit::toIValue(dict->input(2))->toStringRef(), "low");
  EXPECT_EQ(dict->input(3)->node()->kind().toQualString(),
            std::string("aten::relu"));
  EXPECT_EQ(dict->next(), graph.return_node());
  EXPECT_EQ(
      *dict->output()->type(),
      *c10::DictType::create(c10::StringType::get(), c10::TensorType::get()));
}

TEST(DictFunctionalizationTest, KeysOnUncheckableAttributesAreLeftAlone) {
  Parsed parsed = parse(kTapsAndResult);
  std::string before = text(*parsed.graph);
  EXPECT_EQ(rewrite(parsed, /*checkable=*/false), 0);
  EXPECT_EQ(text(*parsed.graph), before);
}

TEST(DictFunctionalizationTest, WriteAfterAReaderIsLeftAlone) {
  Parsed parsed = parse(R"JIT(
def f(x: Tensor) -> Tuple[Dict[str, Tensor], int]:
    d: Dict[str, Tensor] = {}
    d["k"] = x
    n = len(d)
    d["j"] = x
    return d, n
)JIT");
  std::string before = text(*parsed.graph);
  EXPECT_EQ(rewrite(parsed), 0);
  EXPECT_EQ(text(*parsed.graph), before);
}

TEST(DictFunctionalizationTest, OtherWritesAndUnknownKeysAreLeftAlone) {
  const char *updated = R"JIT(
def f(x: Tensor, other: Dict[str, Tensor]) -> Tensor:
    d: Dict[str, Tensor] = {}
    d["k"] = x
    d.update(other)
    return d["k"]
)JIT";
  const char *twoKeys = R"JIT(
def f(x: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {}
    d["k"] = x
    d["u"] = x
    return d["k"]
)JIT";
  const char *missing = R"JIT(
def f(x: Tensor) -> Tensor:
    d: Dict[str, Tensor] = {}
    d["k"] = x
    return d["m"]
)JIT";
  // update() writes it; key "u" is not known at import; "m" was never
  // stored (a KeyError at run time, which must stay).
  for (auto [source, unknown] :
       {std::pair(updated, ""), std::pair(twoKeys, "u"),
        std::pair(missing, "")}) {
    Parsed parsed = parse(source, unknown);
    std::string before = text(*parsed.graph);
    EXPECT_EQ(rewrite(parsed), 0) << source;
    EXPECT_EQ(text(*parsed.graph), before);
  }
}

TEST(DictFunctionalizationTest, GuardableConstants) {
  c10::Dict<std::string, std::string> names;
  names.insert("layer3", "aux");
  EXPECT_TRUE(isGuardableConstant(c10::IValue(names)));
  c10::Dict<int64_t, double> scales;
  scales.insert(1, 0.5);
  EXPECT_TRUE(isGuardableConstant(c10::IValue(scales)));
  c10::Dict<std::string, c10::List<int64_t>> lists;
  lists.insert("scale", c10::List<int64_t>({2}));
  EXPECT_FALSE(isGuardableConstant(c10::IValue(lists)));
  c10::Dict<std::string, at::Tensor> tensors;
  tensors.insert("w", at::zeros({1}));
  EXPECT_FALSE(isGuardableConstant(c10::IValue(tensors)));
  EXPECT_TRUE(isGuardableConstant(c10::IValue(
      c10::ivalue::Tuple::create({c10::IValue(1), c10::IValue("a")}))));
  EXPECT_FALSE(isGuardableConstant(c10::IValue(at::zeros({1}))));
}

} // namespace
