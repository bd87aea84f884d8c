//===- CheckpointAnalysis.cpp - Side effects, writes, randomness ----------===//
//
// A recompute must not repeat what the forward did to the world. This file
// decides, once per region graph, (1) whether the graph has side effects that
// cannot be made idempotent (refused), (2) which tensor inputs it writes in
// place, following views and containers through the operators' alias
// annotations (those inputs are snapshotted), and (3) whether it draws random
// numbers (then generator state is stashed and replayed).
//
//===----------------------------------------------------------------------===//

#include "CheckpointRegion.h"

#include <ATen/core/alias_info.h>
#include <ATen/core/function_schema.h>
#include <c10/util/Exception.h>
#include <torch/csrc/jit/ir/constants.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace memopt::runtime {
namespace {

using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

std::string nodeText(const Node *node) {
  std::ostringstream os;
  os << *node;
  std::string s = os.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  size_t start = s.find_first_not_of(' ');
  if (start != std::string::npos && s.compare(start, 2, "= ") == 0)
    start += 2; // a node without outputs prints as " = op(...)"
  return start == std::string::npos ? s : s.substr(start);
}

void visitNodes(const Block *block,
                const std::function<void(const Node *)> &f) {
  for (const Node *node : block->nodes()) {
    f(node);
    for (const Block *sub : node->blocks())
      visitNodes(sub, f);
  }
}

/// The region a `memopt::checkpoint` node nested in this graph runs (its
/// graph is a constant string), or null for any other node. Its writes and
/// random draws are this graph's: the enclosing region must snapshot and
/// replay for them too.
std::shared_ptr<const Region> nestedRegion(const Node *node) {
  static const c10::Symbol kCheckpoint =
      c10::Symbol::fromQualString("memopt::checkpoint");
  if (node->kind() != kCheckpoint || node->inputs().size() < 2)
    return nullptr;
  c10::optional<c10::IValue> ir = torch::jit::toIValue(node->inputs()[0]);
  c10::optional<c10::IValue> name = torch::jit::toIValue(node->inputs().back());
  if (!ir || !ir->isString())
    return nullptr;
  return Region::get(ir->toStringRef(), name && name->isString()
                                            ? name->toStringRef()
                                            : std::string("nested"));
}

} // namespace

void checkRegionSideEffects(const torch::jit::Graph &graph,
                            const std::string &regionName) {
  visitNodes(graph.block(), [&](const Node *node) {
    c10::Symbol kind = node->kind();
    if (!kind.is_prim() && !node->maybeOperator())
      TORCH_CHECK(false, "memopt::checkpoint(region '", regionName,
                  "'): no registered operator matches `", nodeText(node), "`");
    // Raising is deterministic given the same inputs and a repeated warning
    // is harmless; everything else with a side effect would happen twice.
    if (kind == c10::prim::RaiseException || kind == c10::aten::warn)
      return;
    // Registered conservatively only so that TorchScript keeps every random
    // draw; the recompute replays draws from the saved generator state.
    static const c10::Symbol kDropoutMasked =
        c10::Symbol::fromQualString("memopt::dropout_masked");
    if (kind == kDropoutMasked)
      return;
    TORCH_CHECK(!node->hasSideEffects(), "memopt::checkpoint(region '",
                regionName,
                "'): the graph has a side effect that the "
                "backward recompute would repeat (",
                kind.toQualString(), " in `", nodeText(node),
                "`); such a region cannot be checkpointed");
  });
}

namespace {

/// The set of tensor inputs a value may alias, one bit per input.
using InputSet = std::vector<bool>;

class WriteAnalysis {
public:
  explicit WriteAnalysis(size_t numInputs)
      : numInputs_(numInputs), written_(numInputs, false) {}

  std::vector<bool> run(const torch::jit::Graph &graph) {
    for (size_t i = 0; i < numInputs_ && i < graph.inputs().size(); ++i) {
      InputSet s(numInputs_, false);
      s[i] = true;
      sets_[graph.inputs()[i]] = std::move(s);
    }
    visitBlock(graph.block());
    return written_;
  }

private:
  InputSet &setOf(const Value *v) {
    auto it = sets_.find(v);
    if (it == sets_.end())
      it = sets_.emplace(v, InputSet(numInputs_, false)).first;
    return it->second;
  }

