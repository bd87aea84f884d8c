//===- NodeImport.cpp - A straight-line TorchScript graph as a func.func
//---===//
//
// One memopt op per TorchScript node, in graph order (in-place ops and views
// keep their order). prim::GetAttr becomes memopt.param / memopt.buffer /
// memopt.get_attr, prim::SetAttr memopt.set_attr, every other node
// memopt.op with its arguments in schema order; constants are folded into
// `args` wherever a TorchScript constant can stand.
//
//===----------------------------------------------------------------------===//
#include "ConstantFolding.h"
#include "ModuleState.h"

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <torch/csrc/jit/ir/constants.h>

using namespace mlir;
using namespace mlir::memopt;
using namespace mlir::memopt::detail;
using torch::jit::Node;

namespace {
class GraphImporter {
public:
  GraphImporter(const torch::jit::Module &module, const SpecializedGraph &graph,
                ModuleOp parent)
      : graph(graph), state(module, *graph.graph), context(parent.getContext()),
        builder(context), constants(graph, context) {}

  func::FuncOp run(const std::string &name, ModuleOp parent);

private:
  Type typeOf(const torch::jit::Value *value) const;
  Value lookup(const torch::jit::Value *value, const Node *user);
  void importNode(Node *node);
  void importGetAttr(Node *node);
  /// The memopt.param / memopt.buffer of `path`, made once at the top.
  Value getState(const std::string &path, const at::Tensor &tensor,
                 StateKind kind);
  void importOperator(Node *node);
  void importKept(Node *node, const KeptControlFlow &kept);
  /// The memopt.op of `node` on `operands` and `args`, its results typed
  /// from the facts and recorded as the node's values.
  TorchOp createTorchOp(Node *node, ValueRange operands,
                        ArrayRef<Attribute> args);
  void setFlags(Node *node, const std::vector<int64_t> &operandOfInput,
                TorchOp op);

  const SpecializedGraph &graph;
  ModuleState state;
  MLIRContext *context;
  OpBuilder builder;
  ConstantFolder constants;
  llvm::DenseMap<const torch::jit::Value *, Value> values;
  /// Where memopt.param / memopt.buffer go: the top of the function.
  OpBuilder::InsertPoint stateInsertPoint;
  std::map<std::string, Value> stateValues;
  /// The same tensor under several paths (an LM head tied to the token
  /// embedding): one value, named by the first path it was read through, so
  /// that the analyses see one parameter (autograd accumulates one .grad
  /// from every use).
  llvm::DenseMap<const c10::TensorImpl *, std::pair<Value, StateKind>>
      stateByTensor;
};
} // namespace

Type GraphImporter::typeOf(const torch::jit::Value *value) const {
  auto facts = graph.tensorFacts.find(value);
  return importType(value->type(),
                    facts == graph.tensorFacts.end() ? nullptr : &facts->second,
                    context);
}

Value GraphImporter::lookup(const torch::jit::Value *value, const Node *user) {
  if (Value mapped = values.lookup(value))
    return mapped;
  if (state.isObject(value))
    throw ImportError("a module object is used as a value by '" +
                          std::string(user->kind().toQualString()) +
                          "'; memopt imports only calls of its methods",
                      user);
  // A constant needed as an SSA value (returned, assigned, a tensor).
  Value constant = constants.materialize(value, builder, typeOf(value));
  values[value] = constant;
  return constant;
}

void GraphImporter::importGetAttr(Node *node) {
  StateRef ref = state.resolve(node);
  if (ref.kind == StateKind::Module)
    return;
  Type type = typeOf(node->output());
  if (ref.kind == StateKind::Attribute) {
    // A list of the module's own parameters (nn.LSTM's _flat_weights) is
    // those parameters: their shapes and gradients are then visible.
    std::vector<std::string> listed = state.getListedParameters(node);
    if (!listed.empty()) {
      std::vector<at::Tensor> tensors = ref.value.toTensorVector();
      SmallVector<Value> elements;
      SmallVector<Attribute> args;
      for (size_t i = 0; i < listed.size(); ++i) {
        elements.push_back(
            getState(listed[i], tensors[i], StateKind::Parameter));
        args.push_back(OperandRefAttr::get(context, i));
      }
      values[node->output()] =
          builder
              .create<TorchOp>(locationOf(node, context), TypeRange{type},
                               "prim::ListConstruct", elements,
                               builder.getArrayAttr(args))
              ->getResult(0);
      return;
    }
    values[node->output()] =
        builder.create<GetAttrOp>(locationOf(node, context), type, ref.path);
    return;
  }
  values[node->output()] = getState(ref.path, ref.value.toTensor(), ref.kind);
}

