//===- MemoptOps.cpp - memopt graph, compression and offload ops ----------===//
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Dialect/MemoptAttrNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::memopt;

//===----------------------------------------------------------------------===//
// Module paths
//===----------------------------------------------------------------------===//

// Operators whose backward needs operand 0 and which the runtime can run
// with that operand saved packed (memopt::conv_packed, memopt::linear_packed,
// memopt::mul_packed).
static constexpr llvm::StringLiteral kPackedInputOperators[] = {
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::linear",
    "aten::mul"};

/// A qualified module path: dot-separated, non-empty segments without spaces.
static LogicalResult verifyModulePath(Operation *op, StringRef path) {
  if (path.empty())
    return op->emitOpError("module path must not be empty");
  SmallVector<StringRef> segments;
  path.split(segments, '.');
  for (StringRef segment : segments) {
    if (segment.empty())
      return op->emitOpError("module path '")
             << path << "' has an empty segment";
    if (llvm::any_of(segment, [](char c) { return std::isspace(c); }))
      return op->emitOpError("module path '") << path << "' contains a space";
  }
  return success();
}

LogicalResult ParamOp::verify() { return verifyModulePath(*this, getPath()); }
LogicalResult BufferOp::verify() { return verifyModulePath(*this, getPath()); }
LogicalResult GetAttrOp::verify() { return verifyModulePath(*this, getPath()); }

Attribute GetAttrOp::getAssumedValue() {
  auto func = (*this)->getParentOfType<func::FuncOp>();
  auto assumes =
      func ? func->getAttrOfType<DictionaryAttr>(kAssumesAttrName) : nullptr;
  return assumes ? assumes.get(getPath()) : Attribute();
}
LogicalResult SetAttrOp::verify() { return verifyModulePath(*this, getPath()); }

//===----------------------------------------------------------------------===//
// TorchOp
//===----------------------------------------------------------------------===//

/// Constant TorchScript arguments: numbers, booleans, strings, None and
/// (nested) lists of them.
static bool isConstantArgument(Attribute attr) {
  if (isa<IntegerAttr, FloatAttr, BoolAttr, StringAttr, NoneAttr>(attr))
    return true;
  if (auto list = dyn_cast<ArrayAttr>(attr))
    return llvm::all_of(list, isConstantArgument);
  return false;
}

std::optional<OperandRange> TorchOp::getConstructedElements(Value list) {
  auto construct = list.getDefiningOp<TorchOp>();
  if (!construct || construct.getName() != "prim::ListConstruct" ||
      construct.getArgs().size() != construct->getNumOperands())
    return std::nullopt;
  return construct->getOperands();
}

Value TorchOp::getElementwiseListSource(Value list, int64_t position) {
  auto producer = list.getDefiningOp<TorchOp>();
  if (!producer || producer.getName() != "aten::broadcast_tensors" ||
      producer->getNumOperands() != 1 || position < 0)
    return {};
  std::optional<OperandRange> inputs =
      getConstructedElements(producer->getOperand(0));
  if (!inputs || position >= static_cast<int64_t>(inputs->size()))
    return {};
  return (*inputs)[position];
}

