//===- NodeEvaluator.cpp - Run single TorchScript nodes at import time ----===//
//
// The specializer needs, for every value, whether it is *static*: the same on
// every call with inputs of the given shapes. Constants, module attributes
// that forward never assigns, and tensor shapes (with input specs) are
// static; tensor *data* is not, so anything computed from it (x.sum() > 0,
// int(t)) is not. Control flow may only be folded on static values.
//
// With input specs every node is executed once on inputs of those shapes (in
// graph order, under no_grad): its operator directly, or TorchScript's
// interpreter for nodes without one; that is how every tensor gets its
// static shape and dtype. Heavy kernels (convolutions, matrix products...)
// may be skipped for zero results of the right shape (ShapeOnlyKernels.cpp);
// since such made-up data must not reach anything the import reads, the
// first node that would read tensor data after it (or a failing kernel)
// makes the import start over with real kernels only. Without specs only
// static non-tensor computations run.
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

/// float, Scalar and their optionals: numbers no ATen operator on tensors
/// reads a size from (sizes are ints; upsampling's scale factors are lists).
static bool isValueOnlyNumber(const c10::TypePtr &type) {
  if (auto optional = type->cast<c10::OptionalType>())
    return isValueOnlyNumber(optional->getElementType());
  return type->kind() == c10::TypeKind::FloatType ||
         type->kind() == c10::TypeKind::NumberType;
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

/// True unless every index of an advanced-indexing list is known to be an
/// integer tensor (or None): a boolean mask selects a data-dependent number
/// of elements, integer indices select exactly their own shape's worth.
static bool mayIndexByMask(const ValueFacts *indices) {
  if (!indices || !indices->value || !indices->value->isList())
    return true;
  for (const c10::IValue &index : indices->value->toListRef()) {
    if (index.isNone())
      continue;
    if (!index.isTensor())
      return true;
    c10::ScalarType dtype = index.toTensor().scalar_type();
    if (dtype == c10::kBool || dtype == c10::kByte)
      return true;
  }
  return false;
}

/// Ops whose result shape depends on tensor data.
static bool hasDataDependentShape(const Node *node,
                                  const NodeEvaluator &evaluator) {
  static const std::set<std::string> ops = {
      "aten::nonzero",       "aten::nonzero_numpy",
      "aten::masked_select", "aten::unique",
      "aten::_unique",       "aten::_unique2",
      "aten::unique_dim",    "aten::unique_consecutive",
      "aten::argwhere",      "aten::repeat_interleave",
      "aten::bincount",      "aten::item",
      "aten::tolist",        "prim::tolist"};
  std::string kind = node->kind().toQualString();
  // table[index_tensor] (relative position biases, gathers by a buffer).
  if (kind == "aten::index" && node->inputs().size() == 2)
    return mayIndexByMask(evaluator.lookup(node->input(1)));
  return ops.count(kind) != 0;
}

/// Types whose values are tensors only (or None): data, never a number
/// control flow could be decided on.
static bool holdsTensorsOnly(const c10::TypePtr &type) {
  switch (type->kind()) {
  case c10::TypeKind::TensorType:
  case c10::TypeKind::NoneType:
    return true;
  case c10::TypeKind::OptionalType:
  case c10::TypeKind::ListType:
  case c10::TypeKind::TupleType:
    return llvm::all_of(type->containedTypes(), holdsTensorsOnly);
  default:
    return false;
  }
}

static bool containsTensor(const c10::TypePtr &type) {
  return type->kind() == c10::TypeKind::TensorType ||
         llvm::any_of(type->containedTypes(), containsTensor);
}

/// Constructs that move values into or out of containers without computing.
static bool isPassThrough(const Node *node) {
  static const std::set<std::string> constructs = {
      "prim::ListConstruct", "prim::TupleConstruct", "prim::DictConstruct",
      "prim::ListUnpack",    "prim::TupleUnpack",    "prim::TupleIndex",
      "prim::TupleSlice",    "aten::__getitem__",    "aten::append",
      "aten::_set_item"};
  return constructs.count(node->kind().toQualString()) != 0;
}

/// True when `node` computes from tensor data something that is not a
/// tensor (x.sum() > 0, int(t)) or a tensor whose shape it decides: what
/// the import reads of a run besides shapes.
static bool readsTensorData(const Node *node, const NodeEvaluator &evaluator) {
  if (isShapeQuery(node) || isPassThrough(node) ||
      llvm::none_of(node->inputs(), [](const tj::Value *input) {
        return containsTensor(input->type());
      }))
    return false;
  std::string kind = node->kind().toQualString();
  if (hasDataDependentShape(node, evaluator) ||
      (kind == "aten::where" && node->inputs().size() == 1) ||
      (kind == "aten::tensor_split" &&
       node->input(1)->type()->kind() == c10::TypeKind::TensorType))
    return true;
  return llvm::any_of(node->outputs(), [](const tj::Value *output) {
    return !holdsTensorsOnly(output->type());
  });
}

NodeEvaluator::NodeEvaluator(const torch::jit::Module &module,
                             const std::shared_ptr<torch::jit::Graph> &graph,
                             bool executeTensors, EvaluationMode &mode)
    : module(module), executeTensors(executeTensors), mode(mode) {
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

std::optional<std::string>
NodeEvaluator::attributePath(const Node *node) const {
  std::optional<std::string> base = modulePath(node->input(0));
  if (!base)
    return std::nullopt;
  std::string name = node->s(c10::attr::name);
  return base->empty() ? name : *base + "." + name;
}

void NodeEvaluator::evaluateGetAttr(Node *node) {
  tj::Value *object = node->input(0);
  const ValueFacts *base = lookup(object);
  std::string name = node->s(c10::attr::name);
  std::string path = attributePath(node).value_or(name);
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
    if (tensor.defined()) {
      // What ATen's convolutions read to pick channels-last kernels.
      bool channelsLast =
          (tensor.dim() == 4 || tensor.dim() == 5) && !tensor.is_contiguous() &&
          tensor.suggest_memory_format() != at::MemoryFormat::Contiguous;
      shapes[value] =
          TensorFacts{tensor.sizes().vec(), tensor.scalar_type(), channelsLast};
    }
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
    result.dataStatic = result.value && result.value->isTensor();
    setFacts(node->output(), std::move(result));
    recordTensorFacts(node->output());
    return;
  }
  if (node->kind() == c10::prim::GetAttr)
    return evaluateGetAttr(node);

  bool inputsKnown = true, inputsStatic = true, anyTensorInput = false;
  // Every input a static scalar or a tensor whose data is static.
  bool inputsDataStatic = true;
  bool sizeDependent = isSizeQuery(node);
  std::set<std::string> deps;
  for (tj::Value *input : node->inputs()) {
    const ValueFacts *f = lookup(input);
    inputsKnown &= f && f->value.has_value();
    inputsStatic &= f && f->isStatic;
    anyTensorInput |= holdsTensorData(input->type());
    inputsDataStatic &= f && f->isStatic &&
                        (f->dataStatic || !containsTensor(input->type()) ||
                         (f->value && f->value->isNone()));
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
  if (run) {
    if (mode.madeUpData && readsTensorData(node, *this))
      throw ExactRunRequired();
    execute(node);
  }
  // Data computed from data-static tensors only, by a deterministic aten
  // operator that really ran, is data-static (no data was made up in this
  // run so far: madeUpData only turns on); scalars read out of it
  // (torch.equal(mask, causal)) are static.
  static const std::set<std::string> uninitialized = {
      "aten::empty", "aten::empty_like", "aten::empty_strided",
      "aten::new_empty", "aten::new_empty_strided"};
  // prim::unchecked_cast: an Optional[Tensor] refined to the tensor.
  bool computes = node->kind().is_aten() && node->maybeSchema() &&
                  !uninitialized.count(node->kind().toQualString()) &&
                  !node->isNondeterministic() && !node->hasSideEffects() &&
                  !hasDataDependentShape(node, *this);
  bool dataStatic = run && inputsDataStatic && !mode.madeUpData &&
                    (computes || node->kind() == c10::prim::unchecked_cast);

  // Random draws change data, never shapes; only a scalar read out of tensor
  // data (item, Bool(t), x.sum() > 0 via aten::gt -> Bool) is data. A
  // number read out of data and passed to an operator on tensors as a float
  // or Scalar (a cumulative batch-norm's momentum 1 / float(count), x * s)
  // sets values, never sizes, which ATen takes as ints.
  bool shapesStatic =
      run && !hasDataDependentShape(node, *this) &&
      (inputsStatic || (anyTensorInput && node->kind().is_aten() &&
                        llvm::all_of(node->inputs(), [&](tj::Value *input) {
                          const ValueFacts *f = lookup(input);
                          return (f && f->isStatic) ||
                                 isValueOnlyNumber(input->type());
                        })));
  bool nodeStatic = shapesStatic && !nondeterministic;
  for (tj::Value *output : node->outputs()) {
    ValueFacts &f = facts(output);
    bool isScalar = isScalarType(output->type());
    f.isStatic = isScalar ? nodeStatic && (!anyTensorInput ||
                                           isShapeQuery(node) || dataStatic)
                          : shapesStatic && (executeTensors || !producesTensor);
    f.dataStatic =
        dataStatic && output->type()->kind() == c10::TypeKind::TensorType;
    // Only scalar results and data-static tensors carry attribute and size
    // dependencies: control flow is decided on scalars, read out of those
    // tensors at most; other tensor values are never folded.
    if (f.isStatic && (isScalar || f.dataStatic)) {
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
  torch::jit::Stack stack;
  stack.reserve(node->inputs().size());
  for (tj::Value *input : node->inputs())
    stack.push_back(*facts(input).value);
  // The model's own message (LibTorch 1.13's kernel reports the exception
  // class name instead).
  if (node->kind() == c10::prim::RaiseException && !stack.empty() &&
      stack[0].isString())
    throw std::runtime_error(stack[0].toStringRef());
  at::NoGradGuard noGrad;
  std::optional<std::vector<c10::IValue>> madeUp;
  if (mode.allowShapeOnly)
    madeUp = runShapeOnly(node, stack, mode.madeUpData);
  if (madeUp) {
    mode.madeUpData = true;
    stack = std::move(*madeUp);
  } else if (mode.madeUpData && canSkipInPlaceUpdate(node, stack)) {
    stack.resize(1);
  } else if (const tj::Operator *op = node->maybeOperator();
             op && node->blocks().empty() && !node->kind().is_prim()) {
    // As the interpreter calls an operator (prim ops may be instructions of
    // its own): a vararg operation takes the number of inputs on top of
    // them (one created for its node knows it).
    if (op->hasOperation() && op->schema().is_vararg())
      stack.emplace_back(int64_t(node->inputs().size()));
    node->getOperation()(stack);
  } else {
    runInterpreted(node, stack);
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

void NodeEvaluator::runInterpreted(Node *node, torch::jit::Stack &stack) {
  // One node in a graph of its own, run by TorchScript's interpreter: this
  // handles every kind the interpreter handles (nested blocks, constructs
  // compiled to instructions...). A value used twice is one graph input.
  auto graph = std::make_shared<torch::jit::Graph>();
  std::unordered_map<tj::Value *, tj::Value *> mapping;
  torch::jit::Stack inputs;
  for (auto [input, value] : llvm::zip(node->inputs(), stack)) {
    if (mapping.count(input))
      continue;
    mapping[input] = graph->addInput()->setType(input->type());
    inputs.push_back(std::move(value));
  }
  Node *clone = graph->createClone(
      node, [&](tj::Value *v) { return mapping.at(v); }, /*copy_blocks=*/true);
  graph->insertNode(clone);
  for (tj::Value *output : clone->outputs())
    graph->registerOutput(output);
  torch::jit::Code code(graph, "memopt_probe");
  torch::jit::InterpreterState(code).run(inputs);
  stack = std::move(inputs);
}

/// The top-level node that contains `node` (itself when it is top level).
static const Node *topLevelAncestor(const Node *node) {
  const torch::jit::Block *top = node->owningGraph()->block();
  while (node->owningBlock() != top)
    node = node->owningBlock()->owningNode();
  return node;
}

void NodeEvaluator::releaseDeadInputs(
    Node *node, llvm::function_ref<bool(const tj::Value *)> held) {
  for (tj::Value *input : node->inputs()) {
    if (held(input))
      continue;
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
