//===- NodeEvaluator.cpp - Run single TorchScript nodes at import time ----===//
//
// The specializer needs, for every value, whether it is *static*: the same on
// every call with inputs of the given shapes. Constants, module attributes
// that forward never assigns, and tensor shapes (with input specs) are
// static; tensor *data* is not, so anything computed from it (x.sum() > 0,
// int(t)) is not. Control flow may only be folded on static values.
//
// With input specs every node is executed once on inputs of those shapes (in
// graph order, under no_grad) through TorchScript's own interpreter; that is
// how every tensor gets its static shape and dtype. Without specs only static
// non-tensor computations run.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include <ATen/core/function_schema.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/jit/runtime/interpreter.h>

using namespace mlir::memopt::detail;
using torch::jit::Node;
namespace tj = torch::jit;

static bool holdsTensorData(const c10::TypePtr &type) {
  if (type->kind() == c10::TypeKind::TensorType)
    return true;
  if (auto optional = type->cast<c10::OptionalType>())
    return optional->getElementType()->kind() == c10::TypeKind::TensorType;
  return false;
}

/// Numbers, strings and lists of them: values whose content is the value.
static bool isScalarType(const c10::TypePtr &type) {
  switch (type->kind()) {
  case c10::TypeKind::IntType:
  case c10::TypeKind::FloatType:
  case c10::TypeKind::BoolType:
  case c10::TypeKind::NumberType:
  case c10::TypeKind::ComplexType:
  case c10::TypeKind::StringType:
    return true;
  case c10::TypeKind::ListType:
    return isScalarType(type->expectRef<c10::ListType>().getElementType());
  case c10::TypeKind::OptionalType:
    return isScalarType(type->expectRef<c10::OptionalType>().getElementType());
  default:
    return false;
  }
}

/// Ops whose non-tensor results depend only on a tensor's shape, dtype,
/// device or None-ness, never on its data.
static bool isShapeQuery(const Node *node) {
  static const std::set<std::string> queries = {
      "aten::size",           "aten::dim",          "aten::len",
      "aten::numel",          "aten::sym_size",     "aten::sym_numel",
      "prim::dtype",          "prim::device",       "prim::layout",
      "prim::is_cuda",        "prim::is_cpu",       "aten::is_floating_point",
      "aten::is_complex",     "aten::__is__",       "aten::__isnot__",
      "aten::element_size",   "prim::shape",        "aten::__not__",
      "prim::unchecked_cast", "prim::isinstance",   "aten::is_contiguous",
      "prim::requires_grad",  "aten::__contains__", "prim::is_nested",
      "aten::is_nested",      "prim::is_sparse",    "prim::is_sparse_csr",
      "prim::is_mkldnn",      "prim::is_quantized", "prim::is_meta",
      "prim::is_xpu",         "prim::is_vulkan",    "prim::is_mps",
      "prim::is_ipu",         "prim::is_ort",       "prim::is_mlc",
      "aten::is_inference",   "aten::is_leaf",      "prim::name",
      "aten::get_device",     "prim::index"};
  return queries.count(node->kind().toQualString()) != 0;
}

/// Shape queries whose results depend on sizes, not only on ranks, dtypes or
/// devices (contiguity depends on strides, hence on sizes).
static bool isSizeQuery(const Node *node) {
  static const std::set<std::string> queries = {
      "aten::size",  "aten::sym_size",  "prim::shape",
      "aten::numel", "aten::sym_numel", "aten::is_contiguous"};
  return queries.count(node->kind().toQualString()) != 0;
}

/// `x.size()` / `x.shape`: the whole size list of one tensor.
static bool isSizeListQuery(const Node *node) {
  static const std::set<std::string> queries = {"aten::size", "prim::shape",
                                                 "aten::sym_size"};
  return queries.count(node->kind().toQualString()) != 0 &&
         node->inputs().size() == 1;
}

/// Ops whose result shape depends on tensor data.
static bool hasDataDependentShape(const Node *node) {
  static const std::set<std::string> ops = {
      "aten::nonzero",       "aten::nonzero_numpy",
      "aten::masked_select", "aten::unique",
      "aten::_unique",       "aten::_unique2",
      "aten::unique_dim",    "aten::unique_consecutive",
      "aten::argwhere",      "aten::repeat_interleave",
      "aten::bincount",      "aten::index",
      "aten::item",          "aten::tolist",
      "prim::tolist"};
  return ops.count(node->kind().toQualString()) != 0;
}

