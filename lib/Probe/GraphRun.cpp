//===- GraphRun.cpp - what a TorchScript graph keeps for backward ---------===//
//
// Operands are made as the probe makes a convolution's: filled with a small
// constant (activations stay away from saturation), those that will need a
// gradient as non-leaves (`leaf * 1`), as a layer's output is in training.
// What the forward keeps is what the counting allocator still holds after
// it beyond the results, plus the operands that gained an owner the results
// do not explain (autograd saved them, or views of them).
//
//===----------------------------------------------------------------------===//
#include "GraphRun.h"
#include "ProbeSupport.h"

#include "memopt/Conversion/ScalarTypes.h"
#include "memopt/Conversion/SingleOpGraph.h"
#include "memopt/Conversion/TorchScriptSource.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptTypes.h"

#include "mlir/IR/BuiltinTypes.h"

#include <c10/core/GradMode.h>

#include <algorithm>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/runtime/interpreter.h>

using namespace mlir;
using namespace mlir::memopt;

void GraphRunMarks::takeMost(const GraphRunMarks &other) {
  bytes = std::max(bytes, other.bytes);
  operands.insert(other.operands.begin(), other.operands.end());
  elements.insert(other.elements.begin(), other.elements.end());
  results.insert(other.results.begin(), other.results.end());
  forward = std::max(forward, other.forward);
  backward = std::max(backward, other.backward);
  backwardHeld = std::max(backwardHeld, other.backwardHeld);
  if (denseOrder != other.denseOrder)
    denseOrder.clear();
}

/// The dims that permute `tensor` into a contiguous one: none when it is
/// contiguous, else size-1 dims first, then by decreasing stride; empty
/// when no order does.
static SmallVector<int64_t, 4> getDenseOrder(const at::Tensor &tensor) {
  SmallVector<int64_t, 4> order =
      llvm::to_vector<4>(llvm::seq<int64_t>(0, tensor.dim()));
  if (tensor.is_contiguous())
    return order;
  auto key = [&](int64_t dim) {
    return std::make_pair(tensor.size(dim) != 1, -tensor.stride(dim));
  };
  llvm::stable_sort(order,
                    [&](int64_t a, int64_t b) { return key(a) < key(b); });
  std::vector<int64_t> dims(order.begin(), order.end());
  if (!tensor.permute(dims).is_contiguous())
    return {};
  return order;
}

/// The model whose integer attributes getStaticInt reads (ModuleIntegersScope).
static const TorchScriptSource *integerSource = nullptr;

ModuleIntegersScope::ModuleIntegersScope(const TorchScriptSource *source)
    : saved(integerSource) {
  integerSource = source;
}

ModuleIntegersScope::~ModuleIntegersScope() { integerSource = saved; }

/// Attribute `path` (dotted, through submodules) of `root`.
static std::optional<c10::IValue> readAttribute(const torch::jit::Module &root,
                                                StringRef path) {
  SmallVector<StringRef> parts;
  path.split(parts, '.');
  torch::jit::Module current = root;
  for (auto [index, part] : llvm::enumerate(parts)) {
    std::string name = part.str();
    if (!current.hasattr(name))
      return std::nullopt;
    c10::IValue value = current.attr(name);
    if (index + 1 == parts.size())
      return value;
    if (!value.isModule())
      return std::nullopt;
    current = value.toModule();
  }
  return std::nullopt;
}

static std::optional<int64_t> staticIntOf(Value value, unsigned depth);

/// The integers of a tuple or list attribute value, if all are integers.
static std::optional<SmallVector<int64_t>>
getIntegerElements(const c10::IValue &value) {
  SmallVector<int64_t> ints;
  if (value.isIntList()) {
    for (int64_t element : value.toIntVector())
      ints.push_back(element);
    return ints;
  }
  if (!value.isTuple())
    return std::nullopt;
  for (const c10::IValue &element : value.toTupleRef().elements()) {
    if (!element.isInt())
      return std::nullopt;
    ints.push_back(element.toInt());
  }
  return ints;
}

