//===- GraphBuilder.cpp - memopt ops to torch::jit::Graph nodes -----------===//
//
// One node per memopt.op, in IR order, created by its qualified kind. The
// IR keeps every argument in schema order, so constants are re-materialized
// as prim::Constant inputs; when the op records its overload, the schema's
// argument types decide the constants' types (int vs. float, empty lists,
// devices) and the node is checked to match that overload.
//
//===----------------------------------------------------------------------===//
#include "ExportInternal.h"

#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Runtime/RegionIR.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/ir/irparser.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <sstream>

using namespace mlir;
using namespace mlir::memopt;
using torch::jit::Graph;
using torch::jit::Node;

/// Kinds the interpreter implements itself: no registered operator.
static bool isStructuralKind(StringRef name) {
  static const llvm::StringSet<> kinds = {
      "prim::ListConstruct", "prim::ListUnpack",    "prim::TupleConstruct",
      "prim::TupleUnpack",   "prim::TupleIndex",    "prim::DictConstruct",
      "prim::Uninitialized", "prim::unchecked_cast"};
  return kinds.contains(name);
}

static std::string typeList(at::ArrayRef<torch::jit::Value *> values) {
  std::string text;
  for (torch::jit::Value *v : values)
    text += (text.empty() ? "" : ", ") + v->type()->repr_str();
  return text;
}

namespace {
class GraphEmitter {
public:
  GraphEmitter(Graph &graph, torch::jit::Value *self,
               exporter::ValueMap &values,
               const exporter::BakedAttributes &baked)
      : graph(graph), self(self), values(values), baked(baked) {}

  LogicalResult emit(Operation *op);
  /// Raises at run time unless attribute `path` still has value `expected`.
  LogicalResult emitGuard(Operation *anchor, StringRef path,
                          Attribute expected,
                          const c10::IValue *known = nullptr);
  /// An attribute value assumed by `anchor` (which errors are reported on).
  struct Assumption {
    Operation *anchor;
    StringRef path;
    Attribute expected;
    /// The value itself, when it was read from the model, not the IR.
    const c10::IValue *known = nullptr;
  };
  /// emitGuard for each assumption, raising for the first that fails.
  LogicalResult emitGuards(ArrayRef<Assumption> assumptions);
  /// Raises at run time unless input `arg`, left out of the input specs,
  /// has the value it was bound to (kBoundDefaultAttrName).
  LogicalResult emitBoundDefaultGuard(BlockArgument arg, Attribute expected);

private:
  torch::jit::Value *lookup(mlir::Value value) { return values.lookup(value); }
  /// The module owning the last segment of `path`, via cached GetAttrs.
  torch::jit::Value *ownerOf(StringRef path, std::string &field);
  LogicalResult emitStateRead(Operation *op, StringRef path);
  LogicalResult emitConstant(TorchOp op);
  LogicalResult emitTorchOp(TorchOp op);
  /// Inlines the graph of control flow the importer kept whole.
  LogicalResult emitKeptControlFlow(TorchOp op);
  LogicalResult mapResults(Operation *op, Node *node);
  /// The check of one assumption: true when it fails, and its message.
  FailureOr<std::pair<torch::jit::Value *, std::string>>
  emitAssumptionCheck(Operation *anchor, StringRef path, Attribute expected,
                      const c10::IValue *known = nullptr);
  /// Whether `actual` differs from `expected` (or `known`) at run time, and
  /// the value compared with; `what` names it in errors.
  FailureOr<std::pair<torch::jit::Value *, c10::IValue>>
  emitDiffers(Operation *anchor, torch::jit::Value *actual, StringRef what,
              Attribute expected, const c10::IValue *known);
  /// `if condition: raise message()`, the message computed in the branch.
  void emitRaiseIf(torch::jit::Value *condition,
                   llvm::function_ref<torch::jit::Value *()> message);

  Graph &graph;
  torch::jit::Value *self;
  exporter::ValueMap &values;
  const exporter::BakedAttributes &baked;
  llvm::StringMap<torch::jit::Value *> modules;
};
} // namespace