NodeEvaluator::NodeEvaluator(const torch::jit::Module &module,
                             const std::shared_ptr<torch::jit::Graph> &graph,
                             bool executeTensors)
    : module(module), executeTensors(executeTensors) {
  tj::Value *self = graph->inputs().at(0);
  modulePaths[self] = "";
  setFacts(self, ValueFacts{module._ivalue(), /*isStatic=*/true, {}});
  // Every attribute forward assigns is state, not a foldable constant.
  std::function<void(torch::jit::Block *)> scan =
      [&](torch::jit::Block *block) {
        for (Node *node : block->nodes()) {
          if (node->kind() == c10::prim::GetAttr ||
              node->kind() == c10::prim::SetAttr) {
            auto base = modulePath(node->input(0));
            std::string name = node->s(c10::attr::name);
            std::string path = base
                                   ? (base->empty() ? name : *base + "." + name)
                                   : "<object>." + name;
            if (node->kind() == c10::prim::SetAttr)
              mutatedAttributes.insert(path);
            else if (node->output()->type()->cast<c10::ClassType>())
              modulePaths[node->output()] = path;
          }
          for (torch::jit::Block *inner : node->blocks())
            scan(inner);
        }
      };
  scan(graph->block());
}

ValueFacts &NodeEvaluator::facts(const tj::Value *value) {
  return known[value];
}

const ValueFacts *NodeEvaluator::lookup(const tj::Value *value) const {
  auto it = known.find(value);
  return it == known.end() ? nullptr : &it->second;
}

void NodeEvaluator::setFacts(const tj::Value *value, ValueFacts facts) {
  known[value] = std::move(facts);
}

void NodeEvaluator::forget(const tj::Value *value) {
  known.erase(value);
  shapes.erase(value);
  modulePaths.erase(value);
}

std::optional<std::string>
NodeEvaluator::modulePath(const tj::Value *value) const {
  auto it = modulePaths.find(value);
  if (it == modulePaths.end())
    return std::nullopt;
  return it->second;
}

void NodeEvaluator::evaluateGetAttr(Node *node) {
  tj::Value *object = node->input(0);
  const ValueFacts *base = lookup(object);
  std::string name = node->s(c10::attr::name);
  std::optional<std::string> basePath = modulePath(object);
  std::string path =
      basePath ? (basePath->empty() ? name : *basePath + "." + name) : name;
  ValueFacts result;
  if (base && base->value && base->value->isObject())
    result.value = base->value->toObject()->getAttr(name);
  tj::Value *output = node->output();
  if (output->type()->cast<c10::ClassType>()) {
    modulePaths[output] = path;
    result.isStatic = true;
  } else if (!isAttributeMutated(path) && result.value) {
    // Tensors: their shape never changes; others: their value is fixed.
    result.isStatic = !result.value->isTensor() || executeTensors;
    if (!result.value->isTensor() && !result.value->isObject())
      result.attributeDeps.insert(path);
  }
  setFacts(output, std::move(result));
  recordTensorFacts(output);
}

void NodeEvaluator::recordTensorFacts(const tj::Value *value) {
  const ValueFacts *f = lookup(value);
  if (!f || !f->value)
    return;
  const c10::IValue &v = *f->value;
  if (v.isTensor()) {
    const at::Tensor &tensor = v.toTensor();
    if (tensor.defined())
      shapes[value] = TensorFacts{tensor.sizes().vec(), tensor.scalar_type()};
    return;
  }
  // Lists are mutable: a snapshot of their elements' shapes would describe
  // one point in time only, so list types stay unranked.
}