/// Whether no op writes `list` in place (`s[0] = 1`, `append`): a list the
/// IR reads element by element has the values it was made with. A module
/// attribute's list is one object whichever read gives it, so every read of
/// that attribute must be unwritten. Tuples cannot be written.
static bool isNeverWritten(Value list) {
  if (!isa<ListType>(list.getType()))
    return true;
  auto read = list.getDefiningOp<GetAttrOp>();
  if (!read)
    return TorchOp::hasNoWritingUse(list);
  Operation *root = read;
  while (root->getParentOp())
    root = root->getParentOp();
  bool allUnwritten = true;
  root->walk([&](GetAttrOp other) {
    if (other.getPath() == read.getPath() &&
        !TorchOp::hasNoWritingUse(other.getResult()))
      allUnwritten = false;
  });
  return allUnwritten;
}

/// Argument `position` of `op` as a static integer: a constant, or an
/// operand whose value staticIntOf knows.
static std::optional<int64_t> staticIntArg(TorchOp op, unsigned position,
                                           unsigned depth) {
  ArrayRef<Attribute> args = op.getArgs().getValue();
  if (position >= args.size())
    return std::nullopt;
  if (auto constant = dyn_cast<IntegerAttr>(args[position]))
    return constant.getInt();
  if (Value operand = op.getOperandArg(position))
    return staticIntOf(operand, depth + 1);
  return std::nullopt;
}

/// An integer list or tuple whose elements are known here: a module
/// attribute (a convolution's `stride` tuple, as torchvision's ops read
/// theirs), a static tensor's `size()`, a constant, a read-only list of
/// static integers, and slices of these; lists only where nothing writes
/// them.
static std::optional<SmallVector<int64_t>> staticIntsOf(Value sequence,
                                                        unsigned depth) {
  if (depth > 16 || !isNeverWritten(sequence))
    return std::nullopt;
  if (auto read = sequence.getDefiningOp<GetAttrOp>()) {
    std::optional<c10::IValue> value =
        integerSource ? readAttribute(integerSource->module, read.getPath())
                      : std::nullopt;
    return value ? getIntegerElements(*value) : std::nullopt;
  }
  auto op = sequence.getDefiningOp<TorchOp>();
  if (!op)
    return std::nullopt;
  StringRef name = op.getName();
  ArrayRef<Attribute> args = op.getArgs().getValue();
  if (name == "prim::unchecked_cast" && op->getNumOperands() == 1)
    return staticIntsOf(op->getOperand(0), depth + 1);
  if (name == "prim::unchecked_cast" && op->getNumOperands() == 0 &&
      args.size() == 1)
    return TorchOp::getIntegers(args[0]);
  if (name == "aten::size" && args.size() == 1) {
    RankedTensorType type = op.getStaticTensorArg(0);
    if (!type)
      return std::nullopt;
    return SmallVector<int64_t>(type.getShape());
  }
  // (A list here is unwritten: checked above.)
  if (name == "prim::ListConstruct" || name == "prim::TupleConstruct") {
    SmallVector<int64_t> ints;
    for (unsigned i = 0; i < args.size(); ++i) {
      std::optional<int64_t> element = staticIntArg(op, i, depth);
      if (!element)
        return std::nullopt;
      ints.push_back(*element);
    }
    return ints;
  }
  // list[start:end:step] (aten::slice.t), Python's bounds.
  if (name == "aten::slice" && op.getOverload().value_or("") == "t" &&
      args.size() == 4 && op.getOperandArg(0)) {
    std::optional<SmallVector<int64_t>> list =
        staticIntsOf(op.getOperandArg(0), depth + 1);
    auto bound = [&](unsigned i, int64_t otherwise) -> std::optional<int64_t> {
      return isa<NoneAttr>(args[i]) ? otherwise : staticIntArg(op, i, depth);
    };
    if (!list)
      return std::nullopt;
    int64_t size = list->size();
    std::optional<int64_t> start = bound(1, 0), end = bound(2, size),
                           step = bound(3, 1);
    if (!start || !end || !step || *step != 1)
      return std::nullopt;
    auto clamp = [&](int64_t i) {
      return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
    };
    SmallVector<int64_t> ints;
    for (int64_t i = clamp(*start); i < clamp(*end); ++i)
      ints.push_back((*list)[i]);
    return ints;
  }
  return std::nullopt;
}