  // Returns whether `into` grew.
  static bool unite(InputSet &into, const InputSet &from) {
    bool grew = false;
    for (size_t i = 0; i < into.size(); ++i)
      if (from[i] && !into[i])
        into[i] = grew = true;
    return grew;
  }

  void markWritten(const InputSet &s) {
    for (size_t i = 0; i < numInputs_; ++i)
      if (s[i])
        written_[i] = true;
  }

  InputSet unionOfInputs(const Node *node) {
    InputSet s(numInputs_, false);
    for (const Value *in : node->inputs())
      unite(s, setOf(in));
    return s;
  }

  void visitBlock(const Block *block) {
    for (const Node *node : block->nodes())
      visitNode(node);
  }

  void visitNode(const Node *node) {
    if (node->kind() == c10::prim::If)
      return visitIf(node);
    if (node->kind() == c10::prim::Loop)
      return visitLoop(node);
    for (const Block *sub : node->blocks())
      visitBlock(sub);
    if (std::shared_ptr<const Region> nested = nestedRegion(node)) {
      // Its tensor inputs come as one ListConstruct: mark what it writes.
      const Node *list = node->inputs()[1]->node();
      const std::vector<bool> &writes = nested->effects().writtenInputs;
      if (list->kind() == c10::prim::ListConstruct)
        for (size_t i = 0; i < writes.size() && i < list->inputs().size(); ++i)
          if (writes[i])
            markWritten(setOf(list->inputs()[i]));
    }
    const c10::FunctionSchema *schema = node->maybeSchema();
    if (!schema) {
      // Containers and casts (ListConstruct, TupleUnpack, ...): the outputs
      // may hold or be any of the inputs.
      InputSet all = unionOfInputs(node);
      for (const Value *out : node->outputs())
        unite(setOf(out), all);
      return;
    }
    visitSchemaNode(node, *schema);
  }

  static bool sharesSet(const c10::AliasInfo &a, const c10::AliasInfo &b) {
    for (const c10::Symbol &s : a.beforeSets())
      if (b.beforeSets().count(s))
        return true;
    for (const c10::AliasInfo &inner : a.containedTypes())
      if (sharesSet(inner, b))
        return true;
    for (const c10::AliasInfo &inner : b.containedTypes())
      if (sharesSet(a, inner))
        return true;
    return false;
  }

  static bool hasWildcard(const c10::AliasInfo &a) {
    if (a.isWildcardBefore() || a.isWildcardAfter())
      return true;
    return std::any_of(a.containedTypes().begin(), a.containedTypes().end(),
                       hasWildcard);
  }

  void visitSchemaNode(const Node *node, const c10::FunctionSchema &schema) {
    const auto &args = schema.arguments();
    size_t numArgs = std::min(args.size(), node->inputs().size());
    bool varArgs = node->inputs().size() > args.size();

    // Outputs alias the arguments that share one of their alias sets.
    for (size_t j = 0; j < node->outputs().size(); ++j) {
      const c10::AliasInfo *ret = j < schema.returns().size()
                                      ? schema.returns()[j].alias_info()
                                      : nullptr;
      if (!ret && !(varArgs || j >= schema.returns().size()))
        continue; // a fresh value
      InputSet &out = setOf(node->outputs()[j]);
      if (!ret || hasWildcard(*ret) || varArgs) {
        unite(out, unionOfInputs(node));
        continue;
      }
      for (size_t k = 0; k < numArgs; ++k)
        if (args[k].alias_info() && sharesSet(*ret, *args[k].alias_info()))
          unite(out, setOf(node->inputs()[k]));
    }

    // Writes: `Tensor(a!)` writes the tensor, `Tensor(a!)[]` its elements,
    // `t[](a!)` only the list (which may then hold the other arguments).
    for (size_t k = 0; k < numArgs; ++k) {
      // aten::batch_norm, native_batch_norm, instance_norm, ... update their
      // running statistics in place without a `(a!)` in their schema.
      if (args[k].name() == "running_mean" || args[k].name() == "running_var")
        markWritten(setOf(node->inputs()[k]));
      const c10::AliasInfo *info = args[k].alias_info();
      if (!info)
        continue;
      const Value *in = node->inputs()[k];
      bool isList = args[k].type()->kind() == c10::TypeKind::ListType;
      for (const c10::AliasInfo &inner : info->containedTypes())
        if (inner.isWrite())
          markWritten(setOf(in));
      if (!info->isWrite())
        continue;
      if (!isList) {
        markWritten(setOf(in));
        continue;
      }
      InputSet others(numInputs_, false);
      for (size_t o = 0; o < node->inputs().size(); ++o)
        if (o != k)
          unite(others, setOf(node->inputs()[o]));
      unite(setOf(in), others);
    }
  }