void NodeEvaluator::evaluate(Node *node) {
  if (node->kind() == c10::prim::Constant) {
    ValueFacts result;
    result.value = torch::jit::toIValue(node->output());
    result.isStatic = true;
    setFacts(node->output(), std::move(result));
    recordTensorFacts(node->output());
    return;
  }
  if (node->kind() == c10::prim::GetAttr)
    return evaluateGetAttr(node);

  bool inputsKnown = true, inputsStatic = true, anyTensorInput = false;
  bool sizeDependent = isSizeQuery(node);
  std::set<std::string> deps;
  for (tj::Value *input : node->inputs()) {
    const ValueFacts *f = lookup(input);
    inputsKnown &= f && f->value.has_value();
    inputsStatic &= f && f->isStatic;
    anyTensorInput |= holdsTensorData(input->type());
    if (f) {
      deps.insert(f->attributeDeps.begin(), f->attributeDeps.end());
      sizeDependent |= f->sizeDependent;
    }
  }
  // len(x.size()) is the rank: the same for every shape of that rank.
  if (node->kind() == c10::aten::len && node->inputs().size() == 1)
    if (const ValueFacts *list = lookup(node->input(0));
        list && list->isSizeList)
      sizeDependent = false;
  bool nondeterministic = false, sideEffects = false;
  if (node->maybeSchema() || node->kind().is_prim()) {
    nondeterministic = node->isNondeterministic();
    sideEffects = node->hasSideEffects();
  }
  bool producesTensor = llvm::any_of(node->outputs(), [](tj::Value *v) {
    return v->type()->kind() == c10::TypeKind::TensorType ||
           v->type()->kind() == c10::TypeKind::ListType;
  });
  // prim::Print and aten::warn would write to our output; never run them.
  bool printing =
      node->kind() == c10::prim::Print || node->kind() == c10::aten::warn;
  bool run = inputsKnown && !printing &&
             (executeTensors ||
              (!producesTensor && (!anyTensorInput || isShapeQuery(node)) &&
               !sideEffects && !nondeterministic && inputsStatic));
  if (run)
    execute(node);

  // Random draws change data, never shapes; only a scalar read out of tensor
  // data (item, Bool(t), x.sum() > 0 via aten::gt -> Bool) is data.
  bool shapesStatic = run && inputsStatic && !hasDataDependentShape(node);
  bool nodeStatic = shapesStatic && !nondeterministic;
  for (tj::Value *output : node->outputs()) {
    ValueFacts &f = facts(output);
    bool isScalar = isScalarType(output->type());
    f.isStatic = isScalar
                     ? nodeStatic && (!anyTensorInput || isShapeQuery(node))
                     : shapesStatic && (executeTensors || !producesTensor);
    // Only scalar results carry attribute dependencies: control flow is
    // decided on scalars, and tensor values are never folded.
    if (f.isStatic && isScalar) {
      f.attributeDeps = deps;
      f.sizeDependent = sizeDependent;
      f.isSizeList = isSizeListQuery(node);
    }
    recordTensorFacts(output);
  }
  // An in-place update of a list (append) makes it as static as the update.
  if (const c10::FunctionSchema *schema = node->maybeSchema()) {
    const auto &arguments = schema->arguments();
    for (size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i)
      if (arguments[i].alias_info() && arguments[i].alias_info()->isWrite() &&
          !(isScalarType(node->input(i)->type()) ? nodeStatic : shapesStatic))
        facts(node->input(i)).isStatic = false;
  }
}

void NodeEvaluator::execute(Node *node) {
  // One node in a graph of its own, run by TorchScript's interpreter: this
  // handles every kind the interpreter handles (tuples, lists, raise...).
  auto graph = std::make_shared<torch::jit::Graph>();
  std::unordered_map<tj::Value *, tj::Value *> mapping;
  torch::jit::Stack stack;
  for (tj::Value *input : node->inputs()) {
    if (mapping.count(input))
      continue;
    tj::Value *inner = graph->addInput()->setType(input->type());
    mapping[input] = inner;
    stack.push_back(*facts(input).value);
  }
  Node *clone = graph->createClone(
      node, [&](tj::Value *v) { return mapping.at(v); }, /*copy_blocks=*/true);
  graph->insertNode(clone);
  for (tj::Value *output : clone->outputs())
    graph->registerOutput(output);
  {
    at::NoGradGuard noGrad;
    torch::jit::Code code(graph, "memopt_probe");
    torch::jit::InterpreterState(code).run(stack);
  }
  if (stack.size() != node->outputs().size())
    throw ImportError("running '" + std::string(node->kind().toQualString()) +
                          "' at import time gave " +
                          std::to_string(stack.size()) + " results, expected " +
                          std::to_string(node->outputs().size()),
                      node);
  for (size_t i = 0; i < stack.size(); ++i)
    facts(node->output(i)).value = std::move(stack[i]);
}

/// The top-level node that contains `node` (itself when it is top level).
static const Node *topLevelAncestor(const Node *node) {
  const torch::jit::Block *top = node->owningGraph()->block();
  while (node->owningBlock() != top)
    node = node->owningBlock()->owningNode();
  return node;
}

void NodeEvaluator::releaseDeadInputs(Node *node) {
  for (tj::Value *input : node->inputs()) {
    ValueFacts *f = &facts(input);
    if (!f->value || !(f->value->isTensor() || f->value->isList()))
      continue;
    if (input->node()->kind() == c10::prim::GetAttr ||
        input->node()->kind() == c10::prim::Param)
      continue;
    bool dead = llvm::all_of(input->uses(), [&](const torch::jit::Use &use) {
      const Node *user = topLevelAncestor(use.user);
      return user == node || user->isBefore(node);
    });
    if (dead)
      f->value.reset();
  }
}