/// Element `index` of `sequence` (Python's negative indices included).
static std::optional<int64_t> staticIntAt(Value sequence, int64_t index,
                                          unsigned depth) {
  std::optional<SmallVector<int64_t>> ints = staticIntsOf(sequence, depth);
  int64_t size = ints ? int64_t(ints->size()) : 0;
  if (index < 0)
    index += size;
  if (!ints || index < 0 || index >= size)
    return std::nullopt;
  return (*ints)[index];
}

static std::optional<int64_t> staticIntOf(Value value, unsigned depth) {
  if (auto read = value.getDefiningOp<GetAttrOp>();
      read && integerSource && value.getType().isInteger(64)) {
    std::optional<c10::IValue> attribute =
        readAttribute(integerSource->module, read.getPath());
    return attribute && attribute->isInt()
               ? std::optional<int64_t>(attribute->toInt())
               : std::nullopt;
  }
  auto op = value.getDefiningOp<TorchOp>();
  if (!op || depth > 16 || !value.getType().isInteger(64))
    return std::nullopt;
  StringRef name = op.getName();
  // `a, b = self.stride`, `n = x.size()[0]`: elements of static sequences.
  if ((name == "prim::TupleUnpack" || name == "prim::ListUnpack") &&
      op->getNumOperands() == 1)
    return staticIntAt(op->getOperand(0),
                       cast<OpResult>(value).getResultNumber(), depth + 1);
  ArrayRef<Attribute> args = op.getArgs().getValue();
  auto argInt = [&](unsigned i) { return staticIntArg(op, i, depth); };
  if ((name == "aten::__getitem__" || name == "prim::TupleIndex") &&
      args.size() == 2 && op.getOperandArg(0)) {
    std::optional<int64_t> index = argInt(1);
    return index ? staticIntAt(op.getOperandArg(0), *index, depth + 1)
                 : std::nullopt;
  }
  if (name == "aten::size" && args.size() == 2) {
    RankedTensorType type = op.getStaticTensorArg(0);
    std::optional<int64_t> dim = argInt(1);
    if (!type || !dim || *dim < -type.getRank() || *dim >= type.getRank())
      return std::nullopt;
    return type.getDimSize(*dim < 0 ? *dim + type.getRank() : *dim);
  }
  if ((name == "aten::dim" || name == "aten::numel") && args.size() == 1) {
    RankedTensorType type = op.getStaticTensorArg(0);
    if (!type)
      return std::nullopt;
    return name == "aten::dim" ? type.getRank() : type.getNumElements();
  }
  if (args.size() != 2)
    return std::nullopt;
  std::optional<int64_t> a = argInt(0), b = argInt(1);
  if (!a || !b)
    return std::nullopt;
  if (name == "aten::add")
    return *a + *b;
  if (name == "aten::sub")
    return *a - *b;
  if (name == "aten::mul")
    return *a * *b;
  // Python's floor division and modulo (TorchScript's on ints).
  if ((name == "aten::floordiv" || name == "aten::__floordiv__") && *b != 0)
    return *a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)));
  if ((name == "aten::remainder" || name == "aten::__mod__") && *b != 0)
    return ((*a % *b) + *b) % *b;
  return std::nullopt;
}

std::optional<int64_t> mlir::memopt::getStaticInt(Value value) {
  return staticIntOf(value, 0);
}

