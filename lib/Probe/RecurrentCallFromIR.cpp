//===- RecurrentCallFromIR.cpp - a recurrent memopt.op as a probe call ----===//
//
// Reads the static shapes of a recurrent layer stack's input, initial
// states and parameter list (each list built by prim::ListConstruct in the
// function) and its constant arguments, and writes back what the probe
// measured.
//
//===----------------------------------------------------------------------===//
#include "RecurrentCallFromIR.h"

#include "memopt/Dialect/MemoptAttrs.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::memopt;
using ::memopt::probe::ElementKind;
using ::memopt::probe::KernelMarks;
using ::memopt::probe::RecurrentCall;
using ::memopt::probe::RecurrentForm;

static std::optional<RecurrentForm> getRecurrentForm(StringRef name) {
  return llvm::StringSwitch<std::optional<RecurrentForm>>(name)
      .Case("aten::lstm", RecurrentForm::LSTM)
      .Case("aten::gru", RecurrentForm::GRU)
      .Case("aten::rnn_tanh", RecurrentForm::RNNTanh)
      .Case("aten::rnn_relu", RecurrentForm::RNNReLU)
      .Default(std::nullopt);
}

bool mlir::memopt::isRecurrentOperator(StringRef name) {
  return getRecurrentForm(name).has_value();
}

/// The static shape of a tensor value with `element` type.
static std::optional<std::vector<int64_t>> getShape(Value value, Type element) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape() || type.getElementType() != element)
    return std::nullopt;
  return std::vector<int64_t>(type.getShape().begin(), type.getShape().end());
}

template <typename T, typename AttrT>
static std::optional<T> getConstant(TorchOp op, unsigned position) {
  ArrayRef<Attribute> args = op.getArgs().getValue();
  auto attr =
      position < args.size() ? dyn_cast<AttrT>(args[position]) : AttrT();
  if (!attr)
    return std::nullopt;
  if constexpr (std::is_same_v<AttrT, BoolAttr>)
    return attr.getValue();
  else if constexpr (std::is_same_v<AttrT, FloatAttr>)
    return attr.getValueAsDouble();
  else
    return attr.getInt();
}

std::optional<RecurrentCall>
mlir::memopt::getRecurrentCall(TorchOp op, const DenseSet<Value> &grads,
                               int threads) {
  std::optional<RecurrentForm> form = getRecurrentForm(op.getName());
  if (!form || op.getArgs().size() != 9)
    return std::nullopt;
  Value input = op.getOperandArg(0), hidden = op.getOperandArg(1),
        params = op.getOperandArg(2);
  auto inputType =
      input ? dyn_cast<RankedTensorType>(input.getType()) : RankedTensorType();
  if (!inputType || !hidden || !params)
    return std::nullopt;
  Type element = inputType.getElementType();
  RecurrentCall call;
  call.form = *form;
  if (element.isF32())
    call.element = ElementKind::F32;
  else if (element.isF64())
    call.element = ElementKind::F64;
  else
    return std::nullopt; // half-precision recurrent layers: CUDA only
  call.threads = threads;
  std::optional<std::vector<int64_t>> shape = getShape(input, element);
  if (!shape)
    return std::nullopt;
  call.input = *shape;
  if (auto transpose = input.getDefiningOp<TorchOp>();
      transpose && transpose.getName() == "aten::transpose") {
    std::optional<SmallVector<int64_t>> first = transpose.getConstantIntsArg(1),
                                        second =
                                            transpose.getConstantIntsArg(2);
    call.transposedInput = first && second && first->size() == 1 &&
                           second->size() == 1 &&
                           std::min((*first)[0], (*second)[0]) == 0 &&
                           std::max((*first)[0], (*second)[0]) == 1;
  }

  // LSTM: a list (h0, c0); the others: h0 itself. (The `.data` overloads,
  // for packed sequences, have a tensor of batch sizes here.)
  SmallVector<Value> states;
  if (*form == RecurrentForm::LSTM) {
    std::optional<OperandRange> elements =
        TorchOp::getConstructedElements(hidden);
    if (!elements || elements->size() != 2)
      return std::nullopt;
    states.assign(elements->begin(), elements->end());
  } else {
    states.push_back(hidden);
  }
  for (Value state : states) {
    if (!(shape = getShape(state, element)))
      return std::nullopt;
    call.hidden.push_back(*shape);
  }
  std::optional<OperandRange> weights = TorchOp::getConstructedElements(params);
  if (!weights || weights->empty())
    return std::nullopt;
  bool paramGrad = false;
  for (Value weight : *weights) {
    if (!(shape = getShape(weight, element)))
      return std::nullopt;
    call.params.push_back(*shape);
    paramGrad |= grads.contains(weight);
  }

  // `training` read from the module at run time: measured as training,
  // the step memopt-compile plans.
  std::optional<bool> train = getConstant<bool, BoolAttr>(op, 6);
  if (!train && op.getOperandArg(6))
    train = true;
  std::optional<bool> hasBiases = getConstant<bool, BoolAttr>(op, 3),
                      bidirectional = getConstant<bool, BoolAttr>(op, 7),
                      batchFirst = getConstant<bool, BoolAttr>(op, 8);
  std::optional<int64_t> numLayers = getConstant<int64_t, IntegerAttr>(op, 4);
  std::optional<double> dropout = getConstant<double, FloatAttr>(op, 5);
  if (!hasBiases || !train || !bidirectional || !batchFirst || !numLayers ||
      !dropout || *numLayers < 1)
    return std::nullopt;
  call.hasBiases = *hasBiases;
  call.numLayers = *numLayers;
  call.dropout = *dropout;
  call.train = *train;
  call.bidirectional = *bidirectional;
  call.batchFirst = *batchFirst;
  call.gradMask = (grads.contains(input) ? 1u : 0u) | (paramGrad ? 2u : 0u);
  return call;
}

void mlir::memopt::setRecurrentMarks(TorchOp op, const RecurrentCall &call,
                                     const KernelMarks &marks) {
  MLIRContext *context = op.getContext();
  op.setHighWaterAttr(
      KernelHighWaterAttr::get(context, marks.forward, marks.backward));
  if (!call.gradMask || marks.saved < 0 || marks.retained < 0)
    return;
  SmallVector<int64_t> operands;
  auto add = [&](unsigned position) {
    if (auto ref = dyn_cast<OperandRefAttr>(op.getArgs()[position]))
      operands.push_back(ref.getIndex());
  };
  if (marks.retained & ::memopt::probe::kRecurrentInput)
    add(0);
  if (marks.retained & ::memopt::probe::kRecurrentHidden)
    add(1);
  op.setMeasuredSavesAttr(
      MeasuredSavesAttr::get(context, marks.saved, operands, {}, {}));
}