torch::jit::Value *GraphEmitter::ownerOf(StringRef path, std::string &field) {
  auto [prefix, last] = path.rsplit('.');
  if (last.empty()) { // no dot
    field = prefix.str();
    return self;
  }
  field = last.str();
  torch::jit::Value *&cached = modules[prefix];
  if (!cached) {
    std::string parentField;
    torch::jit::Value *parent = ownerOf(prefix, parentField);
    cached = graph.insertGetAttr(parent, parentField);
  }
  return cached;
}

/// An optional attribute that was None when the model was imported (a
/// layer's absent bias): the importer typed it `!memopt.script<"T?">`.
static bool isAbsentOptional(Operation *op) {
  auto script = isa<GetAttrOp>(op)
                    ? dyn_cast<ScriptType>(op->getResult(0).getType())
                    : nullptr;
  return script && script.getName().ends_with("?");
}

LogicalResult GraphEmitter::emitStateRead(Operation *op, StringRef path) {
  // Inside a body (or a body nested in it) a baked attribute is a constant.
  if (isa<GetAttrOp>(op) && !self)
    if (auto it = baked.constants.find(path); it != baked.constants.end()) {
      values[op->getResult(0)] = exporter::insertConstantValue(graph, it->second);
      return success();
    }
  // A region nested in another's body reads an absent optional as None;
  // forward checked that it still is (emit of the outermost region). An
  // attribute of type None (a buffer registered as None: InstanceNorm's
  // running statistics without tracking) can hold nothing else: TorchScript
  // refuses to assign it a value of another type.
  if (!self && (isAbsentOptional(op) ||
                (isa<GetAttrOp>(op) &&
                 isa<ScriptNoneType>(op->getResult(0).getType())))) {
    values[op->getResult(0)] = graph.insertConstant(c10::IValue());
    return success();
  }
  if (!self)
    return op->emitError("cannot read module state '")
           << path << "' here: only forward's own body has `self`";
  std::string field;
  torch::jit::Value *owner = ownerOf(path, field);
  values[op->getResult(0)] = graph.insertGetAttr(owner, field);
  return success();
}

LogicalResult GraphEmitter::mapResults(Operation *op, Node *node) {
  if (node->outputs().size() != op->getNumResults())
    return op->emitError("exported node has ")
           << node->outputs().size() << " outputs for " << op->getNumResults()
           << " results";
  for (auto [result, output] : llvm::zip(op->getResults(), node->outputs()))
    values[result] = output;
  return success();
}

LogicalResult GraphEmitter::emitConstant(TorchOp op) {
  if (op.getNumResults() != 1 || op.getArgs().size() > 1)
    return op.emitError("prim::Constant must have one result and at most one "
                        "argument");
  Type type = op.getResult(0).getType();
  if (isa<mlir::TensorType>(type)) {
    values[op.getResult(0)] = exporter::insertTensorConstant(op, graph);
    return success(values[op.getResult(0)] != nullptr);
  }
  c10::TypePtr expected = exporter::convertType(type);
  if (!expected)
    return op.emitError("constant of type ")
           << type << " has no TorchScript equivalent";
  c10::IValue value;
  if (!op.getArgs().empty()) {
    std::string error;
    auto converted =
        exporter::convertConstant(op.getArgs()[0], expected, error);
    if (!converted)
      return op.emitError("cannot export constant: ") << error;
    value = std::move(*converted);
  } else if (expected->kind() != c10::TypeKind::NoneType) {
    return op.emitError("prim::Constant of type ") << type << " has no value";
  }
  torch::jit::Value *constant = exporter::insertConstantValue(graph, value);
  if (!constant)
    return op.emitError("TorchScript cannot encode constant of type ") << type;
  values[op.getResult(0)] = constant;
  return success();
}