std::optional<double> mlir::memopt::getStaticFloat(Value value) {
  auto read = value.getDefiningOp<GetAttrOp>();
  if (!read || !value.getType().isF64())
    return std::nullopt;
  if (auto assumed = dyn_cast_or_null<FloatAttr>(read.getAssumedValue()))
    return assumed.getValueAsDouble();
  std::optional<c10::IValue> attribute =
      integerSource ? readAttribute(integerSource->module, read.getPath())
                    : std::nullopt;
  if (attribute && attribute->isDouble())
    return attribute->toDouble();
  return std::nullopt;
}

static bool isMakeableTensor(Value value, bool floatingOnly) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return false;
  std::optional<c10::ScalarType> dtype = scalarTypeOf(type.getElementType());
  return dtype && (!floatingOnly || at::isFloatingType(*dtype) ||
                   at::isComplexType(*dtype));
}

/// The elements of a list built by prim::ListConstruct and read only.
static std::optional<OperandRange> getReadOnlyElements(Value list) {
  if (!TorchOp::isReadOnlyList(list))
    return std::nullopt;
  return TorchOp::getConstructedElements(list);
}

/// A constant list of integers that reaches the op through a tuple (the
/// importer's form of `dims=([2], [0])`: prim::TupleUnpack of a constant
/// cast to its tuple type).
static std::optional<SmallVector<int64_t>>
getUnpackedConstantInts(Value value) {
  auto unpack = value.getDefiningOp<TorchOp>();
  if (!unpack || unpack.getName() != "prim::TupleUnpack" ||
      unpack->getNumOperands() != 1)
    return std::nullopt;
  auto constant = unpack->getOperand(0).getDefiningOp<TorchOp>();
  while (constant && constant.getName() == "prim::unchecked_cast" &&
         constant->getNumOperands() == 1)
    constant = constant->getOperand(0).getDefiningOp<TorchOp>();
  if (!constant || constant.getName() != "prim::unchecked_cast" ||
      constant->getNumOperands() != 0 || constant.getArgs().size() != 1)
    return std::nullopt;
  auto tuple = dyn_cast<ArrayAttr>(constant.getArgs()[0]);
  unsigned index = cast<OpResult>(value).getResultNumber();
  if (!tuple || index >= tuple.size())
    return std::nullopt;
  return TorchOp::getIntegers(tuple[index]);
}

bool mlir::memopt::canMakeOperand(Value operand, bool floatingOnly) {
  if (getStaticInt(operand) || getStaticFloat(operand) ||
      isMakeableTensor(operand, floatingOnly) ||
      getUnpackedConstantInts(operand))
    return true;
  auto list = dyn_cast<ListType>(operand.getType());
  std::optional<OperandRange> elements =
      list ? getReadOnlyElements(operand) : std::nullopt;
  if (!elements)
    return false;
  if (isa<TensorType>(list.getElementType()))
    return llvm::all_of(*elements, [&](Value element) {
      return isMakeableTensor(element, floatingOnly);
    });
  return list.getElementType().isInteger(64) &&
         llvm::all_of(*elements,
                      [](Value element) { return getStaticInt(element); });
}

namespace {
/// The made-up tensors of one run, with the operand each stands for.
struct MadeTensor {
  at::Tensor tensor;
  /// The op's operands that are this tensor, and (operand, element) pairs
  /// of list operands holding it.
  SmallVector<unsigned, 1> operands;
  SmallVector<std::pair<unsigned, unsigned>, 1> elements;
  int64_t owners = 0;        // of the tensor itself, before the run
  int64_t storageOwners = 0; // of its storage
  /// A trained parameter's AccumulateGrad node, made before the run: it
  /// holds the leaf, and the op's graph reaches it as training's does.
  std::shared_ptr<torch::autograd::Node> accumulator;
};
} // namespace