Value GraphImporter::getState(const std::string &path, const at::Tensor &tensor,
                              StateKind kind) {
  // Parameters and buffers are pure: one op per path, at the top.
  Value &cached = stateValues[path];
  if (cached)
    return cached;
  auto tied = stateByTensor.find(tensor.unsafeGetTensorImpl());
  if (tied != stateByTensor.end() && tied->second.second == kind)
    return cached = tied->second.first;
  Location loc = NameLoc::get(builder.getStringAttr(path));
  auto type = RankedTensorType::get(tensor.sizes().vec(),
                                    importDType(tensor.scalar_type(), context));
  OpBuilder::InsertionGuard guard(builder);
  builder.restoreInsertionPoint(stateInsertPoint);
  if (kind == StateKind::Parameter)
    cached = builder.create<ParamOp>(loc, type, path, !tensor.requires_grad());
  else
    cached =
        builder.create<BufferOp>(loc, type, path, kind == StateKind::Transient);
  stateInsertPoint = OpBuilder::InsertPoint(
      cached.getDefiningOp()->getBlock(),
      std::next(Block::iterator(cached.getDefiningOp())));
  stateByTensor.try_emplace(tensor.unsafeGetTensorImpl(), cached, kind);
  return cached;
}

/// Schema-less nodes memopt knows how to carry (TorchScript's structural
/// prim ops); every other node must have a schema.
static bool isKnownConstruct(const Node *node) {
  static const std::set<std::string> constructs = {
      "prim::ListConstruct",  "prim::TupleConstruct", "prim::DictConstruct",
      "prim::ListUnpack",     "prim::TupleUnpack",    "prim::TupleIndex",
      "prim::TupleSlice",     "prim::unchecked_cast", "prim::Uninitialized",
      "prim::RaiseException", "prim::Print",          "prim::Constant"};
  return constructs.count(node->kind().toQualString()) != 0;
}

/// Inputs an operator writes although its schema does not say so: the
/// batch-norm family updates running_mean / running_var (inputs 3 and 4) in
/// place unless `training` is a constant false.
static std::vector<size_t> undeclaredWrites(const Node *node) {
  static const std::set<std::string> batchNorms = {
      "aten::batch_norm",
      "aten::native_batch_norm",
      "aten::_batch_norm_impl_index",
      "aten::instance_norm",
      "aten::cudnn_batch_norm",
      "aten::miopen_batch_norm"};
  if (!batchNorms.count(node->kind().toQualString()) ||
      node->inputs().size() < 6)
    return {};
  auto training = torch::jit::constant_as<bool>(node->input(5));
  if (training && !*training)
    return {};
  return {3, 4};
}