LogicalResult GraphEmitter::emitKeptControlFlow(TorchOp op) {
  auto kept = std::make_shared<Graph>();
  try {
    torch::jit::parseIR(op.getScript()->str(), kept.get());
  } catch (const std::exception &e) {
    return op.emitError("cannot export '")
           << op.getName() << "': its script does not parse: "
           << ::memopt::runtime::describeRegionIRParseError(e.what());
  }
  if (kept->inputs().size() != op->getNumOperands() ||
      kept->outputs().size() != op->getNumResults())
    return op.emitError("cannot export '")
           << op.getName() << "': its script takes " << kept->inputs().size()
           << " inputs and returns " << kept->outputs().size()
           << " values, the op has " << op->getNumOperands() << " operands and "
           << op->getNumResults() << " results";
  std::vector<torch::jit::Value *> inputs;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    torch::jit::Value *input = lookup(operand);
    if (!input)
      return op.emitError("operand ") << index << " was not exported";
    inputs.push_back(input);
  }
  std::vector<torch::jit::Value *> outputs =
      torch::jit::insertGraph(graph, *kept, inputs);
  for (auto [result, output] : llvm::zip(op->getResults(), outputs))
    values[result] = output;
  return success();
}

LogicalResult GraphEmitter::emitTorchOp(TorchOp op) {
  StringRef name = op.getName();
  if (name == "prim::Constant")
    return emitConstant(op);
  if (op.getScript())
    return emitKeptControlFlow(op);
  if (name.starts_with("prim::Call"))
    return op.emitError("cannot export '")
           << name << "': calls must be inlined";

  c10::Symbol kind = c10::Symbol::fromQualString(name.str());
  const auto &operators = torch::jit::getAllOperatorsFor(kind);
  if (operators.empty() && !isStructuralKind(name))
    return op.emitError("cannot export '")
           << name << "': no TorchScript operator has this name";
  const c10::FunctionSchema *schema = nullptr;
  if (auto overload = op.getOverload(); overload && !operators.empty()) {
    for (const auto &candidate : operators)
      if (candidate->schema().overload_name() == *overload)
        schema = &candidate->schema();
    if (!schema)
      return op.emitError("cannot export '")
             << name << "': it has no overload '" << *overload << "'";
  }

  std::vector<torch::jit::Value *> inputs;
  for (auto [position, arg] : llvm::enumerate(op.getArgs())) {
    if (auto ref = dyn_cast<OperandRefAttr>(arg)) {
      torch::jit::Value *input = lookup(op->getOperand(ref.getIndex()));
      if (!input)
        return op.emitError("operand ")
               << ref.getIndex() << " was not exported";
      inputs.push_back(input);
      continue;
    }
    c10::TypePtr expected;
    if (schema && position < schema->arguments().size())
      expected = schema->arguments()[position].type();
    // A constant cast to its own type (the importer's form of a constant
    // tuple argument, `dims=([2], [0])`): the result's type says tuple,
    // where an array alone would read as a list.
    if (name == "prim::unchecked_cast" && op.getNumResults() == 1)
      expected = exporter::convertType(op.getResult(0).getType());
    std::string error;
    auto value = exporter::convertConstant(arg, expected, error);
    if (!value)
      return op.emitError("argument #")
             << position << " of '" << name << "': " << error;
    torch::jit::Value *constant = exporter::insertConstantValue(graph, *value);
    if (!constant)
      return op.emitError("argument #")
             << position << " of '" << name << "': TorchScript cannot encode "
             << arg;
    inputs.push_back(constant);
  }

  // Before saved_input: a linear layer's weight-row backward packs its
  // input itself.
  if (op.getBackwardAttr())
    return exporter::emitBackwardKernelOp(op, schema, std::move(inputs), graph,
                                          values);
  if (op.getSavedInputAttr())
    return exporter::emitPackedInputOp(op, schema, std::move(inputs), graph,
                                       values);
  if (op.getSavedFormAttr())
    return exporter::emitSavedFormOp(op, schema, std::move(inputs), graph,
                                     values);

  Node *node;
  if (name == "prim::TupleConstruct") {
    node = graph.createTuple(inputs);
  } else if (name == "prim::ListConstruct") {
    auto list =
        op.getNumResults() == 1
            ? dyn_cast<mlir::memopt::ListType>(op.getResult(0).getType())
            : nullptr;
    c10::TypePtr element =
        list ? exporter::convertType(list.getElementType()) : nullptr;
    if (!element)
      return op.emitError("prim::ListConstruct must return one !memopt.list of "
                          "a TorchScript element type");
    node = graph.createList(element, inputs);
  } else {
    node = graph.create(kind, inputs, op.getNumResults());
    for (auto [result, output] : llvm::zip(op.getResults(), node->outputs())) {
      c10::TypePtr type = exporter::convertType(result.getType());
      if (!type) {
        node->destroy();
        return op.emitError("result type ")
               << result.getType() << " of '" << name
               << "' has no TorchScript equivalent";
      }
      output->setType(type);
    }
  }
  graph.insertNode(node);

  bool matches = schema ? node->matches(*schema)
                        : operators.empty() || node->maybeSchema();
  if (!matches)
    return op.emitError("cannot export '")
           << name << (schema ? "." + schema->overload_name() : "")
           << "': no schema accepts arguments (" << typeList(node->inputs())
           << ")";
  return mapResults(op, node);
}