/// The view ops `value` is made by from a tensor that is not a view (its
/// root), root first, when their other operands are integers computed from
/// static shapes; empty otherwise. `root` (when given) gets the root.
static SmallVector<TorchOp> getViewChain(Value value, Value *root = nullptr) {
  SmallVector<TorchOp> chain;
  Value current = value;
  while (auto op = current.getDefiningOp<TorchOp>()) {
    std::optional<ArrayRef<int64_t>> views = op.getViews();
    unsigned index = cast<OpResult>(current).getResultNumber();
    if (!views || index >= views->size() || (*views)[index] < 0 ||
        op.getMutates() || op.getScript() || chain.size() >= 16)
      break;
    Value viewed = op->getOperand((*views)[index]);
    for (Value operand : op->getOperands())
      if (operand != viewed && !(canMakeOperand(operand, false) &&
                                 !isa<TensorType>(operand.getType())))
        return {};
    chain.push_back(op);
    current = viewed;
  }
  std::reverse(chain.begin(), chain.end());
  if (root)
    *root = current;
  return chain;
}

void mlir::memopt::describeLayout(Value value, llvm::raw_ostream &os) {
  Value root;
  SmallVector<TorchOp> chain = getViewChain(value, &root);
  if (chain.empty())
    return;
  os << " view of " << root.getType();
  for (TorchOp view : chain) {
    os << ' ' << view.getName() << view.getArgs();
    for (Value operand : view->getOperands())
      if (std::optional<int64_t> constant = getStaticInt(operand))
        os << '=' << *constant;
  }
}

/// Integers computed from static shapes, and lists of them (or constant);
/// a float module attribute.
static c10::IValue makeScalars(Value value) {
  if (std::optional<int64_t> constant = getStaticInt(value))
    return *constant;
  if (std::optional<double> constant = getStaticFloat(value))
    return *constant;
  c10::List<int64_t> ints;
  if (std::optional<SmallVector<int64_t>> constant =
          getUnpackedConstantInts(value)) {
    for (int64_t element : *constant)
      ints.push_back(element);
    return ints;
  }
  OperandRange elements = *TorchOp::getConstructedElements(value);
  for (Value element : elements)
    ints.push_back(*getStaticInt(element));
  return ints;
}

static at::Tensor makeContiguous(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  at::ScalarType dtype = *scalarTypeOf(type.getElementType());
  std::vector<int64_t> shape(type.getShape().begin(), type.getShape().end());
  return at::full(shape, 0.01, at::TensorOptions().dtype(dtype));
}

/// `value` laid out as the model lays it out where it is a view (a slice
/// of a bigger tensor: strided, its storage the bigger one's): the view
/// ops replayed on a made-up root. Undefined when they cannot be.
static at::Tensor makeView(Value value) {
  SmallVector<TorchOp> chain = getViewChain(value);
  if (chain.empty())
    return {};
  std::optional<OpGraph> prefix = buildOpGraph(chain, {value});
  if (!prefix)
    return {};
  torch::jit::Stack stack;
  for (Value input : prefix->inputs) {
    if (isa<TensorType>(input.getType())) {
      if (!isMakeableTensor(input, /*floatingOnly=*/false))
        return {};
      stack.push_back(makeContiguous(input));
    } else {
      stack.push_back(makeScalars(input));
    }
  }
  try {
    c10::AutoGradMode noGrad(false);
    torch::jit::Code code(prefix->graph, "memopt_probe_view");
    torch::jit::InterpreterState(code).run(stack);
  } catch (const std::exception &) {
    return {};
  }
  if (stack.size() != 1 || !stack[0].isTensor())
    return {};
  return stack[0].toTensor();
}

/// A `memopt.param`, read directly or through an Optional refinement.
static bool isParameter(Value value) {
  if (auto cast = value.getDefiningOp<TorchOp>();
      cast && cast.getName() == "prim::unchecked_cast" &&
      cast->getNumOperands() == 1)
    value = cast->getOperand(0);
  return value.getDefiningOp<ParamOp>() != nullptr;
}

