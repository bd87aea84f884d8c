//===- ConvolutionCallFromIR.cpp - a convolution memopt.op as a call ------===//
//
// Reads a convolution's static shapes and constant arguments off its
// `memopt.op`, and which values will need gradients in training.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionCallFromIR.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::memopt;
using ::memopt::probe::ConvolutionCall;
using ::memopt::probe::ConvolutionForm;
using ::memopt::probe::ElementKind;

static std::optional<ConvolutionForm> getForm(StringRef name) {
  return llvm::StringSwitch<std::optional<ConvolutionForm>>(name)
      .Cases("aten::conv1d", "aten::conv2d", "aten::conv3d",
             ConvolutionForm::Convolution)
      .Cases("aten::conv_transpose1d", "aten::conv_transpose2d",
             "aten::conv_transpose3d", ConvolutionForm::TransposedConvolution)
      .Cases("aten::convolution", "aten::_convolution",
             ConvolutionForm::General)
      .Default(std::nullopt);
}

static std::optional<ElementKind> getElementKind(Type type) {
  if (type.isF32())
    return ElementKind::F32;
  if (type.isF64())
    return ElementKind::F64;
  if (type.isF16())
    return ElementKind::F16;
  if (type.isBF16())
    return ElementKind::BF16;
  return std::nullopt;
}

static bool readInts(TorchOp op, unsigned position,
                     std::vector<int64_t> &values) {
  std::optional<SmallVector<int64_t>> ints = op.getConstantIntsArg(position);
  if (!ints)
    return false;
  values.assign(ints->begin(), ints->end());
  return true;
}

std::optional<ConvolutionCall> mlir::memopt::getConvolutionCall(TorchOp op,
                                                                int threads) {
  std::optional<ConvolutionForm> form = getForm(op.getName());
  if (!form || op->getNumResults() != 1)
    return std::nullopt;
  ArrayAttr args = op.getArgs();
  RankedTensorType input = op.getStaticTensorArg(0),
                   weight = op.getStaticTensorArg(1);
  if (!input || !weight || args.size() < 7 ||
      input.getElementType() != weight.getElementType())
    return std::nullopt;
  std::optional<ElementKind> element = getElementKind(input.getElementType());
  if (!element)
    return std::nullopt;

  ConvolutionCall call;
  call.form = *form;
  call.element = *element;
  call.threads = threads;
  call.input.assign(input.getShape().begin(), input.getShape().end());
  if (auto channelsLast = op.getChannelsLast())
    call.channelsLastInput = llvm::is_contained(
        *channelsLast, cast<OperandRefAttr>(args[0]).getIndex());
  call.weight.assign(weight.getShape().begin(), weight.getShape().end());
  // A bias is a tensor operand; `None`, or an optional module attribute
  // holding None (`!memopt.script<"Tensor?">`, as the memory model reads
  // it), is none.
  if (Value bias = op.getOperandArg(2)) {
    if (isa<TensorType>(bias.getType())) {
      RankedTensorType bias = op.getStaticTensorArg(2);
      if (!bias || bias.getElementType() != input.getElementType())
        return std::nullopt;
      call.bias = true;
    }
  } else if (!isa<NoneAttr>(args[2])) {
    return std::nullopt;
  }

  // Argument positions after (input, weight, bias) by form.
  std::optional<SmallVector<int64_t>> groups;
  bool known = readInts(op, 3, call.stride);
  switch (call.form) {
  case ConvolutionForm::Convolution:
    if (auto mode = dyn_cast<StringAttr>(args[4]))
      call.paddingMode = mode.getValue().str();
    else
      known &= readInts(op, 4, call.padding);
    known &= readInts(op, 5, call.dilation);
    groups = op.getConstantIntsArg(6);
    break;
  case ConvolutionForm::TransposedConvolution:
    known &= readInts(op, 4, call.padding) &&
             readInts(op, 5, call.outputPadding) && args.size() >= 8 &&
             readInts(op, 7, call.dilation);
    groups = op.getConstantIntsArg(6);
    break;
  case ConvolutionForm::General: {
    auto transposed = args.size() >= 9 ? dyn_cast<BoolAttr>(args[6]) : nullptr;
    known &= transposed && readInts(op, 4, call.padding) &&
             readInts(op, 5, call.dilation) &&
             readInts(op, 7, call.outputPadding);
    call.transposed = transposed && transposed.getValue();
    groups = op.getConstantIntsArg(8);
    break;
  }
  }
  if (!known || !groups || groups->size() != 1 || (*groups)[0] < 1)
    return std::nullopt;
  call.groups = (*groups)[0];
  return call;
}