FailureOr<std::pair<torch::jit::Value *, c10::IValue>>
GraphEmitter::emitDiffers(Operation *anchor, torch::jit::Value *actual,
                          StringRef what, Attribute expected,
                          const c10::IValue *known) {
  std::string error;
  auto value = known ? std::optional<c10::IValue>(*known)
                     : exporter::convertConstant(expected, actual->type(), error);
  if (!value)
    return anchor->emitError(what) << ": " << error;
  torch::jit::Value *differs;
  if (value->isNone()) {
    differs = graph.insert(c10::Symbol::fromQualString("aten::__isnot__"),
                           {actual, graph.insertConstant(*value)});
  } else if (value->isTuple()) {
    // TorchScript has no `!=` of tuples: compare element by element.
    const auto &elements = value->toTupleRef().elements();
    Node *unpack = graph.insertNode(graph.createTupleUnpack(actual));
    differs = graph.insertConstant(false);
    for (auto [element, read] : llvm::zip(elements, unpack->outputs())) {
      torch::jit::Value *constant =
          exporter::insertConstantValue(graph, element);
      if (!constant)
        return anchor->emitError(what)
               << ": TorchScript cannot encode an element";
      differs = graph.insert(
          c10::Symbol::fromQualString("aten::__or__"),
          {differs, graph.insert(c10::Symbol::fromQualString("aten::ne"),
                                 {read, constant})});
    }
  } else if (value->isGenericDict()) {
    // TorchScript has no `!=` of dicts: compare keys() and values(), in
    // order (forward may iterate the dict).
    c10::impl::GenericDict dict = value->toGenericDict();
    c10::impl::GenericList keys(dict.keyType()), items(dict.valueType());
    for (const auto &entry : dict) {
      keys.push_back(entry.key());
      items.push_back(entry.value());
    }
    differs = graph.insertConstant(false);
    for (auto [method, expectedList] :
         {std::pair("aten::keys", &keys), std::pair("aten::values", &items)}) {
      torch::jit::Value *constant =
          exporter::insertConstantValue(graph, c10::IValue(*expectedList));
      if (!constant)
        return anchor->emitError(what)
               << ": TorchScript cannot encode " << expected;
      torch::jit::Value *read =
          graph.insert(c10::Symbol::fromQualString(method), {actual});
      differs = graph.insert(
          c10::Symbol::fromQualString("aten::__or__"),
          {differs, graph.insert(c10::Symbol::fromQualString("aten::ne"),
                                 {read, constant})});
    }
  } else {
    torch::jit::Value *constant = exporter::insertConstantValue(graph, *value);
    if (!constant)
      return anchor->emitError(what)
             << ": TorchScript cannot encode " << expected;
    differs = graph.insert(c10::Symbol::fromQualString("aten::ne"),
                           {actual, constant});
  }
  return std::make_pair(differs, *value);
}

FailureOr<std::pair<torch::jit::Value *, std::string>>
GraphEmitter::emitAssumptionCheck(Operation *anchor, StringRef path,
                                  Attribute expected,
                                  const c10::IValue *known) {
  std::string field;
  torch::jit::Value *actual = graph.insertGetAttr(ownerOf(path, field), field);
  auto check = emitDiffers(
      anchor, actual, "memopt.assumes '" + path.str() + "'", expected, known);
  if (failed(check))
    return failure();
  std::ostringstream os; // the value as Python prints it: True, 0.1, None
  os << "memopt: this module was compiled for " << path.str()
     << " == " << check->second
     << " (memopt.assumes); compile it again for other values, "
     << "e.g. for eval() or train() mode";
  return std::make_pair(check->first, os.str());
}