  void visitIf(const Node *node) {
    for (const Block *sub : node->blocks())
      visitBlock(sub);
    for (size_t j = 0; j < node->outputs().size(); ++j)
      for (const Block *sub : node->blocks())
        unite(setOf(node->outputs()[j]), setOf(sub->outputs()[j]));
  }

  // prim::Loop(max_trip, cond, carried...) with body (iter, carried...) ->
  // (cond, carried...). Iterate until the carried sets stop growing.
  void visitLoop(const Node *node) {
    const Block *body = node->blocks()[0];
    size_t numCarried = node->outputs().size();
    for (size_t i = 0; i < numCarried; ++i)
      unite(setOf(body->inputs()[1 + i]), setOf(node->inputs()[2 + i]));
    bool grew = true;
    for (int round = 0; grew && round <= 64; ++round) {
      visitBlock(body);
      grew = false;
      for (size_t i = 0; i < numCarried; ++i)
        grew |=
            unite(setOf(body->inputs()[1 + i]), setOf(body->outputs()[1 + i]));
    }
    for (size_t i = 0; i < numCarried; ++i)
      unite(setOf(node->outputs()[i]), setOf(body->inputs()[1 + i]));
  }

  size_t numInputs_;
  std::vector<bool> written_;
  std::unordered_map<const Value *, InputSet> sets_;
};

/// A dropout (input, p, train) with a constant p of 0 or train false: ATen
/// returns its input without drawing.
bool isIdentityDropout(const Node *node) {
  std::string name = node->kind().toUnqualString();
  if (name.find("dropout") == std::string::npos || node->inputs().size() != 3)
    return false;
  auto p = torch::jit::toIValue(node->input(1));
  auto train = torch::jit::toIValue(node->input(2));
  return (p && p->isDouble() && p->toDouble() == 0) ||
         (train && train->isBool() && !train->toBool());
}

bool drawsRandomNumbers(const Node *node) {
  if (isIdentityDropout(node))
    return false;
  if (node->isNondeterministic())
    return true;
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema)
    return false;
  // Anything taking a Generator draws from one, whatever its name.
  for (const c10::Argument &arg : schema->arguments()) {
    c10::TypePtr type = arg.type();
    if (type->kind() == c10::TypeKind::OptionalType)
      type = type->containedTypes()[0];
    if (type->kind() == c10::TypeKind::GeneratorType)
      return true;
  }
  // isNondeterministic's list misses some in-place and fused variants.
  static const char *kRandomNames[] = {
      "dropout", "rand",  "bernoulli",   "normal",    "uniform", "multinomial",
      "poisson", "rrelu", "exponential", "geometric", "cauchy",  "log_normal"};
  std::string name = node->kind().toUnqualString();
  return std::any_of(
      std::begin(kRandomNames), std::end(kRandomNames),
      [&](const char *r) { return name.find(r) != std::string::npos; });
}

} // namespace

RegionEffects analyzeRegionEffects(const torch::jit::Graph &graph,
                                   size_t numTensorInputs) {
  RegionEffects effects;
  effects.writtenInputs = WriteAnalysis(numTensorInputs).run(graph);
  visitNodes(graph.block(), [&](const Node *node) {
    if (!effects.nondeterministic && drawsRandomNumbers(node))
      effects.nondeterministic = true;
    if (std::shared_ptr<const Region> nested = nestedRegion(node))
      effects.nondeterministic |= nested->effects().nondeterministic;
  });
  return effects;
}

} // namespace memopt::runtime