/// A tensor of `value`'s static shape, as a layer's output is in training:
/// one that will need a gradient is a non-leaf (`leaf * 1`; a view,
/// `leaf.view_as(leaf)`, of the view's layout): an AccumulateGrad node
/// would hold a leaf as if the op had saved it. A trained parameter is a
/// leaf, as in training, whose AccumulateGrad the caller creates and holds
/// before counting owners.
static at::Tensor makeTensor(Value value, const DenseSet<Value> &grads) {
  at::ScalarType dtype =
      *scalarTypeOf(cast<TensorType>(value.getType()).getElementType());
  bool grad = grads.contains(value) &&
              (at::isFloatingType(dtype) || at::isComplexType(dtype));
  if (grad && isParameter(value))
    return makeContiguous(value).requires_grad_(true);
  if (at::Tensor view = makeView(value); view.defined()) {
    at::Tensor leaf = view.detach();
    if (!grad)
      return leaf;
    leaf.requires_grad_(true);
    return leaf.view_as(leaf);
  }
  at::Tensor leaf = makeContiguous(value);
  if (!grad)
    return leaf;
  leaf.requires_grad_(true);
  return leaf * 1;
}

/// Whether `result` matches the IR's type of the op's result `index`
/// (when that is a statically shaped tensor).
static bool matchesResultType(TorchOp op, unsigned index,
                              const at::Tensor &result) {
  if (index >= op->getNumResults())
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(index).getType());
  if (!type || !type.hasStaticShape())
    return true;
  return ArrayRef<int64_t>(result.sizes().vec()) == type.getShape();
}