LogicalResult GraphEmitter::emitBoundDefaultGuard(BlockArgument arg,
                                                  Attribute expected) {
  torch::jit::Value *actual = lookup(arg);
  std::string name = actual->debugName();
  auto check =
      emitDiffers(arg.getOwner()->getParentOp(), actual,
                  "input '" + name + "' (" + kBoundDefaultAttrName.str() + ")",
                  expected, nullptr);
  if (failed(check))
    return failure();
  // An Optional tensor can be given a spec; other inputs cannot.
  c10::TypePtr type = actual->type();
  if (auto optional = type->cast<c10::OptionalType>())
    type = optional->getElementType();
  std::ostringstream os;
  os << "memopt: this module was compiled for " << name
     << " == " << check->second << " (left out of the input specs); "
     << (type->kind() == c10::TypeKind::TensorType
             ? "compile it again with an input spec for " + name +
                   " to pass a tensor"
             : "inputs other than tensors are compiled for their default "
               "only");
  emitRaiseIf(check->first, [&] { return graph.insertConstant(os.str()); });
  return success();
}

void GraphEmitter::emitRaiseIf(
    torch::jit::Value *condition,
    llvm::function_ref<torch::jit::Value *()> message) {
  Node *check = graph.insertNode(
      graph.create(c10::Symbol::fromQualString("prim::If"), {condition}, 0));
  {
    torch::jit::WithInsertPoint raise(check->addBlock());
    graph.insert(c10::Symbol::fromQualString("prim::RaiseException"),
                 {message()});
  }
  check->addBlock();
}

LogicalResult GraphEmitter::emitGuard(Operation *anchor, StringRef path,
                                      Attribute expected,
                                      const c10::IValue *known) {
  auto check = emitAssumptionCheck(anchor, path, expected, known);
  if (failed(check))
    return failure();
  emitRaiseIf(check->first,
              [&] { return graph.insertConstant(check->second); });
  return success();
}

LogicalResult GraphEmitter::emitGuards(ArrayRef<Assumption> assumptions) {
  if (assumptions.empty())
    return success();
  if (assumptions.size() == 1)
    return emitGuard(assumptions[0].anchor, assumptions[0].path,
                     assumptions[0].expected, assumptions[0].known);
  // TorchScript's compiler spends time proportional to the whole source
  // file on every `if` (torch.jit.load of a model with hundreds of
  // assumptions took most of the export), so several checks share one:
  //   if torch.any([fails_0, ...]): raise [message_0, ...][index(True)]
  std::vector<torch::jit::Value *> fails;
  std::vector<std::string> messages;
  for (const Assumption &assumption : assumptions) {
    auto check = emitAssumptionCheck(assumption.anchor, assumption.path,
                                     assumption.expected, assumption.known);
    if (failed(check))
      return failure();
    fails.push_back(check->first);
    messages.push_back(std::move(check->second));
  }
  torch::jit::Value *failList =
      graph.insertNode(graph.createList(c10::BoolType::get(), fails))->output();
  torch::jit::Value *anyFails =
      graph.insert(c10::Symbol::fromQualString("aten::any"), {failList});
  emitRaiseIf(anyFails, [&] {
    std::vector<torch::jit::Value *> texts;
    for (const std::string &message : messages)
      texts.push_back(graph.insertConstant(message));
    torch::jit::Value *textList =
        graph.insertNode(graph.createList(c10::StringType::get(), texts))
            ->output();
    torch::jit::Value *first =
        graph.insert(c10::Symbol::fromQualString("aten::index"),
                     {failList, graph.insertConstant(true)});
    return graph.insert(c10::Symbol::fromQualString("aten::__getitem__"),
                        {textList, first});
  });
  return success();
}

