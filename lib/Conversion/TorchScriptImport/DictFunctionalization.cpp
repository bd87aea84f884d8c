//===- DictFunctionalization.cpp - Dicts built in forward as plain values -===//
//
// Feature extractors return their taps in a dict built by item assignment
// (torchvision's IntermediateLayerGetter: `out[self.return_layers[name]] =
// x`), and segmentation heads fill their result dict the same way. Once
// the specializer has unrolled the loops, such a dict is an empty
// `aten::dict()` at the top of forward, written by `aten::_set_item` as the
// stages run and read by `aten::__getitem__` with keys that are constants
// or module attributes. The dict is then one mutable value live across the
// whole network, and written in the middle of it: no checkpoint region can
// be cut there. Here reads of known keys become the stored values, and a
// dict that is still read afterwards (returned, passed on) is built in one
// `prim::DictConstruct` right before its first such reader. Dicts whose
// keys are not known, that other ops write, or that are written after a
// reader may have seen them are left alone.
//
//===----------------------------------------------------------------------===//
#include "DictFunctionalization.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::memopt::detail;
using torch::jit::Node;

namespace {
bool isDict(const torch::jit::Value *value) {
  return value->type()->kind() == c10::TypeKind::DictType;
}

bool isSetItem(const Node *node) {
  return node->kind() == c10::Symbol::fromQualString("aten::_set_item") &&
         node->inputs().size() == 3;
}

bool isGetItem(const Node *node) {
  return node->kind() == c10::Symbol::fromQualString("aten::__getitem__") &&
         node->inputs().size() == 2 && node->outputs().size() == 1;
}

/// Whether `node` may write its input `offset` (by its schema; nodes
/// without one are taken to write).
bool mayWrite(const Node *node, size_t offset) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema)
    return !(node->kind() == c10::prim::Return ||
             node->kind() == c10::prim::DictConstruct ||
             node->kind() == c10::prim::ListConstruct ||
             node->kind() == c10::prim::TupleConstruct);
  if (offset >= schema->arguments().size())
    return true;
  const c10::AliasInfo *alias = schema->arguments()[offset].alias_info();
  return alias && alias->isWrite();
}

/// A key as text that tells `1` from `"1"`.
std::optional<std::string> keyText(const c10::IValue &key) {
  if (key.isString())
    return "s" + key.toStringRef();
  if (key.isInt())
    return "i" + std::to_string(key.toInt());
  return std::nullopt;
}

struct Entry {
  c10::IValue key;
  std::string text; // keyText(key)
  torch::jit::Value *value;
};

/// The rewrite of one dict, planned before anything changes.
struct DictPlan {
  std::vector<Entry> entries; // in insertion order, last value of each key
  // Each read of a stored key, and the value stored then.
  std::vector<std::pair<Node *, torch::jit::Value *>> reads;
  std::vector<Node *> writes;
  std::vector<const Node *> keyedNodes; // whose keys the plan rests on
  Node *firstReader = nullptr;
};

class DictFunctionalizer {
public:
  DictFunctionalizer(const DictKeyFacts &keys, const DictRewriteHooks &hooks)
      : keys(keys), hooks(hooks) {}

  void run(torch::jit::Graph &graph) {
    std::vector<Node *> creations;
    for (Node *node : graph.nodes())
      if ((node->kind() == c10::Symbol::fromQualString("aten::dict") &&
           node->inputs().empty() && node->outputs().size() == 1 &&
           isDict(node->output())) ||
          node->kind() == c10::prim::DictConstruct)
        creations.push_back(node);
    for (Node *creation : creations)
      if (std::optional<DictPlan> plan = planFor(creation))
        apply(creation, *plan);
  }

private:
  /// `node`'s key when it is known and rests only on attributes a
  /// compiled forward can check.
  const c10::IValue *staticKey(const Node *node) const {
    auto it = keys.find(node);
    if (it == keys.end() || !hooks.canAssume(it->second))
      return nullptr;
    return &*it->second.value;
  }

  std::optional<DictPlan> planFor(Node *creation);
  void apply(Node *creation, DictPlan &plan);

  const DictKeyFacts &keys;
  const DictRewriteHooks &hooks;
};