static std::optional<GraphRunMarks>
runOnce(const std::shared_ptr<torch::jit::Graph> &graph, TorchOp op,
        const std::vector<Value> &inputs, const DenseSet<Value> &grads,
        const std::vector<c10::IValue> &leading, bool opAlone,
        bool incomingHeld) {
  using namespace ::memopt::probe;
  std::vector<MadeTensor> made;
  std::vector<c10::IValue> values;
  // Where the op reads each made tensor: as an operand, or as an element
  // of a list operand.
  auto make = [&](Value input) {
    MadeTensor tensor{makeTensor(input, grads), {}, {}};
    if (tensor.tensor.is_leaf() && tensor.tensor.requires_grad())
      tensor.accumulator =
          torch::autograd::impl::grad_accumulator(tensor.tensor);
    for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
      if (operand == input)
        tensor.operands.push_back(index);
      if (std::optional<OperandRange> elements =
              TorchOp::getConstructedElements(operand))
        for (auto [position, element] : llvm::enumerate(*elements))
          if (element == input)
            tensor.elements.push_back({index, position});
    }
    made.push_back(std::move(tensor));
  };
  for (Value input : inputs) {
    if (!isa<TensorType>(input.getType()) && !isa<ListType>(input.getType())) {
      values.push_back(makeScalars(input));
      continue;
    }
    if (isa<TensorType>(input.getType())) {
      make(input);
      values.emplace_back(made.back().tensor);
      continue;
    }
    auto list = cast<ListType>(input.getType());
    if (!isa<TensorType>(list.getElementType())) {
      values.push_back(makeScalars(input));
      continue;
    }
    c10::List<at::Tensor> tensors;
    OperandRange elements = *TorchOp::getConstructedElements(input);
    for (Value element : elements) {
      make(element);
      tensors.push_back(made.back().tensor);
    }
    values.emplace_back(std::move(tensors));
  }
  std::set<const void *> inputStorages;
  for (MadeTensor &input : made)
    inputStorages.insert(input.tensor.storage().data());
  torch::jit::Stack stack(leading.begin(), leading.end());
  for (c10::IValue &value : values)
    stack.push_back(std::move(value));
  values.clear();
  // Counted with the stack's handles (and lists') gone: the run consumes
  // them, so they are no owners afterwards.
  auto countOwners = [&](const at::Tensor &tensor) {
    int64_t held = 0;
    for (const c10::IValue &value : stack) {
      if (value.isTensor() && value.toTensor().is_same(tensor))
        ++held;
      if (value.isTensorList())
        for (const at::Tensor &element : value.toTensorList().vec())
          held += element.is_same(tensor);
    }
    return held;
  };
  for (MadeTensor &input : made) {
    int64_t held = countOwners(input.tensor);
    // A list's `vec()` copies above hold no reference once gone.
    input.owners = input.tensor.use_count() - held;
    input.storageOwners = input.tensor.storage().use_count();
  }

  c10::AutoGradMode gradMode(true);
  int64_t before = getLiveBytes();
  GraphRunMarks marks;
  try {
    torch::jit::Code code(graph, "memopt_probe_run");
    marks.forward =
        measurePeak([&] { torch::jit::InterpreterState(code).run(stack); });
  } catch (const std::exception &) {
    return std::nullopt;
  }
  std::set<const void *> results;
  int64_t resultBytes = 0;
  for (auto [index, value] : llvm::enumerate(stack)) {
    // Alone, an op's results are tensors or plain values: a list of
    // tensors would count as kept bytes.
    if (opAlone && !value.isTensor() && !value.isNone() && !value.isInt() &&
        !value.isDouble() && !value.isBool())
      return std::nullopt;
    if (!value.isTensor() || !value.toTensor().defined())
      continue;
    const at::Tensor &result = value.toTensor();
    const void *storage = result.storage().data();
    if (opAlone &&
        (inputStorages.count(storage) || !matchesResultType(op, index, result)))
      return std::nullopt;
    if (!inputStorages.count(storage) && results.insert(storage).second)
      resultBytes += result.storage().nbytes();
  }
  marks.bytes = std::max<int64_t>(getLiveBytes() - before - resultBytes, 0);
  if (opAlone && !stack.empty() && stack[0].isTensor() &&
      stack[0].toTensor().defined())
    marks.denseOrder = getDenseOrder(stack[0].toTensor());
  // The results autograd saved: it keeps an output as another tensor of
  // the same storage (SavedVariable's tensor_data), which nothing on the
  // stack accounts for.
  for (auto [index, value] : llvm::enumerate(stack)) {
    if (!value.isTensor() || !value.toTensor().defined() ||
        inputStorages.count(value.toTensor().storage().data()))
      continue;
    const at::Tensor &result = value.toTensor();
    int64_t onStack = 0;
    for (const c10::IValue &other : stack)
      onStack += other.isTensor() && other.toTensor().defined() &&
                 other.toTensor().storage().is_alias_of(result.storage());
    // A view returned (tensordot's reshaped product) keeps its base alive
    // through autograd's view tracking: not a saved tensor.
    if (result.is_view())
      ++onStack;
    if (static_cast<int64_t>(result.storage().use_count()) > onStack)
      marks.results.insert(index);
  }
  // The operands that gained owners besides the results (an operand
  // returned as is, or a view of it): saved variables or views of them.
  for (MadeTensor &input : made) {
    int64_t owners = input.tensor.use_count();
    int64_t storageOwners = input.tensor.storage().use_count();
    for (const c10::IValue &value : stack) {
      if (!value.isTensor() || !value.toTensor().defined())
        continue;
      if (value.toTensor().is_same(input.tensor))
        --owners;
      else if (value.toTensor().storage().is_alias_of(input.tensor.storage()))
        --storageOwners;
    }
    if (owners > input.owners || storageOwners > input.storageOwners) {
      marks.operands.insert(input.operands.begin(), input.operands.end());
      marks.elements.insert(input.elements.begin(), input.elements.end());
    }
  }

  // Backward from every result that requires grad; the incoming gradients
  // are made before (the model counts them live before the op's backward).
  // Held: they reach the results directly and stay referenced here. Else
  // each reaches its result through a `* 1`, whose gradient, a new buffer
  // the engine frees once the graph's first node has consumed it, stands
  // for the incoming one: its bytes come off the mark. The results stay
  // referenced, as bytes of `before`: what the backward adds on top is the
  // same whether or not they are freed first.
  std::vector<at::Tensor> returned, roots, incoming, wrt;
  int64_t incomingBytes = 0;
  for (const c10::IValue &value : stack)
    if (value.isTensor() && value.toTensor().defined() &&
        value.toTensor().requires_grad()) {
      returned.push_back(value.toTensor());
      roots.push_back(incomingHeld ? returned.back() : returned.back() * 1);
      incoming.push_back(at::ones_like(roots.back()));
      if (!incomingHeld)
        incomingBytes += roots.back().storage().nbytes();
    }
  for (MadeTensor &input : made)
    if (input.tensor.requires_grad())
      wrt.push_back(input.tensor);
  stack.clear();
  if (roots.empty() || wrt.empty())
    return marks;
  // A trained parameter's gradient goes into its .grad, resident and
  // zeroed before the step (--grad-buffers resident): the engine adds each
  // into it as it is made and frees it, while the gradients of activations
  // stay held (the layer below consumes them), as `.grad` of the non-leaves.
  bool parameters = false;
  for (MadeTensor &input : made)
    if (input.accumulator) {
      input.tensor.mutable_grad() = at::zeros_like(input.tensor);
      parameters = true;
    }
  std::vector<at::Tensor> gradients;
  int64_t mark;
  try {
    mark = measurePeak([&] {
      if (parameters)
        torch::autograd::backward(roots, incoming, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*inputs=*/wrt);
      else
        gradients = torch::autograd::grad(roots, wrt, incoming,
                                          /*retain_graph=*/false,
                                          /*create_graph=*/false,
                                          /*allow_unused=*/true);
    });
  } catch (const std::exception &) {
    return std::nullopt;
  }
  mark = std::max<int64_t>(mark - incomingBytes, 0);
  (incomingHeld ? marks.backwardHeld : marks.backward) = mark;
  return marks;
}