LogicalResult GraphEmitter::emit(Operation *op) {
  // State reads hoisted out of a checkpoint body are already materialized.
  if (op->getNumResults() == 1 && values.count(op->getResult(0)))
    return success();
  if (auto param = dyn_cast<ParamOp>(op))
    return emitStateRead(op, param.getPath());
  if (auto buffer = dyn_cast<BufferOp>(op))
    return emitStateRead(op, buffer.getPath());
  if (auto get = dyn_cast<GetAttrOp>(op))
    return emitStateRead(op, get.getPath());
  if (auto set = dyn_cast<SetAttrOp>(op)) {
    if (!self)
      return op->emitError("cannot assign module state here");
    std::string field;
    torch::jit::Value *owner = ownerOf(set.getPath(), field);
    graph.insertNode(graph.createSetAttr(owner, field, lookup(set.getValue())));
    return success();
  }
  if (auto torchOp = dyn_cast<TorchOp>(op))
    return emitTorchOp(torchOp);
  if (auto checkpoint = dyn_cast<CheckpointOp>(op)) {
    // A body has no `self`: parameters, buffers and attributes it reads are
    // read here and enter the region as extra inputs.
    SmallVector<Assumption> absent;
    // Lists of tensors that regions nested in this one read: read here too
    // (emitCheckpoint passes them down, element by element).
    if (self)
      checkpoint.getBodyBlock().walk([&](GetAttrOp get) {
        if (get->getBlock() != &checkpoint.getBodyBlock() &&
            baked.tensorListLengths.count(get.getPath()))
          (void)emit(get);
      });
    for (Operation &nested : checkpoint.getBodyBlock()) {
      if (auto read = dyn_cast<GetAttrOp>(nested);
          read && baked.constants.count(read.getPath()))
        continue; // a constant in the body, checked by forward
      if (isa<ParamOp, BufferOp, GetAttrOp>(nested) && failed(emit(&nested)))
        return failure();
      // An optional attribute (a layer's absent bias) enters the body as the
      // constant None; the forward checks that it still is None.
      auto get = dyn_cast<GetAttrOp>(nested);
      torch::jit::Value *read = get ? lookup(get.getResult()) : nullptr;
      if (read && read->type()->kind() == c10::TypeKind::OptionalType &&
          !isa<mlir::TensorType>(get.getType()))
        absent.push_back({get, get.getPath(), NoneAttr::get(get.getContext())});
    }
    // Regions nested deeper read their absent optionals as None too: check
    // them here, where `self` is at hand.
    if (self)
      checkpoint.getBodyBlock().walk([&](GetAttrOp get) {
        if (get->getBlock() == &checkpoint.getBodyBlock() ||
            !isAbsentOptional(get))
          return;
        std::string field;
        torch::jit::Value *owner = ownerOf(get.getPath(), field);
        torch::jit::Value *read = graph.insertGetAttr(owner, field);
        if (read->type()->kind() == c10::TypeKind::OptionalType)
          absent.push_back(
              {get, get.getPath(), NoneAttr::get(get.getContext())});
      });
    if (failed(emitGuards(absent)))
      return failure();
    return exporter::emitCheckpoint(checkpoint, graph, values, baked);
  }
  return op->emitError("cannot export '")
         << op->getName() << "' to TorchScript";
}

LogicalResult exporter::emitBlock(Block &block, Graph &graph,
                                  torch::jit::Value *self, ValueMap &values,
                                  const BakedAttributes &baked) {
  GraphEmitter emitter(graph, self, values, baked);
  // The importer folds control flow on module attributes (`bn1.training`)
  // and records their values, and region bodies use baked attributes as
  // constants: the exported forward checks them first.
  if (auto func = dyn_cast<func::FuncOp>(block.getParentOp())) {
    SmallVector<GraphEmitter::Assumption> assumptions;
    if (auto assumes = func->getAttrOfType<DictionaryAttr>(kAssumesAttrName))
      for (NamedAttribute assumption : assumes)
        assumptions.push_back(
            {func, assumption.getName().getValue(), assumption.getValue()});
    for (const auto &entry : baked.constants)
      assumptions.push_back({func, entry.getKey(), Attribute(),
                             &entry.getValue()});
    for (BlockArgument arg : func.getArguments())
      if (Attribute bound =
              func.getArgAttr(arg.getArgNumber(), kBoundDefaultAttrName))
        if (failed(emitter.emitBoundDefaultGuard(arg, bound)))
          return failure();
    if (failed(emitter.emitGuards(assumptions)))
      return failure();
  }
  for (Operation &op : block.without_terminator())
    if (failed(emitter.emit(&op)))
      return failure();
  return success();
}

