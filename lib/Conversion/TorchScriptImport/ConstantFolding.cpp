//===- ConstantFolding.cpp - TorchScript constants as op arguments --------===//
#include "ConstantFolding.h"

#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;
using namespace mlir::memopt::detail;
using torch::jit::Node;

/// Tensor constants (traced models) travel as their flattened values; the
/// result type gives shape and dtype. Larger ones would bloat the IR.
static constexpr int64_t kMaxTensorConstantElements = 1 << 16;

static bool isMutableContainer(const c10::TypePtr &type) {
  return type->kind() == c10::TypeKind::ListType ||
         type->kind() == c10::TypeKind::DictType;
}

static bool isListOrTuple(const Node *node) {
  return node->kind() == c10::prim::ListConstruct ||
         node->kind() == c10::prim::TupleConstruct;
}

/// A use where the value is read as an argument and never written or kept:
/// the user is an operator and the schema declares no aliasing for it.
static bool foldsAt(const torch::jit::Use &use) {
  const Node *user = use.user;
  if (user->kind() == c10::prim::SetAttr || user->kind() == c10::prim::Return ||
      user->kind() == c10::prim::GetAttr)
    return false;
  if (isListOrTuple(user))
    return true; // nested: decided with the enclosing list
  const c10::FunctionSchema *schema = user->maybeSchema();
  if (!schema)
    return false;
  const auto &arguments = schema->arguments();
  if (use.offset >= arguments.size())
    return false; // vararg position: keep it an operand
  return arguments[use.offset].alias_info() == nullptr;
}

bool ConstantFolder::everyUseFolds(const torch::jit::Value *value) {
  return llvm::all_of(value->uses(), foldsAt);
}

Attribute ConstantFolder::contents(const torch::jit::Value *value) {
  auto cached = cache.find(value);
  if (cached != cache.end())
    return cached->second;
  Attribute result;
  const Node *node = value->node();
  if (node->kind() == c10::prim::Constant) {
    if (auto ivalue = torch::jit::toIValue(value))
      if (!ivalue->isTensor())
        result = importConstant(*ivalue, context);
  } else if (isListOrTuple(node)) {
    SmallVector<Attribute> elements;
    for (const torch::jit::Value *input : node->inputs()) {
      Attribute element = contents(input);
      if (!element ||
          (isMutableContainer(input->type()) && !everyUseFolds(input)))
        break;
      elements.push_back(element);
    }
    if (elements.size() == node->inputs().size())
      result = ArrayAttr::get(context, elements);
  }
  cache[value] = result;
  return result;
}

Attribute ConstantFolder::foldedArgument(const torch::jit::Value *value) {
  Attribute attr = contents(value);
  if (!attr)
    return {};
  // Scalars and tuples are immutable; a list folds only when no user could
  // write it or keep a reference to it.
  if (isMutableContainer(value->type()) && !everyUseFolds(value))
    return {};
  if (isListOrTuple(value->node()) && !everyUseFolds(value))
    return {};
  return attr;
}

bool ConstantFolder::isFoldedAway(const Node *node) {
  return isListOrTuple(node) && node->outputs().size() == 1 &&
         node->output()->hasUses() && foldedArgument(node->output());
}

/// The flattened elements of a tensor constant, as f64 / i64 / bool attrs.
static Attribute tensorElements(const at::Tensor &tensor, Builder &builder) {
  at::Tensor flat = tensor.contiguous().reshape({-1});
  SmallVector<Attribute> elements;
  for (int64_t i = 0; i < flat.numel(); ++i) {
    at::Scalar element = flat[i].item();
    if (element.isBoolean())
      elements.push_back(builder.getBoolAttr(element.toBool()));
    else if (element.isIntegral(/*includeBool=*/false))
      elements.push_back(builder.getI64IntegerAttr(element.toLong()));
    else
      elements.push_back(builder.getF64FloatAttr(element.toDouble()));
  }
  return builder.getArrayAttr(elements);
}

Value ConstantFolder::materialize(const torch::jit::Value *value,
                                  OpBuilder &builder, Type type) {
  const Node *node = value->node();
  if (node->kind() != c10::prim::Constant)
    throw ImportError("value '%" + value->debugName() + "' of '" +
                          node->kind().toQualString() +
                          "' is used but was not imported",
                      node);
  c10::IValue ivalue = *torch::jit::toIValue(value);
  SmallVector<Attribute> args;
  if (ivalue.isTensor()) {
    const at::Tensor &tensor = ivalue.toTensor();
    if (tensor.numel() > kMaxTensorConstantElements)
      throw ImportError("a tensor constant of " +
                            std::to_string(tensor.numel()) +
                            " elements is too large to import",
                        node);
    type = RankedTensorType::get(tensor.sizes().vec(),
                                 importDType(tensor.scalar_type(), context));
    args.push_back(tensorElements(tensor, builder));
  } else if (!ivalue.isNone()) {
    Attribute attr = importConstant(ivalue, context);
    if (!attr)
      throw ImportError("a constant of type " + value->type()->str() +
                            " cannot be imported",
                        node);
    args.push_back(attr);
  }
  auto op = builder.create<TorchOp>(locationOf(node, context), TypeRange{type},
                                    "prim::Constant", ValueRange{},
                                    builder.getArrayAttr(args));
  return op.getResult(0);
}