void GraphImporter::setFlags(Node *node,
                             const std::vector<int64_t> &operandOfInput,
                             TorchOp op) {
  const c10::FunctionSchema *schema = node->maybeSchema();
  SmallVector<int64_t> mutates;
  SmallVector<int64_t> views(node->outputs().size(), -1);
  bool anyView = false;
  if (schema) {
    op.setOverloadAttr(builder.getStringAttr(schema->overload_name()));
    const auto &arguments = schema->arguments();
    for (size_t i = 0; i < arguments.size() && i < operandOfInput.size(); ++i)
      if (arguments[i].alias_info() && arguments[i].alias_info()->isWrite() &&
          operandOfInput[i] >= 0)
        mutates.push_back(operandOfInput[i]);
    for (size_t i : undeclaredWrites(node))
      if (operandOfInput[i] >= 0 &&
          !llvm::is_contained(mutates, operandOfInput[i]))
        mutates.push_back(operandOfInput[i]);
    llvm::sort(mutates);
    // A result aliases the input whose alias set it shares: (a) in
    // `view(Tensor(a) self, ...) -> Tensor(a)`.
    const auto &returns = schema->returns();
    for (size_t r = 0; r < returns.size() && r < views.size(); ++r) {
      const c10::AliasInfo *result = returns[r].alias_info();
      if (!result || result->isWildcardBefore())
        continue;
      for (size_t i = 0; i < arguments.size() && i < operandOfInput.size();
           ++i) {
        const c10::AliasInfo *input = arguments[i].alias_info();
        if (!input || input->isWildcardBefore() || operandOfInput[i] < 0)
          continue;
        bool shared = llvm::any_of(result->beforeSets(), [&](c10::Symbol set) {
          return input->beforeSets().count(set) != 0;
        });
        if (shared) {
          views[r] = operandOfInput[i];
          anyView = true;
          break;
        }
      }
    }
  } else if (node->kind() == c10::prim::unchecked_cast &&
             operandOfInput[0] >= 0) {
    views[0] = operandOfInput[0];
    anyView = true;
  }
  if (!mutates.empty())
    op.setMutatesAttr(builder.getDenseI64ArrayAttr(mutates));
  if (anyView)
    op.setViewsAttr(builder.getDenseI64ArrayAttr(views));
  if (node->kind().is_aten() && schema && node->isNondeterministic())
    op.setNondeterministic(true);
  if (node->hasSideEffects() || node->kind() == c10::prim::RaiseException ||
      node->kind() == c10::prim::Print)
    op.setSideEffects(true);
}

void GraphImporter::importOperator(Node *node) {
  if (!node->maybeSchema() && !isKnownConstruct(node))
    throw ImportError("operator '" + std::string(node->kind().toQualString()) +
                          "' has no schema",
                      node);
  if (!node->blocks().empty())
    throw ImportError("'" + std::string(node->kind().toQualString()) +
                          "' with nested blocks is not supported",
                      node);
  SmallVector<Value> operands;
  SmallVector<Attribute> args;
  std::vector<int64_t> operandOfInput;
  for (const torch::jit::Value *input : node->inputs()) {
    if (Attribute constant = constants.foldedArgument(input)) {
      args.push_back(constant);
      operandOfInput.push_back(-1);
      continue;
    }
    operandOfInput.push_back(operands.size());
    args.push_back(OperandRefAttr::get(context, operands.size()));
    operands.push_back(lookup(input, node));
  }
  TorchOp op = createTorchOp(node, operands, args);
  setFlags(node, operandOfInput, op);
  SmallVector<int64_t> channelsLast;
  for (size_t i = 0; i < node->inputs().size(); ++i) {
    auto facts = graph.tensorFacts.find(node->input(i));
    if (operandOfInput[i] >= 0 && facts != graph.tensorFacts.end() &&
        facts->second.channelsLast &&
        isa<RankedTensorType>(operands[operandOfInput[i]].getType()) &&
        !llvm::is_contained(channelsLast, operandOfInput[i]))
      channelsLast.push_back(operandOfInput[i]);
  }
  if (!channelsLast.empty())
    op.setChannelsLastAttr(builder.getDenseI64ArrayAttr(channelsLast));
}

void GraphImporter::importKept(Node *node, const KeptControlFlow &kept) {
  SmallVector<Value> operands;
  SmallVector<Attribute> args;
  for (const torch::jit::Value *input : kept.inputs) {
    args.push_back(OperandRefAttr::get(context, operands.size()));
    operands.push_back(lookup(input, node));
  }
  TorchOp op = createTorchOp(node, operands, args);
  op.setScriptAttr(builder.getStringAttr(kept.script));
  if (!kept.written.empty())
    op.setMutatesAttr(builder.getDenseI64ArrayAttr(kept.written));
  op.setNondeterministic(kept.nondeterministic);
  op.setSideEffects(kept.sideEffects);
}