LogicalResult exporter::emitOp(Operation *op, Graph &graph,
                               torch::jit::Value *self, ValueMap &values,
                               const BakedAttributes &baked) {
  return GraphEmitter(graph, self, values, baked).emit(op);
}

/// The attributes region bodies in `func` read whose type a region cannot
/// take as an input, with their values in `source`.
static exporter::BakedAttributes
collectBakedAttributes(func::FuncOp func, const torch::jit::Module &source) {
  exporter::BakedAttributes baked;
  auto isScalar = [](const c10::IValue &v) {
    return v.isInt() || v.isDouble() || v.isBool() || v.isString();
  };
  // A NaN would fail forward's check (NaN != NaN).
  auto isNaN = [](const c10::IValue &v) {
    return v.isDouble() && v.toDouble() != v.toDouble();
  };
  func.walk([&](GetAttrOp get) {
    if (!get->getParentOfType<CheckpointOp>())
      return;
    c10::TypePtr type = exporter::convertType(get.getType());
    if (!type || (type->kind() != c10::TypeKind::ListType &&
                  type->kind() != c10::TypeKind::StringType &&
                  type->kind() != c10::TypeKind::TupleType))
      return;
    std::optional<c10::IValue> value =
        exporter::readAttribute(source, get.getPath());
    if (!value)
      return;
    if (value->isTensorList()) {
      baked.tensorListLengths.try_emplace(get.getPath(),
                                          value->toTensorList().size());
      return;
    }
    c10::ArrayRef<c10::IValue> elements;
    if (value->isIntList() || value->isDoubleList() || value->isBoolList())
      elements = value->toListRef();
    else if (value->isTuple())
      elements = value->toTupleRef().elements();
    else if (!value->isString())
      return;
    if (llvm::all_of(elements, isScalar) && !llvm::any_of(elements, isNaN))
      baked.constants.try_emplace(get.getPath(), *value);
  });
  return baked;
}

std::shared_ptr<Graph>
exporter::buildForwardGraph(func::FuncOp func,
                            const c10::ClassTypePtr &selfType,
                            const torch::jit::Module &source) {
  if (!func.getBody().hasOneBlock()) {
    func.emitError("cannot export a forward with ")
        << func.getBody().getBlocks().size() << " blocks";
    return nullptr;
  }
  auto graph = std::make_shared<Graph>();
  torch::jit::Value *self = graph->addInput("self")->setType(selfType);

  // Users call forward by the original argument names.
  std::vector<std::string> names;
  if (auto method = source.find_method("forward")) {
    const auto &arguments = method->function().getSchema().arguments();
    if (arguments.size() == func.getNumArguments() + 1)
      for (size_t i = 1; i < arguments.size(); ++i)
        names.push_back(arguments[i].name());
  }
  BakedAttributes baked = collectBakedAttributes(func, source);
  ValueMap values;
  for (BlockArgument arg : func.getArguments()) {
    c10::TypePtr type = convertType(arg.getType());
    if (!type) {
      func.emitError("argument #")
          << arg.getArgNumber() << " of type " << arg.getType()
          << " has no TorchScript equivalent";
      return nullptr;
    }
    std::string name = names.empty() ? "" : names[arg.getArgNumber()];
    values[arg] = graph->addInput(name)->setType(type);
  }

  Block &body = func.getBody().front();
  if (failed(emitBlock(body, *graph, self, values, baked)))
    return nullptr;
  std::vector<torch::jit::Value *> outputs;
  for (mlir::Value result : body.getTerminator()->getOperands()) {
    outputs.push_back(values.lookup(result));
    if (!outputs.back()) {
      body.getTerminator()->emitError("returned value was not exported");
      return nullptr;
    }
  }
  if (outputs.size() == 1)
    graph->registerOutput(outputs.front());
  else if (outputs.empty())
    graph->registerOutput(graph->insertConstant(c10::IValue()));
  else
    graph->registerOutput(
        graph->insertNode(graph->createTuple(outputs))->output());
  graph->lint();
  return graph;
}
