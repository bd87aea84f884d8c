//===- GraphSpecializer.cpp - Fold control flow into a straight line
//-------===//
//
// memopt plans straight-line code, so prim::If and prim::Loop are folded at
// import wherever they can be:
//   - prim::If on a static condition (constant, module attribute such as
//     `training`, tensor shape) is replaced by the branch taken;
//   - prim::Loop with a static trip count and static conditions is unrolled,
//     one iteration at a time, so that the next condition can depend on the
//     previous iteration (a LIF neuron over T steps, `for d in x.shape`).
// Control flow on tensor data (with input specs) is kept whole, as one
// opaque node (KeptControlFlow.cpp). The walk goes through the graph in
// order and evaluates every node before the control flow that needs it
// (NodeEvaluator). Anything else that is not static is rejected with the
// construct's name and source line. Only state reads are moved (out of
// kept control flow).
//
//===----------------------------------------------------------------------===//
#include "DictFunctionalization.h"
#include "ImportInternal.h"

#include "memopt/Conversion/ExampleInputs.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#include <ATen/ATen.h>

#include <limits>

using namespace mlir::memopt;
using namespace mlir::memopt::detail;
using torch::jit::Block;
using torch::jit::Node;
using torch::jit::Value;

/// Unrolling beyond this many iterations (all loops together) is refused: the
/// imported function would be too large to be useful.
static constexpr int64_t kMaxUnrolledIterations = 100000;
static constexpr int64_t kMaxNodes = 2000000;

namespace {
struct LoopState {
  int64_t iteration = 0;
  int64_t tripCount = 0;
  bool condition = true;
  Value *nextCondition = nullptr;
  std::vector<Value *> carried;
};

class GraphSpecializer {
public:
  GraphSpecializer(const torch::jit::Module &module,
                   std::shared_ptr<torch::jit::Graph> graph,
                   const std::vector<InputSpec> &specs, EvaluationMode &mode,
                   const c10::FunctionSchema *schema)
      : module(module), graph(std::move(graph)), specs(specs), schema(schema),
        evaluator(module, this->graph, !specs.empty(), mode) {}

  SpecializedGraph run();

private:
  void bindInputs();
  Node *foldIf(Node *node);
  Node *stepLoop(Node *node);
  /// True when `value` is known but not static: computed from tensor data.
  bool dependsOnTensorData(Value *value) const;
  /// Leaves control flow on tensor data in the graph, learning the shapes
  /// of its results; returns the node to visit next.
  Node *keepWhole(Node *node);
  /// The scalars kept control flow may take as constants: static ones not
  /// derived from tensor sizes (a counter, a module attribute such as a
  /// tolerance, which the exported forward then checks: with `assumeAt`,
  /// recorded as assumptions of that node).
  KeptConstantFn keptConstant(Node *assumeAt = nullptr);
  /// Replaces an unrolling `while` loop whose condition turned into data
  /// by one running its remaining iterations, which the walk keeps whole.
  Node *keepRemainingIterations(Node *node, LoopState &state);
  const ValueFacts &requireStatic(Value *value, Node *node,
                                  const std::string &what);
  /// For `self.<path> = v` in forward, records v; for a later read of
  /// `self.<path>`, uses v in its place and returns the node after it
  /// (null when `node` is neither).
  Node *forwardAssignedAttribute(Node *node);
  /// The value of the module attribute at dotted `path`.
  c10::IValue attributeValue(const std::string &path) const;
  /// Records the module attributes `facts` rests on as assumptions.
  void assumeAttributes(const ValueFacts &facts, const Node *node,
                        const std::string &what);
  /// A dropout's probability, or attention's dropout probability, read
  /// from module attributes (nn.MultiheadAttention's
  /// `dropout`): recorded as assumptions, so that the memory model knows
  /// whether the op draws noise and which kernel attention runs (p = 0:
  /// a fused one that keeps no scores) and the exported forward checks it.
  void assumeDrawArguments(const Node *node);
  std::string nonStaticOrigin(Value *value);
  Node *inlineBlock(Block *block, Node *before,
                    const std::vector<Value *> &blockInputs,
                    std::vector<Value *> &blockOutputs);
  void eraseDeadNodes();
  /// Destroys `node` and forgets what the evaluator knew of its values.
  void destroyNode(Node *node);
  /// Replaces every use of `old`, and every unrolling loop's reference.
  void replaceValue(Value *old, Value *replacement);