std::optional<DictPlan> DictFunctionalizer::planFor(Node *creation) {
  torch::jit::Value *dict = creation->output();
  DictPlan plan;
  auto find = [&](const c10::IValue &key) {
    return llvm::find_if(plan.entries, [text = *keyText(key)](const Entry &e) {
      return e.text == text;
    });
  };
  auto store = [&](const c10::IValue &key, torch::jit::Value *value) {
    auto entry = find(key);
    if (entry != plan.entries.end())
      entry->value = value; // a dict keeps a key's first position
    else
      plan.entries.push_back({key, *keyText(key), value});
  };
  if (creation->kind() == c10::prim::DictConstruct) {
    const c10::IValue *constructKeys = staticKey(creation);
    if (!constructKeys)
      return std::nullopt;
    const auto &list = constructKeys->toListRef();
    for (size_t i = 0; i < list.size(); ++i)
      store(list[i], creation->input(2 * i + 1));
    plan.keyedNodes.push_back(creation);
  }
  for (const torch::jit::Use &use : dict->uses())
    if (use.user->owningBlock() != creation->owningBlock())
      return std::nullopt; // read or written in a block left unfolded
  // The uses in program order: the block is straight-line code.
  Node *end = creation->owningBlock()->return_node();
  for (Node *node = creation; node != end;) {
    node = node->next();
    if (!llvm::is_contained(node->inputs(), dict))
      continue;
    bool onlyAsDict = node->inputs().size() > 0 && node->input(0) == dict &&
                      llvm::count(node->inputs(), dict) == 1;
    const c10::IValue *key = staticKey(node);
    if (onlyAsDict && isSetItem(node) && key) {
      if (plan.firstReader)
        return std::nullopt; // a reader may hold it: its writes must stay
      store(*key, node->input(2));
      plan.writes.push_back(node);
      plan.keyedNodes.push_back(node);
      continue;
    }
    if (onlyAsDict && isGetItem(node) && key && !plan.firstReader) {
      auto entry = find(*key);
      // A missing key raises KeyError at run time: keep the read.
      if (entry == plan.entries.end() ||
          !entry->value->type()->isSubtypeOf(*node->output()->type()))
        return std::nullopt;
      plan.reads.emplace_back(node, entry->value);
      plan.keyedNodes.push_back(node);
      continue;
    }
    for (size_t i = 0; i < node->inputs().size(); ++i)
      if (node->input(i) == dict && mayWrite(node, i))
        return std::nullopt; // update(), pop(), clear(), an unknown call
    if (!plan.firstReader)
      plan.firstReader = node;
  }
  if (plan.writes.empty() && plan.reads.empty())
    return std::nullopt;
  return plan;
}

void DictFunctionalizer::apply(Node *creation, DictPlan &plan) {
  for (const Node *keyed : plan.keyedNodes)
    hooks.assume(keys.at(keyed), const_cast<Node *>(keyed));
  for (auto &[read, value] : plan.reads) {
    read->output()->replaceAllUsesWith(value);
    hooks.destroy(read);
  }
  for (Node *write : plan.writes)
    hooks.destroy(write);
  torch::jit::Value *dict = creation->output();
  if (plan.firstReader) {
    torch::jit::Graph &graph = *creation->owningGraph();
    torch::jit::WithInsertPoint point(plan.firstReader);
    std::vector<torch::jit::Value *> keyValues, values;
    for (const Entry &entry : plan.entries) {
      keyValues.push_back(graph.insertConstant(entry.key));
      values.push_back(entry.value);
    }
    const auto &type = dict->type()->expectRef<c10::DictType>();
    Node *rebuilt = graph.insertNode(graph.createDict(
        type.getKeyType(), type.getValueType(), keyValues, values));
    rebuilt->setSourceRange(creation->sourceRange());
    dict->replaceAllUsesWith(rebuilt->output());
  }
  hooks.destroy(creation);
}
} // namespace

void mlir::memopt::detail::recordDictKeys(const Node *node,
                                          const NodeEvaluator &evaluator,
                                          DictKeyFacts &keys) {
  auto known = [&](const torch::jit::Value *value) -> const ValueFacts * {
    const ValueFacts *facts = evaluator.lookup(value);
    if (!facts || !facts->isStatic || !facts->value || facts->sizeDependent ||
        !keyText(*facts->value))
      return nullptr;
    return facts;
  };
  if ((isSetItem(node) || isGetItem(node)) && isDict(node->input(0))) {
    if (const ValueFacts *facts = known(node->input(1)))
      keys[node] = *facts;
    return;
  }
  // A dict literal: its keys as one list (attribute dependencies merged).
  if (node->kind() != c10::prim::DictConstruct)
    return;
  ValueFacts all;
  all.isStatic = true;
  c10::impl::GenericList list(c10::AnyType::get());
  for (size_t i = 0; i + 1 < node->inputs().size(); i += 2) {
    const ValueFacts *facts = known(node->input(i));
    if (!facts)
      return;
    list.push_back(*facts->value);
    all.attributeDeps.insert(facts->attributeDeps.begin(),
                             facts->attributeDeps.end());
  }
  all.value = c10::IValue(std::move(list));
  keys[node] = std::move(all);
}

void mlir::memopt::detail::functionalizeDicts(torch::jit::Graph &graph,
                                              const DictKeyFacts &keys,
                                              const DictRewriteHooks &hooks) {
  DictFunctionalizer(keys, hooks).run(graph);
}
