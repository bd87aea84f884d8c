//===- SplitRecurrentLayers.cpp - memopt-split-recurrent-layers -----------===//
//
// nn.LSTM(num_layers=L) is one aten::lstm call that runs L layers, each
// over the whole sequence. Autograd keeps every layer's gates until the
// backward, and one call is one unit to the planner: it can neither
// recompute a layer alone nor free one layer's state before another's
// backward. ATen's CPU implementation runs the layers one after another,
// feeding each layer's output (through dropout, in training, between
// layers) to the next, with the layer's slice of the initial states and
// parameters. Writing the stack as L one-layer calls in that order computes
// the same values and gradients, bit for bit, and gives the planner one
// unit per layer.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_SPLITRECURRENTLAYERS
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// Argument positions of aten::lstm / gru / rnn_*'s `.input` overload.
enum RecurrentArg : unsigned {
  kInput = 0,
  kHidden = 1,
  kParams = 2,
  kHasBiases = 3,
  kNumLayers = 4,
  kDropout = 5,
  kTrain = 6,
  kBidirectional = 7,
  kBatchFirst = 8,
  kNumArgs = 9,
};

RankedTensorType swapLeadingDims(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape());
  std::swap(shape[0], shape[1]);
  return RankedTensorType::get(shape, type.getElementType());
}

/// Builds memopt.ops at one place, with the flags the importer would give
/// them.
class CallBuilder {
public:
  CallBuilder(TorchOp at) : builder(at), loc(at.getLoc()) {}

  /// `name` (`overload`) with `operands` and the argument list `args`.
  TorchOp call(StringRef name, StringRef overload, TypeRange results,
               ValueRange operands, ArrayRef<Attribute> args) {
    auto op = builder.create<TorchOp>(loc, results, name, operands,
                                      builder.getArrayAttr(args));
    if (!overload.empty())
      op.setOverloadAttr(builder.getStringAttr(overload));
    return op;
  }
  Attribute arg(unsigned index) {
    return OperandRefAttr::get(builder.getContext(), index);
  }
  Attribute integer(int64_t value) { return builder.getI64IntegerAttr(value); }

  /// `tensor[begin:end]` along dim 0 (a view).
  Value slice(Value tensor, int64_t begin, int64_t end) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[0] = end - begin;
    TorchOp op =
        call("aten::slice", "Tensor",
             {RankedTensorType::get(shape, type.getElementType())}, {tensor},
             {arg(0), integer(0), integer(begin), integer(end), integer(1)});
    op.setViewsAttr(builder.getDenseI64ArrayAttr({0}));
    return op->getResult(0);
  }
  /// `tensor.transpose(0, 1)` (a view).
  Value transposeLeading(Value tensor) {
    TorchOp op =
        call("aten::transpose", "int",
             {swapLeadingDims(cast<RankedTensorType>(tensor.getType()))},
             {tensor}, {arg(0), integer(0), integer(1)});
    op.setViewsAttr(builder.getDenseI64ArrayAttr({0}));
    return op->getResult(0);
  }
  Value list(ValueRange elements, Type listType) {
    SmallVector<Attribute> args;
    for (unsigned i = 0; i < elements.size(); ++i)
      args.push_back(arg(i));
    return call("prim::ListConstruct", "", {listType}, elements, args)
        ->getResult(0);
  }
  /// torch.cat(parts) along dim 0, typed `type`.
  Value concatenate(ValueRange parts, Type listType, Type type) {
    Value all = list(parts, listType);
    return call("aten::cat", "", {type}, {all}, {arg(0), integer(0)})
        ->getResult(0);
  }
  /// aten::dropout(input, p, train), `train` the flag's value when there
  /// is one, else the constant.
  Value dropout(Value input, Attribute p, Value trainFlag, BoolAttr train) {
    SmallVector<Value> operands{input};
    if (trainFlag)
      operands.push_back(trainFlag);
    TorchOp op = call("aten::dropout", "", {input.getType()}, operands,
                      {arg(0), p, trainFlag ? arg(1) : Attribute(train)});
    op.setNondeterministic(true);
    return op->getResult(0);
  }

  OpBuilder builder;
  Location loc;
};