TorchOp GraphImporter::createTorchOp(Node *node, ValueRange operands,
                                     ArrayRef<Attribute> args) {
  SmallVector<Type> resultTypes;
  for (const torch::jit::Value *output : node->outputs())
    resultTypes.push_back(typeOf(output));
  auto op = builder.create<TorchOp>(locationOf(node, context), resultTypes,
                                    node->kind().toQualString(), operands,
                                    builder.getArrayAttr(args));
  for (size_t i = 0; i < node->outputs().size(); ++i)
    values[node->output(i)] = op.getResult(i);
  return op;
}

void GraphImporter::importNode(Node *node) {
  switch (node->kind()) {
  case c10::prim::Constant:
    return; // folded into users, or materialized on demand
  case c10::prim::GetAttr:
    return importGetAttr(node);
  case c10::prim::SetAttr: {
    StateRef ref = state.resolve(node);
    Value value = lookup(node->input(1), node);
    builder.create<SetAttrOp>(locationOf(node, context),
                              builder.getStringAttr(ref.path), value);
    return;
  }
  case c10::prim::If:
  case c10::prim::Loop:
    if (auto kept = graph.kept.find(node); kept != graph.kept.end())
      return importKept(node, kept->second);
    throw ImportError("'" + std::string(node->kind().toQualString()) +
                          "' is left after specialization",
                      node);
  default:
    if (constants.isFoldedAway(node))
      return;
    return importOperator(node);
  }
}

func::FuncOp GraphImporter::run(const std::string &name, ModuleOp parent) {
  builder.setInsertionPointToEnd(parent.getBody());
  SmallVector<Type> argumentTypes;
  for (const torch::jit::Value *input : graph.graph->inputs().slice(1))
    argumentTypes.push_back(typeOf(input));
  auto func =
      builder.create<func::FuncOp>(UnknownLoc::get(context), name,
                                   builder.getFunctionType(argumentTypes, {}));
  Block *body = func.addEntryBlock();
  auto inputs = graph.graph->inputs().slice(1);
  for (size_t i = 0; i < inputs.size(); ++i)
    values[inputs[i]] = body->getArgument(i);
  builder.setInsertionPointToStart(body);
  stateInsertPoint = builder.saveInsertionPoint();

  for (Node *node : graph.graph->nodes())
    importNode(node);

  SmallVector<Value> results;
  for (const torch::jit::Value *output : graph.graph->outputs())
    results.push_back(lookup(output, graph.graph->return_node()));
  builder.create<func::ReturnOp>(UnknownLoc::get(context), results);
  func.setFunctionType(
      builder.getFunctionType(argumentTypes, ValueRange(results).getTypes()));
  return func;
}

func::FuncOp mlir::memopt::detail::importGraph(
    const torch::jit::Module &torchModule, const SpecializedGraph &graph,
    const std::string &name, ModuleOp module) {
  GraphImporter importer(torchModule, graph, module);
  func::FuncOp func = importer.run(name, module);
  MLIRContext *context = module.getContext();
  // Control flow was folded on these attribute values: the function is
  // valid only while they hold (e.g. `bn1.training = true`).
  if (!graph.assumptions.empty()) {
    SmallVector<NamedAttribute> assumed;
    for (const auto &[path, value] : graph.assumptions) {
      // The specializer records only values isGuardableConstant admits.
      Attribute attr = importConstant(value, context);
      assert(attr && "an assumption the exported forward cannot check");
      assumed.emplace_back(StringAttr::get(context, path), attr);
    }
    func->setAttr(kAssumesAttrName, DictionaryAttr::get(context, assumed));
  }
  // Inputs the specs left out were bound to these values.
  for (const auto &[position, value] : graph.boundDefaults)
    func.setArgAttr(position, kBoundDefaultAttrName,
                    importConstant(value, context));
  // ... and on these tensor sizes: valid only for the given input shapes.
  if (!graph.shapeAssumptions.empty()) {
    SmallVector<Attribute> decisions;
    for (const std::string &decision : graph.shapeAssumptions)
      decisions.push_back(StringAttr::get(context, decision));
    func->setAttr(kShapeAssumesAttrName, ArrayAttr::get(context, decisions));
  }
  return func;
}