std::optional<GraphRunMarks> mlir::memopt::measureGraphRun(
    const std::shared_ptr<torch::jit::Graph> &graph, TorchOp op,
    const std::vector<Value> &inputs, const DenseSet<Value> &grads,
    const std::vector<c10::IValue> &leading, bool opAlone) {
  std::optional<GraphRunMarks> marks =
      runOnce(graph, op, inputs, grads, leading, opAlone, /*held=*/false);
  if (!marks)
    return std::nullopt;
  // The same run again for the backward with the incoming gradient held.
  if (std::optional<GraphRunMarks> held =
          runOnce(graph, op, inputs, grads, leading, opAlone, /*held=*/true))
    marks->backwardHeld = held->backwardHeld;
  else
    marks->backwardHeld = marks->backward;
  return marks;
}

void mlir::memopt::setGraphRunMarks(TorchOp op, const GraphRunMarks &marks) {
  SmallVector<int64_t> operands(marks.operands.begin(), marks.operands.end());
  SmallVector<int64_t> elements;
  for (auto [operand, element] : marks.elements) {
    elements.push_back(operand);
    elements.push_back(element);
  }
  SmallVector<int64_t> results(marks.results.begin(), marks.results.end());
  op.setMeasuredSavesAttr(MeasuredSavesAttr::get(op.getContext(), marks.bytes,
                                                 operands, elements, results));
  op.setHighWaterAttr(KernelHighWaterAttr::get(
      op.getContext(), marks.forward,
      {-1, marks.backward, marks.backward, marks.backward},
      std::max(marks.backwardHeld, marks.backward)));
  if (!marks.denseOrder.empty())
    op.setDenseOrder(marks.denseOrder);
}