LogicalResult TorchOp::verify() {
  StringRef name = getName();
  size_t separator = name.find("::");
  if (separator == StringRef::npos || separator == 0 ||
      separator + 2 == name.size())
    return emitOpError("operator name '")
           << name << "' is not qualified (expected 'namespace::name')";

  unsigned nextOperand = 0;
  for (auto [position, arg] : llvm::enumerate(getArgs())) {
    if (auto ref = dyn_cast<OperandRefAttr>(arg)) {
      if (ref.getIndex() != nextOperand)
        return emitOpError("argument #")
               << position << " refers to operand " << ref.getIndex()
               << ", expected operand " << nextOperand;
      ++nextOperand;
      continue;
    }
    if (!isConstantArgument(arg))
      return emitOpError("argument #")
             << position << " is not a TorchScript constant: " << arg;
  }
  if (nextOperand != getNumOperands())
    return emitOpError("has ") << getNumOperands() << " operands but its args "
                               << "reference " << nextOperand;

  if (auto mutates = getMutates()) {
    llvm::SmallSet<int64_t, 4> seen;
    for (int64_t index : *mutates) {
      if (index < 0 || index >= getNumOperands())
        return emitOpError("mutated operand ")
               << index << " is out of range [0, " << getNumOperands() << ")";
      if (!seen.insert(index).second)
        return emitOpError("mutated operand ") << index << " is listed twice";
    }
  }
  if (auto views = getViews()) {
    if (views->size() != getNumResults())
      return emitOpError("views has ") << views->size() << " entries for "
                                       << getNumResults() << " results";
    for (int64_t index : *views)
      if (index < -1 || index >= getNumOperands())
        return emitOpError("view of operand ")
               << index << " is out of range [-1, " << getNumOperands() << ")";
  }
  // Control flow is folded at import or kept whole with its graph.
  bool controlFlow = name == "prim::If" || name == "prim::Loop";
  if (getScript() && !controlFlow)
    return emitOpError("script is only carried by prim::If and prim::Loop, "
                       "not '")
           << name << "'";
  if (controlFlow && !getScript())
    return emitOpError("'") << name
                            << "' needs the script of the control flow it "
                               "keeps";
  if (auto channelsLast = getChannelsLast()) {
    for (int64_t index : *channelsLast) {
      auto tensor =
          index >= 0 && index < getNumOperands()
              ? dyn_cast<RankedTensorType>(getOperand(index).getType())
              : RankedTensorType();
      if (!tensor || (tensor.getRank() != 4 && tensor.getRank() != 5))
        return emitOpError("channels_last operand ")
               << index << " is not a 4-d or 5-d ranked tensor operand";
    }
  }
  if (auto order = getDenseOrder()) {
    auto tensor = getNumResults()
                      ? dyn_cast<RankedTensorType>(getResult(0).getType())
                      : RankedTensorType();
    SmallVector<int64_t> sorted(order->begin(), order->end());
    llvm::sort(sorted);
    if (!tensor || int64_t(sorted.size()) != tensor.getRank() ||
        !llvm::equal(sorted, llvm::seq<int64_t>(0, tensor.getRank())))
      return emitOpError("dense_order must be a permutation of the dims of "
                         "its first result, a ranked tensor");
  }
  if (MeasuredSavesAttr saves = getMeasuredSavesAttr()) {
    for (int64_t index : saves.getOperands())
      if (index >= getNumOperands())
        return emitOpError("measured_saves names operand ")
               << index << " of " << getNumOperands();
    ArrayRef<int64_t> elements = saves.getElements();
    for (size_t i = 0; i + 1 < elements.size(); i += 2) {
      std::optional<OperandRange> list =
          elements[i] < getNumOperands()
              ? getConstructedElements(getOperand(elements[i]))
              : std::nullopt;
      if (!list || elements[i + 1] >= static_cast<int64_t>(list->size()))
        return emitOpError("measured_saves names element ")
               << elements[i + 1] << " of operand " << elements[i]
               << ", which is not a list built here with that many elements";
    }
    for (int64_t index : saves.getResults())
      if (index >= getNumResults())
        return emitOpError("measured_saves names result ")
               << index << " of " << getNumResults();
  }
  // What saved_input and saved_form both need of the tensor they replace.
  auto staticFloatOperand0 = [&] {
    auto input = getNumOperands()
                     ? dyn_cast<RankedTensorType>(getOperand(0).getType())
                     : RankedTensorType();
    return input && input.hasStaticShape() &&
           isa<FloatType>(input.getElementType());
  };
  if (auto saved = getSavedInputAttr()) {
    if (!llvm::is_contained(kPackedInputOperators, name))
      return emitOpError("saved_input is only supported on convolutions, "
                         "linear layers and aten::mul.Tensor, not '")
             << name << "'";
    if (name == "aten::mul" &&
        (getOverload().value_or("") != "Tensor" || getNumOperands() != 2 ||
         getOperand(0).getType() != getOperand(1).getType()))
      return emitOpError("saved_input on aten::mul needs the Tensor overload "
                         "with two operands of the same type");
    if (!staticFloatOperand0())
      return emitOpError("saved_input needs a statically shaped floating-point "
                         "tensor as operand 0");
    if (saved.getKind() != CompressionKind::bit &&
        saved.getKind() != CompressionKind::bool_)
      return emitOpError("saved_input supports bit and bool packing, not ")
             << stringifyCompressionKind(saved.getKind());
  }
  if (auto form = getSavedFormAttr()) {
    if (getSavedInputAttr())
      return emitOpError("has both saved_input and saved_form");
    bool plain = getOverload().value_or("").empty();
    bool known =
        form.getForm() == SavedForm::mask
            ? name == "aten::relu" || name == "aten::relu_" ||
                  (name == "aten::dropout" && plain && getArgs().size() == 3)
            : name == "aten::max_pool2d" && plain;
    if (!known)
      return emitOpError("saved_form ")
             << form << " is not supported on '" << name << "' (mask: "
             << "aten::relu, aten::relu_, aten::dropout; indices: "
             << "aten::max_pool2d)";
    if (!staticFloatOperand0())
      return emitOpError("saved_form needs a statically shaped "
                         "floating-point tensor as operand 0");
  }
  if (auto backward = getBackwardAttr();
      backward && backward.getKernel() == BackwardKernel::weight_rows) {
    // memopt::linear_weight_rows takes aten::linear's three arguments and
    // writes row blocks of a 2-D weight's gradient.
    RankedTensorType weight = getStaticTensorArg(1);
    if (name != "aten::linear" || getOverload().value_or("") != "" ||
        getArgs().size() != 3 || getNumResults() != 1)
      return emitOpError("backward ")
             << backward << " is only supported on 'aten::linear', not '"
             << name << "'";
    if (!staticFloatOperand0() || !weight || weight.getRank() != 2 ||
        !isa<FloatType>(weight.getElementType()))
      return emitOpError("backward ")
             << backward << " needs statically shaped floating-point input "
             << "and 2-D weight tensors";
  } else if (backward) {
    // The runtime op takes aten::batch_norm's arguments, in training mode.
    if (!isTrainingBatchNorm())
      return emitOpError("backward ")
             << backward << " is only supported on a training-mode "
             << "aten::batch_norm (constant training = true), not '" << name
             << "'";
    if (!staticFloatOperand0() ||
        cast<RankedTensorType>(getOperand(0).getType()).getRank() < 2)
      return emitOpError("backward ")
             << backward << " needs a statically shaped floating-point "
             << "tensor with a channel dimension as operand 0";
  }
  return success();
}