  const torch::jit::Module &module;
  std::shared_ptr<torch::jit::Graph> graph;
  const std::vector<InputSpec> &specs;
  const c10::FunctionSchema *schema;
  NodeEvaluator evaluator;
  std::map<size_t, c10::IValue> boundDefaults;
  std::unordered_map<Node *, LoopState> loops;
  std::map<std::string, c10::IValue> assumptions;
  std::vector<std::string> shapeAssumptions;
  DictKeyFacts dictKeys;
  /// The value each attribute forward assigned was last assigned, by path.
  std::map<std::string, Value *> assigned;
  /// Control flow on tensor data left in the graph.
  std::vector<Node *> keptNodes;
  int64_t unrolledIterations = 0;

  /// Records a decision `what` at `node` folded on `facts` when it rests on
  /// tensor sizes.
  void noteShapeDecision(const ValueFacts &facts, const Node *node,
                         const std::string &what) {
    if (!facts.sizeDependent)
      return;
    std::string where = describeNode(node);
    std::string text = what + (where.empty() ? "" : " at " + where);
    if (!llvm::is_contained(shapeAssumptions, text))
      shapeAssumptions.push_back(std::move(text));
  }
};
} // namespace

/// "x.1" -> "x": TorchScript adds numeric suffixes to keep names unique.
static std::string baseName(const Value *value) {
  std::string name = value->debugName();
  size_t dot = name.find('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

void GraphSpecializer::bindInputs() {
  auto inputs = graph->inputs().slice(1);
  if (specs.empty())
    return;
  // Trailing inputs with a default (`mask=None`, `steps: int = 12`) may be
  // left out and take it, as do trailing Optional inputs (None).
  auto defaultOf = [&](size_t input) -> std::optional<c10::IValue> {
    if (schema && input + 1 < schema->arguments().size())
      if (const auto &value = schema->arguments()[input + 1].default_value())
        return *value;
    if (inputs[input]->type()->kind() == c10::TypeKind::OptionalType)
      return c10::IValue();
    return std::nullopt;
  };
  size_t required = inputs.size();
  while (required > specs.size() && defaultOf(required - 1))
    --required;
  auto inputNames = [&] {
    std::string names;
    for (Value *input : inputs)
      names += (names.empty() ? "" : ", ") + baseName(input);
    return names;
  };
  if (specs.size() < required || specs.size() > inputs.size())
    throw ImportError("the method takes " + std::to_string(inputs.size()) +
                      " input(s) (" + inputNames() + ") but " +
                      std::to_string(specs.size()) +
                      " --input-shape spec(s) were given");
  for (size_t i = specs.size(); i < inputs.size(); ++i) {
    c10::IValue value = *defaultOf(i);
    // The exported forward refuses any other value: it must be one it can
    // compare.
    if (!isGuardableConstant(value))
      throw ImportError("input '" + baseName(inputs[i]) +
                        "' is left out of the input specs and its default (" +
                        value.type()->repr_str() +
                        ") cannot be checked at run time; give it a spec");
    boundDefaults[i] = value;
    evaluator.setFacts(inputs[i], ValueFacts{value, true, {}});
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    Value *input = inputs[i];
    const InputSpec &spec = specs[i];
    // Specs bind by position; a name that is not the input's is a spec
    // written for another model or method (an unnamed input takes any).
    bool unnamed =
        !input->hasDebugName() ||
        llvm::all_of(baseName(input), [](char c) { return llvm::isDigit(c); });
    bool elsewhere = llvm::any_of(
        inputs, [&](Value *other) { return baseName(other) == spec.name; });
    if (!unnamed && !elsewhere)
      throw ImportError(
          "input spec '" + spec.name +
          "' names no input of the method (its inputs: " + inputNames() + ")");
    for (size_t j = 0; j < inputs.size(); ++j)
      if (j != i && baseName(inputs[j]) == spec.name &&
          baseName(input) != spec.name)
        throw ImportError("input spec '" + spec.name +
                          "' is given at position " + std::to_string(i) +
                          " but the method's input '" + spec.name +
                          "' is at position " + std::to_string(j));
    c10::TypePtr type = input->type();
    if (auto optional = type->cast<c10::OptionalType>())
      type = optional->getElementType();
    if (type->kind() != c10::TypeKind::TensorType)
      throw ImportError("input '" + baseName(input) + "' has type " +
                        input->type()->str() +
                        "; --input-shape describes tensor inputs only");
    c10::ScalarType dtype = *parseDType(spec.dtype);
    std::vector<int64_t> shape(spec.shape.begin(), spec.shape.end());
    at::Tensor example = makeExampleInput(shape, dtype);
    evaluator.setFacts(input, ValueFacts{example, /*isStatic=*/true, {}});
    evaluator.recordTensorFacts(input);
  }
}

/// The first node on the way back from `value` whose inputs are all static
/// but whose result is not: what made a condition depend on data.
std::string GraphSpecializer::nonStaticOrigin(Value *value) {
  for (int depth = 0; depth < 10000; ++depth) {
    Node *node = value->node();
    Value *next = nullptr;
    for (Value *input : node->inputs()) {
      const ValueFacts *facts = evaluator.lookup(input);
      if (!facts || !facts->isStatic) {
        next = input;
        break;
      }
    }
    if (!next)
      return node->kind().toQualString();
    value = next;
  }
  return "?";
}

Node *GraphSpecializer::forwardAssignedAttribute(Node *node) {
  if (node->kind() != c10::prim::SetAttr && node->kind() != c10::prim::GetAttr)
    return nullptr;
  std::optional<std::string> path = evaluator.attributePath(node);
  if (!path)
    return nullptr;
  if (node->kind() == c10::prim::SetAttr) {
    assigned[*path] = node->input(1);
    return nullptr;
  }
  // Forward reads back what it assigned (RAFT keeps its correlation pyramid
  // in an attribute and loops over it): the straight-line graph has the
  // value itself, with what is known of it.
  auto it = assigned.find(*path);
  if (it == assigned.end() ||
      !it->second->type()->isSubtypeOf(*node->output()->type()))
    return nullptr;
  Node *next = node->next();
  replaceValue(node->output(), it->second);
  destroyNode(node);
  return next;
}

c10::IValue GraphSpecializer::attributeValue(const std::string &path) const {
  c10::IValue current = module._ivalue();
  llvm::SmallVector<llvm::StringRef> segments;
  llvm::StringRef(path).split(segments, '.');
  for (llvm::StringRef segment : segments)
    current = current.toObject()->getAttr(segment.str());
  return current;
}

void GraphSpecializer::assumeAttributes(const ValueFacts &facts,
                                        const Node *node,
                                        const std::string &what) {
  for (const std::string &path : facts.attributeDeps) {
    c10::IValue current = attributeValue(path);
    // The exported forward checks the value before it runs the folded
    // code; a value it could not check would go stale silently.
    if (!isGuardableConstant(current))
      throw ImportError(what + " depends on module attribute '" + path +
                            "' of type " + current.type()->repr_str() +
                            ", whose value memopt cannot check at run time",
                        node);
    assumptions[path] = current;
  }
}

void GraphSpecializer::assumeDrawArguments(const Node *node) {
  static const llvm::StringSet<> kDropouts = {
      "aten::dropout", "aten::dropout_", "aten::feature_dropout",
      "aten::alpha_dropout", "aten::feature_alpha_dropout"};
  std::string kind = node->kind().toQualString();
  std::vector<size_t> positions;
  // Not the training flag: read as a value, it keeps the function valid in
  // both modes.
  if (kDropouts.contains(kind))
    positions = {1};
  else if (kind == "aten::scaled_dot_product_attention")
    positions = {4};
  for (size_t position : positions) {
    if (position >= node->inputs().size())
      continue;
    const ValueFacts *facts = evaluator.lookup(node->input(position));
    if (!facts || !facts->isStatic || !facts->value ||
        facts->attributeDeps.empty() ||
        !llvm::all_of(facts->attributeDeps, [&](const std::string &path) {
          return isGuardableConstant(attributeValue(path));
        }))
      continue;
    assumeAttributes(*facts, node, "a dropout probability");
  }
}

const ValueFacts &GraphSpecializer::requireStatic(Value *value, Node *node,
                                                  const std::string &what) {
  const ValueFacts *facts = evaluator.lookup(value);
  if (facts && facts->isStatic && facts->value) {
    assumeAttributes(*facts, node, what);
    return *facts;
  }
  if (!evaluator.executesTensors())
    throw ImportError(what + " depends on values that are only known with "
                             "--input-shape (tensor shapes or data)",
                      node);
  throw ImportError(what + " depends on tensor data (through '" +
                        nonStaticOrigin(value) +
                        "'); memopt folds control flow only on constants, "
                        "module attributes and tensor shapes",
                    node);
}

void GraphSpecializer::replaceValue(Value *old, Value *replacement) {
  old->replaceAllUsesWith(replacement);
  // An unrolled loop holds the values its next iteration starts from as
  // pointers, not uses: a prim::If folded in its body (a mode switch on a
  // module attribute inside a time-step loop) must move them too.
  for (auto &[loop, state] : loops) {
    for (Value *&carried : state.carried)
      if (carried == old)
        carried = replacement;
    if (state.nextCondition == old)
      state.nextCondition = replacement;
  }
}

void GraphSpecializer::destroyNode(Node *node) {
  // The evaluator keys facts by Value*: a value later allocated at a freed
  // one's address must not inherit them.
  std::vector<Node *> nested = {node};
  while (!nested.empty()) {
    Node *current = nested.back();
    nested.pop_back();
    for (Value *output : current->outputs())
      evaluator.forget(output);
    for (Block *block : current->blocks()) {
      for (Value *input : block->inputs())
        evaluator.forget(input);
      for (Node *inner : block->nodes())
        nested.push_back(inner);
    }
  }
  node->destroy();
}

Node *GraphSpecializer::inlineBlock(Block *block, Node *before,
                                    const std::vector<Value *> &blockInputs,
                                    std::vector<Value *> &blockOutputs) {
  std::unordered_map<Value *, Value *> mapping;
  for (size_t i = 0; i < blockInputs.size(); ++i)
    mapping[block->inputs()[i]] = blockInputs[i];
  auto lookup = [&](Value *v) {
    auto it = mapping.find(v);
    return it == mapping.end() ? v : it->second;
  };
  Node *first = nullptr;
  for (Node *inner : block->nodes()) {
    Node *clone = graph->createClone(inner, lookup, /*copy_blocks=*/true);
    clone->insertBefore(before);
    for (size_t i = 0; i < inner->outputs().size(); ++i)
      mapping[inner->output(i)] = clone->output(i);
    if (!first)
      first = clone;
  }
  blockOutputs.clear();
  for (Value *output : block->outputs())
    blockOutputs.push_back(lookup(output));
  return first;
}

/// True when running `block` always raises: an input check's error branch.
static bool alwaysRaises(Block *block) {
  return llvm::any_of(block->nodes(), [](Node *node) {
    return node->kind() == c10::prim::RaiseException;
  });
}

bool GraphSpecializer::dependsOnTensorData(Value *value) const {
  const ValueFacts *facts = evaluator.lookup(value);
  return evaluator.executesTensors() && facts && facts->value &&
         !facts->isStatic;
}

/// "[2, 3] float" for a tensor, the type for anything else: what must agree
/// between the runs of kept control flow.
static std::string describeShape(const c10::IValue &value) {
  if (!value.isTensor())
    return value.type()->repr_str();
  const at::Tensor &tensor = value.toTensor();
  if (!tensor.defined())
    return "an undefined tensor";
  std::string text = "[";
  for (int64_t i = 0; i < tensor.dim(); ++i)
    text += (i ? ", " : "") + std::to_string(tensor.size(i));
  return text + "] " + c10::toString(tensor.scalar_type());
}

KeptConstantFn GraphSpecializer::keptConstant(Node *assumeAt) {
  return [this, assumeAt](Value *value) -> std::optional<c10::IValue> {
    const ValueFacts *facts = evaluator.lookup(value);
    if (!facts || !facts->isStatic || !facts->value || facts->sizeDependent)
      return std::nullopt;
    const c10::IValue &constant = *facts->value;
    if (!constant.isInt() && !constant.isDouble() && !constant.isBool())
      return std::nullopt;
    bool guardable =
        llvm::all_of(facts->attributeDeps, [&](const std::string &path) {
          return isGuardableConstant(attributeValue(path));
        });
    if (!guardable)
      return std::nullopt;
    if (assumeAt)
      assumeAttributes(*facts, assumeAt, "a value kept control flow reads");
    return constant;
  };
}

Node *GraphSpecializer::keepWhole(Node *node) {
  // Parameters and attributes read inside become state reads outside,
  // evaluated (and imported) before the node is visited again.
  if (Node *hoisted = hoistStateReads(node))
    return hoisted;
  // Running it reads tensor data, which must not be made up.
  if (evaluator.madeUpData())
    throw ExactRunRequired();
  KeptControlFlow kept = describeKeptControlFlow(node, keptConstant());
  // What the import knows of a list or dict it changes would be stale
  // (a tensor written in place keeps its shape).
  for (int64_t position : kept.written) {
    Value *input = kept.inputs[position];
    if (input->type()->kind() != c10::TypeKind::TensorType)
      throw ImportError(std::string(node->kind().toQualString()) +
                            " on tensor data changes '" +
                            input->debugNameBase() + "' (" +
                            input->type()->repr_str() +
                            ") in place; memopt keeps such control flow "
                            "whole only when it changes no list or dict "
                            "from outside it",
                        node);
  }
  torch::jit::Stack inputs;
  for (Value *input : kept.inputs) {
    const ValueFacts *facts = evaluator.lookup(input);
    if (!facts || !facts->value)
      throw ImportError(std::string(node->kind().toQualString()) +
                            " on tensor data reads a value the import could "
                            "not compute",
                        node);
    // A tensor whose shape is data (a boolean mask's selection) could make
    // the results' shapes data too: refused as before, naming the
    // condition (or trip count) and where its data comes from.
    if (facts->value->isTensor() && !facts->isStatic) {
      bool byTripCount = node->kind() == c10::prim::Loop &&
                         dependsOnTensorData(node->input(0));
      bool isIf = node->kind() == c10::prim::If;
      requireStatic(node->input(isIf || byTripCount ? 0 : 1), node,
                    std::string(node->kind().toQualString()) +
                        (byTripCount ? " trip count" : " condition"));
    }
    inputs.push_back(*facts->value);
  }
  // Each branch of an If (but one that only raises), a Loop as it runs; on
  // copies, so that the import's own values stay as they were.
  bool isIf = node->kind() == c10::prim::If;
  std::vector<std::optional<bool>> runs;
  if (!isIf)
    runs.push_back(std::nullopt);
  for (bool branch : {true, false})
    if (isIf && !alwaysRaises(node->blocks()[branch ? 0 : 1]))
      runs.push_back(branch);
  std::vector<std::vector<c10::IValue>> outcomes;
  for (std::optional<bool> branch : runs) {
    torch::jit::Stack copy;
    for (const c10::IValue &input : inputs)
      copy.push_back(input.deepcopy());
    try {
      outcomes.push_back(runKeptControlFlow(kept, std::move(copy), branch));
    } catch (const std::exception &error) {
      std::string which = !branch   ? ""
                          : *branch ? " (its 'then' branch)"
                                    : " (its 'else' branch)";
      throw ImportError("running " + std::string(node->kind().toQualString()) +
                            " on tensor data" + which +
                            " on inputs of the given shapes failed: " +
                            describeTorchException(error),
                        node);
    }
  }
  // The results' shapes must not depend on the data: the same from both
  // branches, and a loop's carried tensors the same as they came in.
  for (size_t i = 0; i < node->outputs().size() && !outcomes.empty(); ++i) {
    std::string shape = describeShape(outcomes[0][i]);
    if (outcomes.size() > 1 && describeShape(outcomes[1][i]) != shape)
      throw ImportError(
          "prim::If on tensor data returns " + shape +
              " from its 'then' branch but " + describeShape(outcomes[1][i]) +
              " from its 'else' branch (result " + std::to_string(i) +
              "; its condition depends on tensor data through '" +
              nonStaticOrigin(node->input(0)) +
              "'); memopt needs results whose shapes do not "
              "depend on tensor data",
          node);
    if (!isIf) {
      const ValueFacts *before = evaluator.lookup(node->input(2 + i));
      if (before && before->value && describeShape(*before->value) != shape)
        throw ImportError("prim::Loop on tensor data changes loop-carried "
                          "value " +
                              std::to_string(i) + " from " +
                              describeShape(*before->value) + " to " + shape +
                              "; memopt needs shapes that do not depend on "
                              "the number of iterations",
                          node);
    }
  }
  for (size_t i = 0; i < node->outputs().size(); ++i) {
    ValueFacts facts;
    if (!outcomes.empty())
      facts.value = outcomes[0][i];
    // A tensor's shape is the same either way; any other value is data.
    facts.isStatic = facts.value && facts.value->isTensor() &&
                     facts.value->toTensor().defined();
    evaluator.setFacts(node->output(i), std::move(facts));
    evaluator.recordTensorFacts(node->output(i));
  }
  keptNodes.push_back(node);
  return node->next();
}

Node *GraphSpecializer::keepRemainingIterations(Node *node, LoopState &state) {
  torch::jit::WithInsertPoint insertPoint(node);
  Value *remaining = graph->insertConstant(state.tripCount);
  evaluator.evaluate(remaining->node());
  std::vector<Value *> inputs = {remaining, state.nextCondition};
  inputs.insert(inputs.end(), state.carried.begin(), state.carried.end());
  Node *rest = graph->create(c10::prim::Loop, inputs, node->outputs().size());
  rest->copyAttributes(*node);
  rest->setSourceRange(node->sourceRange());
  for (size_t i = 0; i < node->outputs().size(); ++i)
    rest->output(i)->setType(node->output(i)->type());
  Block *body = rest->addBlock();
  body->cloneFrom(node->blocks()[0], [](Value *outer) { return outer; });
  // Its iterations count from where the unrolled ones stopped.
  Value *index = body->inputs()[0];
  if (index->hasUses()) {
    torch::jit::WithInsertPoint atStart(body->nodes().front());
    Value *offset = graph->insert(
        c10::aten::add, {index, graph->insertConstant(state.iteration)});
    index->replaceAllUsesWith(offset);
    offset->node()->replaceInput(0, index);
  }
  graph->insertNode(rest);
  for (size_t i = 0; i < node->outputs().size(); ++i)
    replaceValue(node->output(i), rest->output(i));
  loops.erase(node);
  destroyNode(node);
  return rest;
}

Node *GraphSpecializer::foldIf(Node *node) {
  if (dependsOnTensorData(node->input(0)))
    return keepWhole(node);
  const ValueFacts &condition =
      requireStatic(node->input(0), node, "prim::If condition");
  bool takesThen = condition.value->toBool();
  Block *taken = node->blocks()[takesThen ? 0 : 1];
  // Dropping a branch that only raises (`if x.size(0) == 1: raise`) keeps
  // the computation valid for other sizes; anything else specializes it.
  if (!alwaysRaises(node->blocks()[takesThen ? 1 : 0]))
    noteShapeDecision(condition, node, "prim::If condition");
  std::vector<Value *> outputs;
  Node *first = inlineBlock(taken, node, {}, outputs);
  for (size_t i = 0; i < outputs.size(); ++i)
    replaceValue(node->output(i), outputs[i]);
  Node *next = first ? first : node->next();
  destroyNode(node);
  return next;
}

Node *GraphSpecializer::stepLoop(Node *node) {
  auto it = loops.find(node);
  if (it == loops.end()) {
    if (dependsOnTensorData(node->input(0)) ||
        dependsOnTensorData(node->input(1)))
      return keepWhole(node);
    LoopState state;
    const ValueFacts &tripCount =
        requireStatic(node->input(0), node, "prim::Loop trip count");
    noteShapeDecision(tripCount, node, "prim::Loop trip count");
    state.tripCount = tripCount.value->toInt();
    const ValueFacts &condition =
        requireStatic(node->input(1), node, "prim::Loop condition");
    noteShapeDecision(condition, node, "prim::Loop condition");
    state.condition = condition.value->toBool();
    for (Value *input : node->inputs().slice(2))
      state.carried.push_back(input);
    it = loops.emplace(node, std::move(state)).first;
  } else {
    LoopState &state = it->second;
    ++state.iteration;
    // A `break` on data after some unrolled iterations: the rest is kept.
    // (TorchScript writes such a loop as a `while` with no trip count, and
    // can print no other loop whose condition is not constant.)
    if (state.tripCount == std::numeric_limits<int64_t>::max() &&
        dependsOnTensorData(state.nextCondition))
      return keepRemainingIterations(node, state);
    const ValueFacts &condition =
        requireStatic(state.nextCondition, node, "prim::Loop condition");
    noteShapeDecision(condition, node, "prim::Loop condition");
    state.condition = condition.value->toBool();
  }
  LoopState &state = it->second;
  if (state.condition && state.iteration < state.tripCount) {
    if (++unrolledIterations > kMaxUnrolledIterations)
      throw ImportError("prim::Loop unrolls to more than " +
                            std::to_string(kMaxUnrolledIterations) +
                            " iterations",
                        node);
    torch::jit::WithInsertPoint insertPoint(node);
    Value *index = graph->insertConstant(state.iteration);
    evaluator.evaluate(index->node());
    std::vector<Value *> inputs = {index};
    inputs.insert(inputs.end(), state.carried.begin(), state.carried.end());
    std::vector<Value *> outputs;
    Node *first = inlineBlock(node->blocks()[0], node, inputs, outputs);
    state.nextCondition = outputs[0];
    state.carried.assign(outputs.begin() + 1, outputs.end());
    return first ? first : node;
  }
  for (size_t i = 0; i < node->outputs().size(); ++i)
    replaceValue(node->output(i), state.carried[i]);
  Node *next = node->next();
  loops.erase(it);
  destroyNode(node);
  return next;
}

/// Nodes that may go when nothing uses them: no writes, no side effects, no
/// random draws (removing one would shift the RNG stream).
static bool isRemovable(Node *node) {
  static const std::set<std::string> pureConstructs = {
      "prim::Constant",       "prim::GetAttr",       "prim::ListConstruct",
      "prim::TupleConstruct", "prim::DictConstruct", "prim::ListUnpack",
      "prim::TupleUnpack",    "prim::TupleIndex",    "prim::unchecked_cast",
      "prim::Uninitialized"};
  if (pureConstructs.count(node->kind().toQualString()))
    return true;
  const c10::FunctionSchema *schema = node->maybeSchema();
  if (!schema || node->hasSideEffects() || node->isNondeterministic())
    return false;
  return llvm::none_of(schema->arguments(), [](const c10::Argument &arg) {
    return arg.alias_info() && arg.alias_info()->isWrite();
  });
}

void GraphSpecializer::eraseDeadNodes() {
  std::vector<Node *> nodes(graph->block()->nodes().begin(),
                            graph->block()->nodes().end());
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    Node *node = *it;
    if (node->hasUses() || !isRemovable(node))
      continue;
    for (Value *output : node->outputs())
      evaluator.forget(output);
    node->destroy();
  }
}

/// A `with` block other than torch.no_grad() (lowerNoGradBlock) would
/// change state for the ops inside it (torch.enable_grad() inside no_grad,
/// a user's context manager) that the dialect has no way to say, and
/// running its context object at import would crash the interpreter, so it
/// is refused by name.
static std::string rejectWithBlock(const Node *node) {
  std::string context =
      node->inputs().empty() ? "?" : node->input(0)->type()->str();
  return "'with' blocks other than torch.no_grad() are not supported "
         "(context manager " +
         context +
         "): a compiled training step cannot change autograd state inside "
         "forward; move the block out of forward or compute it with "
         "detach()";
}

/// prim::Enter carries no source range in TorchScript; the object it enters
/// or the first statement of the block does.
static const Node *locatedWithNode(const Node *node) {
  const Node *object = node->inputs().empty() ? node : node->input(0)->node();
  for (const Node *candidate : {node, object, (const Node *)node->next()})
    if (!describeNode(candidate).empty())
      return candidate;
  return node;
}

SpecializedGraph GraphSpecializer::run() {
  bindInputs();
  Block *top = graph->block();
  int64_t steps = 0;
  for (Node *node = top->nodes().front(); node != top->return_node();) {
    if (++steps > kMaxNodes)
      throw ImportError("the method unrolls to more than " +
                        std::to_string(kMaxNodes) + " nodes");
    if (node->kind() == c10::prim::If) {
      node = foldIf(node);
      continue;
    }
    if (node->kind() == c10::prim::Loop) {
      node = stepLoop(node);
      continue;
    }
    if (isNoGradBlock(node)) {
      std::vector<Node *> dead;
      node = lowerNoGradBlock(
          node,
          [&](Value *value) -> std::optional<bool> {
            const ValueFacts *f = evaluator.lookup(value);
            if (!f || !f->value)
              return std::nullopt;
            return f->value->isNone();
          },
          dead);
      for (Node *gone : dead)
        destroyNode(gone);
      continue;
    }
    if (node->kind() == c10::prim::Enter || node->kind() == c10::prim::Exit)
      throw ImportError(rejectWithBlock(node), locatedWithNode(node));
    if (Node *next = forwardAssignedAttribute(node)) {
      node = next;
      continue;
    }
    recordDictKeys(node, evaluator, dictKeys);
    assumeDrawArguments(node);
    try {
      evaluator.evaluate(node);
    } catch (const ImportError &) {
      throw;
    } catch (const ExactRunRequired &) {
      throw;
    } catch (const std::exception &error) {
      // With made-up inputs the kernel may have failed where a real run
      // would not (or differently).
      if (evaluator.madeUpData())
        throw ExactRunRequired();
      std::string what = node->kind() == c10::prim::RaiseException
                             ? "the model raises an exception for the given "
                               "input shapes: "
                             : "running '" +
                                   std::string(node->kind().toQualString()) +
                                   "' on inputs of the given shapes failed: ";
      throw ImportError(what + describeTorchException(error), node);
    }
    evaluator.releaseDeadInputs(node, [&](const Value *value) {
      // A value assigned to an attribute may be read back (its facts too).
      return llvm::any_of(loops,
                          [&](const auto &entry) {
                            return llvm::is_contained(entry.second.carried,
                                                      value);
                          }) ||
             llvm::any_of(assigned, [&](const auto &entry) {
               return entry.second == value;
             });
    });
    node = node->next();
  }
  DictRewriteHooks hooks;
  hooks.canAssume = [&](const ValueFacts &facts) {
    return llvm::all_of(facts.attributeDeps, [&](const std::string &path) {
      return isGuardableConstant(attributeValue(path));
    });
  };
  hooks.assume = [&](const ValueFacts &facts, Node *node) {
    assumeAttributes(facts, node, "a dict key");
  };
  hooks.destroy = [&](Node *node) { destroyNode(node); };
  functionalizeDicts(*graph, dictKeys, hooks);
  eraseDeadNodes();
  SpecializedGraph result;
  // Described again now that the rewrites above are done.
  for (Node *node : keptNodes)
    result.kept.emplace(node,
                        describeKeptControlFlow(node, keptConstant(node)));
  result.graph = graph;
  result.tensorFacts = std::move(evaluator.tensorFacts());
  result.assumptions = std::move(assumptions);
  result.shapeAssumptions = std::move(shapeAssumptions);
  result.boundDefaults = std::move(boundDefaults);
  return result;
}

SpecializedGraph mlir::memopt::detail::specializeGraph(
    const torch::jit::Module &module, std::shared_ptr<torch::jit::Graph> graph,
    const std::vector<InputSpec> &specs, EvaluationMode &mode,
    const c10::FunctionSchema *schema) {
  return GraphSpecializer(module, std::move(graph), specs, mode, schema).run();
}