/// Rewrites `op` as one call per layer; false when it is not a stack this
/// pass knows to be equivalent (one layer already, projections, lists or
/// constants it cannot see).
bool splitLayers(TorchOp op) {
  bool lstm = op.getName() == "aten::lstm";
  ArrayRef<Attribute> args = op.getArgs().getValue();
  if (args.size() != kNumArgs || op->getNumResults() != (lstm ? 3u : 2u))
    return false;
  auto numLayers = dyn_cast<IntegerAttr>(args[kNumLayers]);
  auto hasBiases = dyn_cast<BoolAttr>(args[kHasBiases]);
  auto bidirectional = dyn_cast<BoolAttr>(args[kBidirectional]);
  auto batchFirst = dyn_cast<BoolAttr>(args[kBatchFirst]);
  auto dropout = dyn_cast<FloatAttr>(args[kDropout]);
  // `training` is a constant or the module's flag, read at run time.
  auto train = dyn_cast<BoolAttr>(args[kTrain]);
  Value trainFlag = op.getOperandArg(kTrain);
  Value input = op.getOperandArg(kInput), hidden = op.getOperandArg(kHidden),
        params = op.getOperandArg(kParams);
  if (!numLayers || numLayers.getInt() < 2 || !hasBiases || !bidirectional ||
      !batchFirst || !dropout || !(train || trainFlag) || !input || !hidden ||
      !params)
    return false;
  int64_t layers = numLayers.getInt();
  int64_t directions = bidirectional.getValue() ? 2 : 1;

  // Weights per layer: (w_ih, w_hh[, b_ih, b_hh]) per direction; an LSTM
  // with projections has one more each (not split).
  std::optional<OperandRange> weights = TorchOp::getConstructedElements(params);
  int64_t perDirection = hasBiases.getValue() ? 4 : 2;
  int64_t perLayer = perDirection * directions;
  if (!weights || int64_t(weights->size()) != perLayer * layers)
    return false;
  SmallVector<Value> states;
  if (lstm) {
    std::optional<OperandRange> elements =
        TorchOp::getConstructedElements(hidden);
    if (!elements || elements->size() != 2)
      return false;
    states.assign(elements->begin(), elements->end());
  } else {
    states.push_back(hidden);
  }
  for (Value state : states) {
    auto type = dyn_cast<RankedTensorType>(state.getType());
    if (!type || !type.hasStaticShape() || type.getRank() != 3 ||
        type.getDimSize(0) != layers * directions)
      return false;
  }
  auto inputType = dyn_cast<RankedTensorType>(input.getType());
  auto outputType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!inputType || !inputType.hasStaticShape() || inputType.getRank() != 3 ||
      !outputType || !outputType.hasStaticShape())
    return false;

  CallBuilder b(op);
  Type tensorList = op.getOperandArg(kParams).getType();
  Type stateList = lstm ? hidden.getType() : Type();
  // ATen transposes a batch-first input to time-major once, runs every
  // layer time-major, and transposes the last output back.
  Value sequence = batchFirst.getValue() ? b.transposeLeading(input) : input;
  Type layerOutput =
      batchFirst.getValue() ? swapLeadingDims(outputType) : outputType;

  SmallVector<SmallVector<Value>> finalStates(states.size());
  for (int64_t layer = 0; layer < layers; ++layer) {
    SmallVector<Value> layerStates;
    for (Value state : states)
      layerStates.push_back(
          b.slice(state, layer * directions, (layer + 1) * directions));
    Value layerHidden =
        lstm ? b.list(layerStates, stateList) : layerStates.front();
    Value layerParams =
        b.list(weights->slice(layer * perLayer, perLayer), tensorList);
    SmallVector<Type> results{layerOutput};
    for (Value state : layerStates)
      results.push_back(state.getType());
    SmallVector<Value> operands{sequence, layerHidden, layerParams};
    if (trainFlag)
      operands.push_back(trainFlag);
    TorchOp call =
        b.call(op.getName(), op.getOverload().value_or(""), results, operands,
               {b.arg(0), b.arg(1), b.arg(2), hasBiases, b.integer(1),
                b.builder.getF64FloatAttr(0.0),
                trainFlag ? b.arg(3) : Attribute(train), bidirectional,
                b.builder.getBoolAttr(false)});
    for (auto [k, state] : llvm::enumerate(finalStates))
      state.push_back(call->getResult(1 + k));
    sequence = call->getResult(0);
    // Dropout between layers, as ATen applies it (not after the last).
    if (layer + 1 < layers && dropout.getValueAsDouble() != 0 &&
        (trainFlag || train.getValue()))
      sequence = b.dropout(sequence, dropout, trainFlag, train);
  }
  Value output =
      batchFirst.getValue() ? b.transposeLeading(sequence) : sequence;
  op->getResult(0).replaceAllUsesWith(output);
  for (auto [k, parts] : llvm::enumerate(finalStates)) {
    Value result = op->getResult(1 + k);
    if (result.use_empty())
      continue;
    result.replaceAllUsesWith(
        b.concatenate(parts, tensorList, result.getType()));
  }
  op->erase();
  return true;
}

struct SplitRecurrentLayersPass
    : public mlir::memopt::impl::SplitRecurrentLayersBase<
          SplitRecurrentLayersPass> {
  void runOnOperation() override {
    SmallVector<TorchOp> stacks;
    getOperation().walk([&](TorchOp op) {
      if (lookupOperator(op.getName()).flops == FlopRule::Recurrent)
        stacks.push_back(op);
    });
    bool changed = false;
    for (TorchOp op : stacks)
      changed |= splitLayers(op);
    if (!changed)
      markAllAnalysesPreserved();
  }
};
} // namespace