bool TorchOp::isTrainingBatchNorm() {
  ArrayAttr args = getArgs();
  auto training = args.size() == 9 ? dyn_cast<BoolAttr>(args[5]) : BoolAttr();
  return getName() == "aten::batch_norm" &&
         getOverload().value_or("").empty() && training && training.getValue();
}

Value TorchOp::getOperandArg(unsigned position) {
  auto ref = position < getArgs().size()
                 ? dyn_cast<OperandRefAttr>(getArgs()[position])
                 : OperandRefAttr();
  return ref ? getOperand(ref.getIndex()) : Value();
}

RankedTensorType TorchOp::getStaticTensorArg(unsigned position) {
  Value operand = getOperandArg(position);
  auto type = operand ? dyn_cast<RankedTensorType>(operand.getType()) : nullptr;
  return type && type.hasStaticShape() ? type : RankedTensorType();
}

std::optional<SmallVector<int64_t>>
TorchOp::getConstantIntsArg(unsigned position) {
  if (position >= getArgs().size())
    return std::nullopt;
  Attribute attr = getArgs()[position];
  if (auto i = dyn_cast<IntegerAttr>(attr))
    return SmallVector<int64_t>{i.getInt()};
  return getIntegers(attr);
}

std::optional<SmallVector<int64_t>> TorchOp::getIntegers(Attribute attr) {
  auto list = dyn_cast_or_null<ArrayAttr>(attr);
  if (!list)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (Attribute element : list) {
    auto i = dyn_cast<IntegerAttr>(element);
    if (!i)
      return std::nullopt;
    values.push_back(i.getInt());
  }
  return values;
}

bool TorchOp::isReadOnlyList(Value list) {
  auto construct = list.getDefiningOp<TorchOp>();
  return construct && construct.getName() == "prim::ListConstruct" &&
         hasNoWritingUse(list);
}

bool TorchOp::hasNoWritingUse(Value value) {
  for (OpOperand &use : value.getUses()) {
    auto user = dyn_cast<TorchOp>(use.getOwner());
    if (!user)
      return false;
    if (std::optional<ArrayRef<int64_t>> written = user.getMutates())
      if (llvm::is_contained(*written, int64_t(use.getOperandNumber())))
        return false;
  }
  return true;
}

bool TorchOp::isFunctional() {
  return !getMutates() && !getNondeterministic() && !getSideEffects();
}

void TorchOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // Aliasing is not modelled value by value, so every op reads the default
  // resource and anything impure also writes it: nothing moves across it.
  effects.emplace_back(MemoryEffects::Read::get());
  if (!isFunctional())
    effects.emplace_back(MemoryEffects::Write::get());
}

//===----------------------------------------------------------------------===//
// Compression
//===----------------------------------------------------------------------===//

LogicalResult CompressOp::verify() {
  auto input = cast<TensorType>(getInput().getType());
  if (!input.hasStaticShape())
    return emitOpError("input must have a static shape, got ") << input;
  PackedTensorType packed = getResult().getType();
  if (packed.getLogicalType() != input)
    return emitOpError("packed type ")
           << packed << " does not match input type " << input;
  return success();
}

LogicalResult DecompressOp::verify() {
  PackedTensorType packed = getInput().getType();
  if (packed.getLogicalType() != getResult().getType())
    return emitOpError("result type ")
           << getResult().getType() << " does not match packed type " << packed;
  return success();
}

//===----------------------------------------------------------------------===//
// Offload
//===----------------------------------------------------------------------===//

LogicalResult OffloadOp::verify() {
  Type payload = getHost().getType().getPayload();
  if (payload != getInput().getType())
    return emitOpError("host type ")
           << getHost().getType() << " does not hold input type "
           << getInput().getType();
  if (auto tensor = dyn_cast<TensorType>(getInput().getType()))
    if (!tensor.hasStaticShape())
      return emitOpError("input must have a static shape, got ") << tensor;
  return success();
}

LogicalResult WaitOp::verify() {
  Operation *producer = getReady().getDefiningOp();
  if (producer && !isa<PrefetchOp>(producer))
    return emitOpError("waits on a token of '")
           << producer->getName() << "', expected one of 'memopt.prefetch'";
  return success();
}

#define GET_OP_CLASSES
#include "memopt/Dialect/MemoptOps.cpp.inc"