/// Values that will require grad in training: trainable parameters and
/// what is computed from them (an over-approximation: a comparison of such
/// a value counts too). Model inputs, buffers and attributes do not. A
/// list an op writes such a value into counts too (`spikes.append(s)`, then
/// `torch.stack(spikes)` or `spikes[t]`), and so do the block arguments and
/// results of an op whose regions carry one: repeated to a fixed point,
/// since a loop's body reads what later ops write. Without lists, the
/// spiking VGG's convolutions were measured without their input gradient
/// and priced by the formulas instead (17 % under on PyTorch 2.6's AVX
/// kernels).
DenseSet<Value> mlir::memopt::getGradValues(ModuleOp module) {
  DenseSet<Value> grads;
  bool changed = true;
  // Only what can hold a gradient: a loop's counter or a tensor's size
  // would make the model's input look as if it needed one.
  auto mark = [&](Value value) {
    if (mayCarryGradient(value.getType()))
      changed |= grads.insert(value).second;
  };
  auto marked = [&](Value value) { return grads.contains(value); };
  while (changed) {
    changed = false;
    module.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto param = dyn_cast<ParamOp>(op)) {
        if (!param.getFrozen())
          mark(param.getResult());
        return;
      }
      // A function's arguments are the model's inputs: never.
      if (isa<func::FuncOp, ModuleOp>(op))
        return;
      bool fromRegions = llvm::any_of(op->getRegions(), [&](Region &region) {
        return llvm::any_of(region.getOps(), [&](Operation &inner) {
          return inner.hasTrait<OpTrait::IsTerminator>() &&
                 llvm::any_of(inner.getOperands(), marked);
        });
      });
      if (!fromRegions && llvm::none_of(op->getOperands(), marked))
        return;
      // The elements of a list mapped element by element (broadcast
      // operands): each as its source.
      if (auto unpack = dyn_cast<TorchOp>(op);
          unpack && unpack.getName() == "prim::ListUnpack" &&
          op->getNumOperands() == 1 &&
          TorchOp::getElementwiseListSource(op->getOperand(0), 0)) {
        for (auto [i, result] : llvm::enumerate(op->getResults()))
          if (Value source =
                  TorchOp::getElementwiseListSource(op->getOperand(0), i);
              !source || marked(source))
            mark(result);
        return;
      }
      for (Value result : op->getResults())
        mark(result);
      for (Value operand : op->getOperands())
        if (isa<ListType>(operand.getType()))
          mark(operand);
      for (Region &region : op->getRegions())
        for (BlockArgument argument : region.getArguments())
          mark(argument);
    });
  }
  return grads;
}

unsigned
mlir::memopt::getConvolutionGradientMask(TorchOp op,
                                         const DenseSet<Value> &grads) {
  Value input = op.getOperandArg(0), weight = op.getOperandArg(1),
        bias = op.getOperandArg(2);
  bool weightGrad = weight && grads.contains(weight);
  if (bias && isa<TensorType>(bias.getType()) &&
      grads.contains(bias) != weightGrad)
    return 0;
  return (input && grads.contains(input) ? 1u : 0u) | (weightGrad ? 2u : 0u);
}

bool mlir::memopt::isConvolutionOperator(StringRef name) {
  return getForm(name).has_value();
}
