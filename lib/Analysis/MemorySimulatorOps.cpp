//===- MemorySimulatorOps.cpp - forward and backward of ops and regions ---===//
#include "KernelWorkspace.h"
#include "MemorySimulator.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/OperatorCatalog.h"
#include "memopt/Analysis/RegionState.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Runtime/PackedFormat.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;
using namespace mlir::memopt;

static int64_t getSavedInputBytes(Attribute policy, Type type);

/// The bytes of a gradient of `value` (of a parameter's, its `.grad`): the
/// value's own size on the device, 0 where unknown.
static int64_t getGradientBytes(Value value) {
  return std::max<int64_t>(getDeviceBytes(value.getType()), 0);
}

/// A tensor (or list of tensors) that can carry a gradient.
static bool isDifferentiableTensorLike(Type type) {
  if (auto list = dyn_cast<ListType>(type))
    type = list.getElementType();
  auto tensor = dyn_cast<TensorType>(type);
  return tensor && isDifferentiableElementType(tensor.getElementType());
}

/// The integer constant at argument `pos`, or `fallback`.
static int64_t getIntArg(TorchOp op, unsigned pos, int64_t fallback) {
  if (pos >= op.getArgs().size())
    return fallback;
  auto attr = dyn_cast<IntegerAttr>(op.getArgs()[pos]);
  return attr ? attr.getInt() : fallback;
}

/// Views whose result is not contiguous even when their operand is.
static bool makesNonContiguous(TorchOp op, const OperatorInfo &info) {
  switch (info.layout) {
  case LayoutRule::Transpose:
  case LayoutRule::Permute:
  case LayoutRule::MatrixTranspose:
  case LayoutRule::Strided:
    return true;
  // Slicing and splitting along a dimension other than the first.
  case LayoutRule::SliceDimAt1:
    return getIntArg(op, 1, 0) != 0;
  case LayoutRule::SliceDimAt2:
    return getIntArg(op, 2, 0) != 0;
  case LayoutRule::Inherit:
  case LayoutRule::KeepStrides:
  case LayoutRule::Dense:
  case LayoutRule::BatchFirstAt8: // result 0 only: isBatchFirstOutput
    return false;
  }
  llvm_unreachable("unknown layout rule");
}

/// A recurrent layer stack's batch-first output: the time-major sequence
/// transposed back, a view that reordering its leading dims (matmul's
/// reshape) copies.
static bool isBatchFirstOutput(TorchOp op, const OperatorInfo &info,
                               Value result) {
  if (info.layout != LayoutRule::BatchFirstAt8 || op->getNumResults() == 0 ||
      result != op->getResult(0))
    return false;
  ArrayRef<Attribute> args = op.getArgs().getValue();
  auto batchFirst = args.size() > 8 ? dyn_cast<BoolAttr>(args[8]) : BoolAttr();
  return batchFirst && batchFirst.getValue();
}

/// The order of the input's dims in the result of a transpose or permute of
/// a >= 3-d tensor (dim i of the result is dim order[i] of the input);
/// nullopt for other ops, lower ranks and dims that are not constants.
static std::optional<SmallVector<int64_t>>
getDimOrder(TorchOp op, const OperatorInfo &info) {
  if (info.layout != LayoutRule::Transpose &&
      info.layout != LayoutRule::Permute)
    return std::nullopt;
  auto type = op->getNumResults() == 1
                  ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                  : RankedTensorType();
  if (!type || type.getRank() < 3)
    return std::nullopt;
  int64_t rank = type.getRank();
  auto norm = [&](int64_t d) { return d < 0 ? d + rank : d; };
  SmallVector<int64_t> order;
  if (info.layout == LayoutRule::Transpose) {
    int64_t a = norm(getIntArg(op, 1, -1)), b = norm(getIntArg(op, 2, -1));
    if (a < 0 || b < 0 || a >= rank || b >= rank)
      return std::nullopt;
    order = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(order[a], order[b]);
    return order;
  }
  std::optional<SmallVector<int64_t>> dims = op.getConstantIntsArg(1);
  if (!dims || int64_t(dims->size()) != rank)
    return std::nullopt;
  for (int64_t d : *dims)
    order.push_back(norm(d));
  return order;
}

/// A transpose or permute of a >= 3-d tensor that reorders its leading
/// dims and keeps the last one in place (`x.transpose(0, 1)`): folding the
/// leading dims of the result into one (matmul's reshape) copies it.
static bool permutesLeadingDims(ArrayRef<int64_t> order) {
  int64_t rank = order.size();
  bool identity = llvm::equal(order, llvm::seq<int64_t>(0, rank));
  return !identity && order.back() == rank - 1;
}

/// One that swaps the last two dims and leaves the leading (batch) dims in
/// place: its result's batch dims fold into one exactly when its operand's
/// do.
static bool swapsTrailingDims(ArrayRef<int64_t> order) {
  int64_t rank = order.size();
  return llvm::equal(order.drop_back(2), llvm::seq<int64_t>(0, rank - 2)) &&
         order[rank - 2] == rank - 1 && order[rank - 1] == rank - 2;
}

/// The dims that permute `result` into a contiguous tensor, where known:
/// measured by the kernel probe (`dense_order`), or a transpose or permute
/// (`order`, dim i of the result is dim order[i] of its operand) of a value
/// whose own are known (a contiguous one's: none).
static std::optional<SmallVector<int64_t, 4>>
getDenseOrder(TorchOp op, Value result, Value alias,
              const std::optional<SmallVector<int64_t>> &order,
              const DenseSet<Value> &nonContiguous,
              const DenseMap<Value, SmallVector<int64_t, 4>> &denseOrders) {
  if (result == op->getResult(0))
    if (std::optional<ArrayRef<int64_t>> measured = op.getDenseOrder())
      return SmallVector<int64_t, 4>(*measured);
  if (!order || !alias)
    return std::nullopt;
  int64_t rank = order->size();
  SmallVector<int64_t, 4> from =
      llvm::to_vector<4>(llvm::seq<int64_t>(0, rank));
  if (auto known = denseOrders.find(alias); known != denseOrders.end())
    from = known->second;
  else if (nonContiguous.contains(alias))
    return std::nullopt;
  if (int64_t(from.size()) != rank)
    return std::nullopt;
  // result.permute(X) is operand.permute(from) where order[X[j]] = from[j].
  SmallVector<int64_t> inverse = invertPermutationVector(*order);
  SmallVector<int64_t, 4> dense;
  for (int64_t dim : from)
    dense.push_back(inverse[dim]);
  return dense;
}

void MemorySimulator::forwardListOperation(TorchOp op) {
  Storages all;
  bool grad = false, strided = false, folds = false;
  for (Value operand : op.getOperands()) {
    if (!isa<ListType>(operand.getType()))
      continue;
    all.append(storage.heldBy(operand));
    grad |= requiresGrad(operand);
    strided |= nonContiguous.contains(operand);
    folds |= foldCopies.contains(operand);
  }
  auto mark = [&](Value value) {
    if (grad)
      gradValues.insert(value);
    if (strided)
      nonContiguous.insert(value);
    if (folds)
      foldCopies.insert(value);
  };
  // extend / add_ / insert write their first operand: it holds the others'
  // elements from now on.
  std::optional<ArrayRef<int64_t>> mutates = op.getMutates();
  if (mutates && llvm::is_contained(*mutates, 0)) {
    Value target = op->getOperand(0);
    for (Value operand : op->getOperands().drop_front())
      if (isa<ListType>(operand.getType()))
        storage.holdAlso(target, storage.heldBy(operand));
    mark(target);
    all = storage.heldBy(target);
  }
  for (Value result : op->getResults()) {
    storage.define(result, all);
    mark(result);
  }
}

void MemorySimulator::forwardTorchOp(TorchOp op, MemoryPhase phase,
                                     std::vector<Node> &nodes) {
  const OperatorInfo &info = lookupOperator(op.getName());
  SimulatorRule rule = info.simulator;
  if (isTensorListOperation(op)) {
    forwardListOperation(op);
    return;
  }
  // Sizes, scalars, prints: no tensor memory (a tuple is typed
  // !memopt.script but may hold tensors).
  if (rule != SimulatorRule::TupleConstruct &&
      llvm::none_of(op->getResultTypes(), isTensorLike))
    return;
  if (rule == SimulatorRule::ListConstruct ||
      rule == SimulatorRule::TupleConstruct) {
    Storages all;
    bool grad = false, strided = false;
    for (Value operand : op.getOperands()) {
      all.append(storage.heldBy(operand));
      grad |= requiresGrad(operand);
      strided |= nonContiguous.contains(operand);
    }
    storage.define(op->getResult(0), all);
    if (grad)
      gradValues.insert(op->getResult(0));
    if (strided)
      nonContiguous.insert(op->getResult(0));
    return;
  }
  if (rule == SimulatorRule::Append && op->getNumOperands() == 2) {
    // The list keeps the element alive until the list's last use.
    Value list = op->getOperand(0), element = op->getOperand(1);
    storage.holdAlso(list, storage.heldBy(element));
    if (requiresGrad(element))
      gradValues.insert(list);
    if (nonContiguous.contains(element))
      nonContiguous.insert(list);
    storage.define(op->getResult(0), storage.heldBy(list));
    if (requiresGrad(list))
      gradValues.insert(op->getResult(0));
    gradAlias[op->getResult(0)] = list;
    return;
  }
  if (rule == SimulatorRule::UncheckedCast && op->getNumOperands() == 1) {
    // Optional[Tensor] -> Tensor: the same value.
    Value from = op->getOperand(0);
    storage.define(op->getResult(0), storage.heldBy(from));
    if (requiresGrad(from))
      gradValues.insert(op->getResult(0));
    if (nonContiguous.contains(from))
      nonContiguous.insert(op->getResult(0));
    if (foldCopies.contains(from))
      foldCopies.insert(op->getResult(0));
    gradAlias[op->getResult(0)] = from;
    return;
  }
  if (rule == SimulatorRule::Unpack || rule == SimulatorRule::Index) {
    // An element of a list or tuple built in this function is that value
    // (same storage, same gradient); a part of a list an op returned (chunk,
    // split, unbind) holds the list's storages, and its gradient is one of
    // those the op's backward collects.
    // Positions of a concatenation, copy or slice of lists are those of
    // the list they came from.
    Value unpacked = op->getOperand(0);
    bool indexed = rule == SimulatorRule::Index;
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      auto [list, position] = traceListPosition(
          unpacked, indexed ? getIntArg(op, 1, -1) : int64_t(i));
      Value element = getListElementAt(list, position, op);
      Value from = element ? element : list;
      if (!storage.isHeld(from)) {
        // The element (or the list it came from) died as a value; the list
        // read still holds its storages.
        Storages held;
        for (unsigned id : storage.definedWith(from))
          if (storage.getRefs(id) > 0)
            held.push_back(id);
        storage.define(result, held);
      } else {
        storage.define(result, storage.heldBy(from));
      }
      // An element of a list mapped element by element needs a gradient
      // where its source does (an MSE loss's broadcast target: none).
      Value source =
          element ? Value()
                  : TorchOp::getElementwiseListSource(
                        list, indexed ? getIntArg(op, 1, -1) : int64_t(i));
      if (source ? requiresGrad(source) : requiresGrad(from))
        gradValues.insert(result);
      if (nonContiguous.contains(from))
        nonContiguous.insert(result);
      if (foldCopies.contains(from))
        foldCopies.insert(result);
      if (element)
        gradAlias[result] = element;
      else
        listParts[list].push_back(result);
    }
    return;
  }

  if (llvm::none_of(op->getOperandTypes(), [](Type type) {
        auto script = dyn_cast<ScriptType>(type);
        return isTensorLike(type) ||
               (script && script.getName().contains("Tensor"));
      })) {
    // Factories (empty, zeros, rand...): new tensors that need no grad.
    // Tensor constants live in the graph, like buffers.
    bool constant = rule == SimulatorRule::Constant;
    for (Value result : op->getResults())
      if (isTensorLike(result.getType()))
        storage.define(result,
                       storage.newStorage(bytesOf(result, op), constant));
    storage.record(op, phase);
    return;
  }
  OpMemoryEffects fx = getOpMemoryEffects(
      op, [&](Value v) { return requiresGrad(v); },
      [&](Value v) { return !nonContiguous.contains(v); },
      [&](Value v) { return foldCopies.contains(v); },
      /*fusedDropoutAttention=*/options.device == TrainingDevice::CUDA);
  if (!fx.known)
    markUnknown(op);
  // CUDA's dropout (native_dropout) keeps its mask as bool, a byte per
  // value, where the table, made on the CPU, has the noise in the input's
  // dtype (bench/cuda_saved_bytes.py measures both).
  if (options.device == TrainingDevice::CUDA &&
      rule == SimulatorRule::Dropout && op->getNumResults())
    if (int64_t numel = getNumElements(op->getResult(0).getType()); numel >= 0)
      for (int64_t &bytes : fx.savedNewBytes)
        if (bytes >= 0)
          bytes = numel;
  Value first;
  for (Value operand : op.getOperands())
    if (isa<TensorType>(operand.getType())) {
      first = operand;
      break;
    }
  bool record_ = gradEnabled && fx.differentiable && !gradDeadEnds.contains(op);
  int64_t before = storage.getLiveBytes();
  for (auto [result, alias] : llvm::zip(op->getResults(), fx.resultAliases)) {
    if (!isTensorLike(result.getType()))
      continue;
    if (alias)
      storage.define(result, storage.heldBy(alias));
    else
      storage.define(result, storage.newStorage(bytesOf(result, op)));
    // Elementwise results keep the strides of their input.
    bool dense = info.layout == LayoutRule::Dense;
    bool batchFirst = isBatchFirstOutput(op, info, result);
    std::optional<SmallVector<int64_t>> order = getDimOrder(op, info);
    // A layout known exactly: contiguous again (a transpose undone), or
    // dense with its dims permuted (flash attention's output).
    std::optional<SmallVector<int64_t, 4>> permuted =
        getDenseOrder(op, result, alias, order, nonContiguous, denseOrders);
    bool contiguousAgain = permuted && isIdentityPermutation(*permuted);
    // How a measured permuted layout's dims came from the dense ones, as
    // `order` says for a transpose.
    std::optional<SmallVector<int64_t>> measuredOrder;
    if (permuted && !contiguousAgain) {
      denseOrders[result] = *permuted;
      if (!order)
        measuredOrder = invertPermutationVector(*permuted);
    }
    if (!contiguousAgain &&
        (makesNonContiguous(op, info) || batchFirst || permuted ||
         (alias && nonContiguous.contains(alias)) ||
         (!alias && first && nonContiguous.contains(first) &&
          result.getType() == first.getType() && !dense)))
      nonContiguous.insert(result);
    if (!contiguousAgain &&
        ((order && permutesLeadingDims(*order)) || batchFirst ||
         (measuredOrder && permutesLeadingDims(*measuredOrder)) ||
         (alias && !info.isPermutation() && foldCopies.contains(alias) &&
          result.getType() == alias.getType()) ||
         (alias && order && foldCopies.contains(alias) &&
          swapsTrailingDims(*order)) ||
         (!alias && first && foldCopies.contains(first) &&
          result.getType() == first.getType() && !dense &&
          info.layout != LayoutRule::KeepStrides)))
      foldCopies.insert(result);
    if (record_ && isDifferentiableTensorLike(result.getType()))
      gradValues.insert(result);
  }

  SmallVector<unsigned> temps;
  Node node{op, {}, fx.grads, {}};
  node.backwardHighWater = fx.backwardHighWater;
  node.backwardAboveGradients = fx.backwardAboveGradients;
  node.reducedGrads = fx.reducedPassThrough;
  node.viewGrads = fx.viewGrads;
  node.unreducedGrads = fx.unreducedGrads;
  SavedFormAttr form = op.getSavedFormAttr();
  // A masked dropout keeps a bit per value of its noise, not the noise
  // (the runtime leaves a strided input to at::dropout: where eager lays out
  // that noise differs between PyTorch versions).
  bool maskedNoise = record_ && form && form.getForm() == SavedForm::mask &&
                     rule == SimulatorRule::Dropout && op->getNumOperands() &&
                     !nonContiguous.contains(op->getOperand(0));
  for (int64_t bytes : fx.savedNewBytes) {
    if (bytes < 0)
      markUnknown(op);
    unsigned id = storage.newStorage(bytes);
    storage.retain(id);
    // Without grad the op still computes it (dropout's noise), then drops it.
    (record_ && !maskedNoise ? node.saved : temps).push_back(id);
  }
  if (maskedNoise)
    saveMaskOf(op->getOperand(0), node);
  if (record_) {
    for (auto [value, fresh] : node.grads)
      if (params.contains(value)) {
        StringAttr path = cast<ParamOp>(value.getDefiningOp()).getPathAttr();
        if (!collecting.contains(path))
          ++pendingParamGrads[path];
      }
    // saved_input: autograd keeps operand 0 packed, not the operand itself.
    CompressPolicyAttr packed = op.getSavedInputAttr();
    Value packedInput =
        packed && op->getNumOperands() ? op->getOperand(0) : Value();
    // saved_form: a bit per value instead of ReLU's result; nothing of a
    // lean max-pool's input.
    Value formValue =
        form && op->getNumOperands() ? op->getOperand(0) : Value();
    for (Value value : fx.savedValues) {
      if (form && (value == formValue ||
                   (op->getNumResults() == 1 && value == op->getResult(0)))) {
        if (form.getForm() == SavedForm::mask)
          saveMaskOf(value, node);
        continue;
      }
      if (value == packedInput) {
        unsigned id =
            storage.newStorage(getSavedInputBytes(packed, value.getType()));
        storage.retain(id);
        node.saved.push_back(id);
        node.unpackBytes = bytesOf(value, op);
        continue;
      }
      bool counted = false;
      // An element of a list operand, dead as a value after the list was
      // built: the list still holds its storages.
      Storages held = storage.heldBy(value);
      if (!storage.isHeld(value))
        for (unsigned id : storage.definedWith(value))
          if (storage.getRefs(id) > 0)
            held.push_back(id);
      for (unsigned id : held)
        if (!storage.isResident(id)) {
          storage.retain(id);
          node.saved.push_back(id);
          counted = true;
        }
      if (counted && recordsSaved(phase))
        model.savedValues[op].push_back(value);
    }
    if (recordsSaved(phase))
      model.savedBytes[op] = storage.getUniqueBytes(node.saved);
    for (auto [value, fresh] : node.grads)
      node.gradTargets.push_back(versionOf(value));
    noteInPlaceWrite(op, &node);
    nodes.push_back(std::move(node));
  }
  auto isContiguous = [&](Value v) { return !nonContiguous.contains(v); };
  int64_t high = getForwardHighWater(op, options);
  storage.record(op, phase,
                 std::max(high < 0 ? 0 : before + high - storage.getLiveBytes(),
                          getContiguousCopyBytes(op, isContiguous, options)));
  for (unsigned id : temps)
    storage.release(id);
}

void MemorySimulator::saveMaskOf(Value value, Node &node) {
  int64_t numel = std::max<int64_t>(getNumElements(value.getType()), 0);
  // One bit per value, as a bit-packed tensor.
  unsigned id = storage.newStorage(
      ::memopt::packed::maxPayloadBytes(::memopt::packed::Kind::Bit, numel));
  storage.retain(id);
  node.saved.push_back(id);
  // The runtime (MaskBits.h) unpacks 2^18 values at a time, a bool each,
  // and builds the gradient chunk by chunk through one more such buffer;
  // a float32 / float64 dropout's gradient takes one pass, with no buffer.
  auto tensor = cast<TensorType>(value.getType());
  Type element = tensor.getElementType();
  bool onePass = node.op && isa<TorchOp>(node.op) &&
                 lookupOperator(cast<TorchOp>(node.op).getName()).simulator ==
                     SimulatorRule::Dropout &&
                 (element.isF32() || element.isF64());
  node.unpackBytes = onePass ? 0
                             : std::min<int64_t>(numel, int64_t(1) << 18) *
                                   (1 + getElementBytes(element));
}

/// Device bytes a region input takes while saved under `policy`.
static int64_t getSavedInputBytes(Attribute policy, Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (auto compress = dyn_cast<CompressPolicyAttr>(policy)) {
    if (!ranked || !ranked.hasStaticShape())
      return 0;
    return PackedTensorType::get(type.getContext(), ranked.getShape(),
                                 ranked.getElementType(), compress.getKind())
        .getPackedBytes();
  }
  return 0; // offloaded: none on the device
}

void MemorySimulator::inheritLayout(Value from, Value to) {
  if (nonContiguous.contains(from))
    nonContiguous.insert(to);
  if (foldCopies.contains(from))
    foldCopies.insert(to);
}

int64_t MemorySimulator::getGeneratorStateBytes(CheckpointOp cp) const {
  if (options.device != TrainingDevice::CPU)
    return 0;
  bool draws = cp.getBodyBlock()
                   .walk([](TorchOp op) {
                     return drawsRandomNumbers(op) ? WalkResult::interrupt()
                                                   : WalkResult::advance();
                   })
                   .wasInterrupted();
  return draws ? options.cpuGeneratorStateBytes : 0;
}

void MemorySimulator::forwardCheckpoint(CheckpointOp cp, MemoryPhase phase,
                                        std::vector<Node> &nodes) {
  Block &body = cp.getBodyBlock();
  bool anyGrad =
      gradEnabled &&
      (llvm::any_of(cp.getInputs(), [&](Value v) { return requiresGrad(v); }) ||
       llvm::any_of(body.getOps<ParamOp>(),
                    [](ParamOp p) { return !p.getFrozen(); }));
  Node node{cp, {}, {}, {}};
  // The call is one more use of the parameters whose gradient it returns.
  if (anyGrad)
    for (StringAttr path : getReturnedParams(cp))
      if (!collecting.contains(path))
        ++pendingParamGrads[path];
  for (auto [input, policy] : llvm::zip(cp.getInputs(), cp.getPolicies())) {
    node.inputStorages.push_back(storage.heldBy(input));
    if (!anyGrad)
      continue;
    if (requiresGrad(input))
      node.grads.push_back({input, true});
    if (isa<KeepPolicyAttr>(policy)) {
      for (unsigned id : storage.heldBy(input))
        if (!storage.isResident(id)) {
          storage.retain(id);
          node.saved.push_back(id);
        }
    } else if (isa<CompressPolicyAttr>(policy)) {
      unsigned id =
          storage.newStorage(getSavedInputBytes(policy, input.getType()));
      storage.retain(id);
      node.saved.push_back(id);
    } else if (std::optional<uint64_t> held = cp.getOffloadHeldFor();
               held && phase == MemoryPhase::Forward &&
               isa_and_nonnull<func::FuncOp>(cp->getParentOp())) {
      // The copy to the host reads the device tensor while the next ops
      // run; the allocator keeps it until then.
      CopyHold hold{cp, static_cast<unsigned>(*held), {}};
      for (unsigned id : storage.heldBy(input))
        if (!storage.isResident(id)) {
          storage.retain(id);
          hold.storages.push_back(id);
        }
      if (!hold.storages.empty())
        copyHolds.push_back(std::move(hold));
    }
  }
  // The runtime's copy of the state the region writes, kept for backward.
  if (int64_t state = anyGrad ? getStateBytes(cp) : 0) {
    node.saved.push_back(storage.newStorage(state));
    storage.retain(node.saved.back());
  }
  // And of the CPU generator's state, to replay the region's random draws
  // in its recompute (a CUDA device's generator state is host memory).
  if (int64_t rng = anyGrad ? getGeneratorStateBytes(cp) : 0) {
    node.saved.push_back(storage.newStorage(rng));
    storage.retain(node.saved.back());
  }
  // Forward of the body as eager runs it (grad on, the inputs requiring
  // grad where they do: CheckpointFunction.cpp, runAsEager): what its ops
  // save stays until the region's end, where the runtime drops the graph.
  // Without grad, intermediates die at their last use.
  bool wasEnabled = gradEnabled;
  gradEnabled = anyGrad;
  // What the dropped graph noted for backward is no backward's: its
  // parameter uses get no gradient, and the versions of its values written
  // in place are the recompute's to note again (from its own first op on).
  // The gradient flags it gives the body's values are the ones the
  // recompute gives them; an in-place write's chain stops at a body
  // argument, so no value outside the body gets one.
  DenseMap<StringAttr, unsigned> outerPending = pendingParamGrads;
  DenseMap<Value, Value> outerVersions = latestVersion;
  for (auto [arg, input] : llvm::zip(body.getArguments(), cp.getInputs())) {
    storage.define(arg, storage.heldBy(input));
    inheritLayout(input, arg);
    if (anyGrad && requiresGrad(input))
      gradValues.insert(arg);
  }
  std::vector<Node> dropped;
  ++droppedGraphDepth;
  forwardBlock(body, phase, dropped);
  --droppedGraphDepth;
  pendingParamGrads = std::move(outerPending);
  latestVersion = std::move(outerVersions);
  gradEnabled = wasEnabled;
  Operation *yield = body.getTerminator();
  for (auto [result, value] :
       llvm::zip(cp->getResults(), yield->getOperands())) {
    storage.define(result, storage.heldBy(value));
    if (anyGrad && isDifferentiableTensorLike(result.getType()))
      gradValues.insert(result);
  }
  for (Value value : yield->getOperands())
    storage.drop(value);
  for (const Node &inner : dropped)
    for (unsigned id : inner.saved)
      storage.release(id);
  if (anyGrad) {
    if (recordsSaved(phase))
      model.savedBytes[cp] = storage.getUniqueBytes(node.saved);
    nodes.push_back(std::move(node));
  }
  storage.record(cp, phase);
}

void MemorySimulator::noteInPlaceWrite(TorchOp op, Node *node) {
  std::optional<ArrayRef<int64_t>> mutates = op.getMutates();
  std::optional<ArrayRef<int64_t>> views = op.getViews();
  if (!mutates || !views || views->empty() || (*views)[0] < 0 ||
      !llvm::is_contained(*mutates, (*views)[0]) ||
      !requiresGrad(op->getResult(0)))
    return;
  // The written tensor and those it is a view of, nearest first.
  SmallVector<Value> chain{op->getOperand((*views)[0])};
  while (auto view = chain.back().getDefiningOp<TorchOp>()) {
    std::optional<ArrayRef<int64_t>> of = view.getViews();
    unsigned index = cast<OpResult>(chain.back()).getResultNumber();
    if (!of || index >= of->size() || (*of)[index] < 0)
      break;
    chain.push_back(view->getOperand((*of)[index]));
  }
  if (node && chain.back().getType() != chain.front().getType())
    node->viewWriteBytes = std::max<int64_t>(bytesOf(chain.back(), op), 0);
  for (Value value : chain) {
    gradValues.insert(value);
    latestVersion[value] = op->getResult(0);
  }
}

Value MemorySimulator::gradKey(Value value) const {
  for (auto it = gradAlias.find(value); it != gradAlias.end();
       it = gradAlias.find(value))
    value = it->second;
  return value;
}

void MemorySimulator::giveGrad(Value value, unsigned grad,
                               SmallVectorImpl<unsigned> &temps) {
  value = gradKey(value);
  // Parameter gradients are added into the resident .grad in place once
  // every use of the parameter produced its gradient (autograd's
  // AccumulateGrad waits for all of them, holding the first, and adds each
  // later one to it out of place: a third tensor while both live, as
  // measured); a second gradient of an activation is summed into its
  // buffer.
  if (params.contains(value)) {
    StringAttr path = cast<ParamOp>(value.getDefiningOp()).getPathAttr();
    if (collecting.contains(path)) {
      // Summed (out of place) for the region call to return.
      auto [it, first] = collected.try_emplace(path, value, grad);
      if (!first) {
        temps.push_back(grad);
        unsigned &sum = it->second.second;
        if (!canAddInPlace(sum, getGradientBytes(value))) {
          temps.push_back(sum);
          sum = newParamGradSum(value);
        }
      }
      return;
    }
    unsigned &pending = pendingParamGrads[path];
    pending = pending ? pending - 1 : 0;
    auto held = heldParamGrads.find(path);
    if (pending && held == heldParamGrads.end()) {
      heldParamGrads[path] = grad;
      storage.noteGradOf(value, grad);
      return;
    }
    if (held != heldParamGrads.end()) {
      laterParamGrads.push_back({value, grad, pending == 0});
      return;
    }
    storage.noteGradOf(value, grad);
    if (options.gradBuffers == GradBuffers::Allocated)
      allocateParamGrad(value, grad, temps);
    else
      temps.push_back(grad);
    return;
  }
  auto [it, first] = gradOf.try_emplace(value, grad);
  if (first) {
    storage.noteGradOf(value, grad);
    return;
  }
  // A second gradient: autograd (2.x) adds it in place when it alone holds
  // the first one's storage (InputBuffer::accumulate); a first gradient
  // that is a slice of a bigger one (cat's backward) or shared (add's) is
  // replaced by a new sum, which lets the shared buffer go. PyTorch 1.13
  // always makes a new sum.
  unsigned old = it->second;
  int64_t bytes = getGradientBytes(value);
  if (canAddInPlace(old, bytes)) {
    temps.push_back(grad);
    return;
  }
  // Or into the second one when it alone holds that (a fresh slice
  // gradient arriving after the caller's loss gradient was passed on).
  if (canAddInPlace(grad, bytes)) {
    it->second = grad;
    storage.noteGradOf(value, grad);
    storage.release(old);
    return;
  }
  // Both stay live beside the sum until the node's backward is done.
  temps.push_back(grad);
  temps.push_back(old);
  unsigned sum = storage.newStorage(bytes);
  storage.retain(sum);
  it->second = sum;
  storage.noteGradOf(value, sum);
}

bool MemorySimulator::addedIntoGrad(Value param, unsigned block,
                                    SmallVectorImpl<unsigned> &temps) {
  if (!params.contains(param))
    return false;
  StringAttr path = cast<ParamOp>(param.getDefiningOp()).getPathAttr();
  if (collecting.contains(path))
    return false; // a region's backward returns it: summed as autograd does
  // Nothing for autograd to hold for the parameter's other use (a tied
  // embedding).
  unsigned &pending = pendingParamGrads[path];
  pending = pending ? pending - 1 : 0;
  storage.noteGradOf(param, block);
  temps.push_back(block);
  return true;
}

bool MemorySimulator::canAddInPlace(unsigned grad, int64_t bytes) const {
  return options.accumulateInPlace && storage.getRefs(grad) == 1 &&
         storage.getBytes(grad) == bytes && !viewGradStorages.contains(grad);
}

unsigned MemorySimulator::newParamGradSum(Value param) {
  unsigned sum = storage.newStorage(getGradientBytes(param));
  storage.retain(sum);
  storage.noteGradOf(param, sum);
  return sum;
}

void MemorySimulator::sumHeldParamGrads(Operation *op, bool oneByOne) {
  if (laterParamGrads.empty())
    return;
  // Autograd adds each later gradient to the held one as it reaches the
  // parameter's buffer and then frees both: one sum at a time. A kernel
  // returns all its gradients before the first sum; a backward of many
  // nodes (`oneByOne`: a cell, a measured composite) makes each gradient
  // just before it is summed.
  int64_t base = storage.getLiveBytes();
  if (oneByOne)
    for (const LaterParamGrad &later : laterParamGrads)
      base -= storage.getBytes(later.grad);
  int64_t high = base;
  SmallVector<unsigned> temps;
  for (const LaterParamGrad &later : laterParamGrads) {
    StringAttr path = cast<ParamOp>(later.param.getDefiningOp()).getPathAttr();
    unsigned &held = heldParamGrads[path];
    temps.push_back(later.grad);
    int64_t made = oneByOne ? storage.getBytes(later.grad) : 0;
    if (!canAddInPlace(held, getGradientBytes(later.param))) {
      temps.push_back(held);
      held = newParamGradSum(later.param);
      made += storage.getBytes(held);
    }
    high = std::max(high, base + made);
  }
  storage.recordHigh(op, MemoryPhase::Backward, high);
  for (unsigned id : temps)
    storage.release(id);
  temps.clear();
  for (const LaterParamGrad &later : laterParamGrads) {
    if (!later.last)
      continue;
    StringAttr path = cast<ParamOp>(later.param.getDefiningOp()).getPathAttr();
    unsigned total = heldParamGrads[path];
    heldParamGrads.erase(path);
    if (options.gradBuffers == GradBuffers::Allocated)
      allocateParamGrad(later.param, total, temps);
    else
      temps.push_back(total);
  }
  laterParamGrads.clear();
  for (unsigned id : temps)
    storage.release(id);
}

void MemorySimulator::allocateParamGrad(Value param, unsigned grad,
                                        SmallVectorImpl<unsigned> &temps) {
  // AccumulateGrad with `.grad` None: it takes the gradient's storage as
  // `.grad` when nothing else holds it and it has the parameter's size,
  // else it copies it. Either way `.grad` outlives the step: never released.
  int64_t bytes = getGradientBytes(param);
  if (storage.getRefs(grad) == 1 && storage.getBytes(grad) == bytes)
    return;
  storage.retain(storage.newStorage(bytes));
  temps.push_back(grad);
}

void MemorySimulator::releaseGrad(Value value) {
  auto it = gradOf.find(gradKey(value));
  if (it == gradOf.end())
    return;
  storage.release(it->second);
  gradOf.erase(it);
}

/// Bytes of the gradient an elementwise op computes for its broadcast
/// operand `value` (layer scale `gamma * x`, `x * w` with w of shape
/// [C, 1, 1]) at the result's shape: autograd reduces it to the operand's
/// shape only after the node returns (validate_outputs' sum_to), so it is
/// alive together with the node's other gradients. 0 when `value` is not
/// broadcast against another operand of the result's shape.
static int64_t unreducedGradBytes(Operation *op, Value value) {
  auto torchOp = dyn_cast<TorchOp>(op);
  if (!torchOp || op->getNumResults() != 1 ||
      lookupOperator(torchOp.getName()).cost != CostClass::Elementwise)
    return 0;
  auto result = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  auto operand = dyn_cast<RankedTensorType>(value.getType());
  if (!result || !operand || !result.hasStaticShape() ||
      !operand.hasStaticShape() || operand.getShape() == result.getShape() ||
      operand.getRank() > result.getRank())
    return 0;
  // Right-aligned, every operand dimension equal to the result's or 1.
  ArrayRef<int64_t> from = operand.getShape(), to = result.getShape();
  for (size_t i = 0; i < from.size(); ++i) {
    int64_t dim = from[from.size() - 1 - i];
    if (dim != 1 && dim != to[to.size() - 1 - i])
      return 0;
  }
  bool fullPartner = llvm::any_of(op->getOperands(), [&](Value other) {
    auto type = dyn_cast<RankedTensorType>(other.getType());
    return other != value && type && type.getShape() == to;
  });
  if (!fullPartner)
    return 0;
  return result.getNumElements() * getElementBytes(operand.getElementType());
}

void MemorySimulator::backward(std::vector<Node> &nodes) {
  for (Node &node : llvm::reverse(nodes)) {
    if (auto cp = dyn_cast<CheckpointOp>(node.op)) {
      prefetchTriggeredBy(cp, nodes);
      backwardCheckpoint(node);
      continue;
    }
    // The gradients this node consumes: of its results, and of the parts
    // unpacked from a list it returned.
    SmallVector<Value> outputs;
    for (Value result : node.op->getResults()) {
      outputs.push_back(gradKey(result));
      for (Value part : listParts.lookup(result))
        outputs.push_back(gradKey(part));
    }
    std::optional<unsigned> incoming;
    for (Value output : outputs)
      if (auto it = gradOf.find(output); it != gradOf.end()) {
        incoming = it->second;
        break;
      }
    SmallVector<unsigned> temps;
    if (incoming && node.unpackBytes) {
      // Unpack the packed saved input for this backward only.
      temps.push_back(storage.newStorage(node.unpackBytes));
      storage.retain(temps.back());
    }
    if (incoming && node.viewWriteBytes) {
      temps.push_back(storage.newStorage(node.viewWriteBytes));
      storage.retain(temps.back());
    }
    int64_t before = storage.getLiveBytes();
    // Whether something besides this node holds its incoming gradient (a
    // region, for its output's; the caller, for a returned value's): it
    // then stays live through the backward.
    auto nodeOp = dyn_cast<TorchOp>(node.op);
    bool measuredComposite = nodeOp && nodeOp.getMeasuredSavesAttr();
    bool incomingHeld = incoming && storage.getRefs(*incoming) > 1;
    if (incoming)
      for (auto [index, entry] : llvm::enumerate(node.grads)) {
        auto [value, newBuffer] = entry;
        // A write through a view hands its source a clone of the slice of
        // the gradient (CopySlices), where a write in place passes it on.
        bool fresh = newBuffer || node.viewWriteBytes > 0;
        Value target =
            index < node.gradTargets.size() ? node.gradTargets[index] : value;
        // Written into a resident `.grad`: no bytes beyond it.
        bool intoGrad = false;
        if (auto torchOp = dyn_cast<TorchOp>(node.op); torchOp && fresh)
          intoGrad = isGradientWrittenIntoGrad(torchOp, value, options);
        unsigned grad = !fresh     ? *incoming
                        : intoGrad ? storage.newStorage(0)
                                   : storage.newStorage(bytesOf(value, node.op));
        storage.retain(grad);
        // A composite the probe measured (a cell: linears inside) may
        // hand its parameters' gradients through views: never taken as
        // added to in place.
        if (fresh && !intoGrad &&
            (llvm::is_contained(node.viewGrads, value) || measuredComposite))
          viewGradStorages.insert(grad);
        if (intoGrad && addedIntoGrad(gradKey(value), grad, temps))
          continue;
        bool reducedByAutograd = llvm::is_contained(node.reducedGrads, value);
        int64_t unreduced = fresh && !reducedByAutograd
                                ? unreducedGradBytes(node.op, value)
                                : 0;
        for (auto [of, bytes] : node.unreducedGrads)
          if (fresh && of == value)
            unreduced = std::max(unreduced, bytes);
        if (unreduced) {
          temps.push_back(storage.newStorage(unreduced));
          storage.retain(temps.back());
        }
        giveGrad(target, grad, temps);
      }
    int64_t high = -1, measuredWhole = -1;
    if (auto torchOp = dyn_cast<TorchOp>(node.op); torchOp && incoming) {
      // Whether argument `pos` (a tensor, or any element of a list)
      // gets a gradient.
      auto gets = [&](unsigned pos) {
        Value arg = torchOp.getOperandArg(pos);
        if (!arg)
          return false;
        SmallVector<Value> elements = getListElements(arg, torchOp);
        return llvm::any_of(node.grads, [&](auto &grad) {
          return llvm::is_contained(elements, grad.first);
        });
      };
      high = getBackwardHighWater(torchOp, gets(0), gets(1), gets(2), options);
      // A backward formula's temporaries (a division's), from the table;
      // those beside the gradients are above what is live now that the
      // gradients are.
      if (high < 0 && options.kernelWorkspaces) {
        high = node.backwardHighWater;
        if (high < 0 && node.backwardAboveGradients > 0)
          high = storage.getLiveBytes() - before + node.backwardAboveGradients;
      }
      if (torchOp.getMeasuredSavesAttr()) {
        measuredWhole = high;
        KernelHighWaterAttr marks = torchOp.getHighWaterAttr();
        if (incomingHeld && marks && marks.getBackwardHeld() >= 0)
          measuredWhole = marks.getBackwardHeld();
      }
      high = std::max(high < 0 ? 0 : before + high - storage.getLiveBytes(),
                      getContiguousCopyBytes(
                          torchOp,
                          [&](Value v) { return !nonContiguous.contains(v); },
                          options));
    }
    // A backward the probe measured whole (a recurrent stack's, a kept
    // branch's, an unknown operator's) frees its saved state as it makes
    // the gradients: its mark (above `before`, counting them) is the
    // node's peak, not the sum of every gradient and every saved byte.
    if (measuredWhole >= 0)
      storage.recordHigh(node.op, MemoryPhase::Backward,
                         before + measuredWhole);
    else
      storage.record(node.op, MemoryPhase::Backward,
                     std::max<int64_t>(high, 0));
    for (unsigned id : temps)
      storage.release(id);
    for (Value output : outputs)
      releaseGrad(output);
    for (unsigned id : node.saved)
      storage.release(id);
    sumHeldParamGrads(node.op, /*oneByOne=*/measuredWhole >= 0);
  }
}

void MemorySimulator::prefetchTriggeredBy(CheckpointOp trigger,
                                          ArrayRef<Node> nodes) {
  for (const Node &node : nodes) {
    auto cp = dyn_cast<CheckpointOp>(node.op);
    if (!cp || cp == trigger || cp.getPrefetchAt() != trigger.getLabel())
      continue;
    for (auto [k, input] : llvm::enumerate(cp.getInputs())) {
      if (!isa<OffloadPolicyAttr>(cp.getPolicies()[k]))
        continue;
      unsigned id = storage.newStorage(bytesOf(input, cp));
      storage.retain(id);
      prefetchedInputs[cp][k] = id;
    }
  }
}

void MemorySimulator::backwardCheckpoint(Node &node) {
  auto cp = cast<CheckpointOp>(node.op);
  Block &body = cp.getBodyBlock();
  // Restore the inputs (decompress / prefetch into new buffers, unless a
  // later region's backward prefetched them already); they stay until the
  // region's backward returns, then recompute.
  SmallVector<unsigned> restored;
  DenseMap<unsigned, unsigned> prefetched = prefetchedInputs.lookup(cp);
  prefetchedInputs.erase(cp);
  for (auto [k, input] : llvm::enumerate(cp.getInputs())) {
    BlockArgument arg = body.getArgument(k);
    if (isa<KeepPolicyAttr>(cp.getPolicies()[k])) {
      // The kept input itself, strides and all (a transposed view makes
      // the body's products copy it again in the recompute).
      storage.define(arg, node.inputStorages[k]);
      inheritLayout(input, arg);
    } else if (auto it = prefetched.find(k); it != prefetched.end()) {
      restored.push_back(it->second); // retained when prefetched
      storage.define(arg, restored.back());
    } else {
      restored.push_back(storage.newStorage(bytesOf(input, cp)));
      storage.retain(restored.back());
      storage.define(arg, restored.back());
    }
    if (requiresGrad(input))
      gradValues.insert(arg);
  }
  // The recompute writes a second copy of that state, not the module's.
  if (int64_t state = getStateBytes(cp)) {
    restored.push_back(storage.newStorage(state));
    storage.retain(restored.back());
  }
  // The generator's state at the start of backward, set back once the
  // recompute has drawn.
  std::optional<unsigned> generatorState;
  if (int64_t rng = getGeneratorStateBytes(cp)) {
    generatorState = storage.newStorage(rng);
    storage.retain(*generatorState);
  }
  DenseSet<StringAttr> outerCollecting = std::move(collecting);
  auto outerCollected = std::move(collected);
  collecting.clear();
  collected.clear();
  for (StringAttr path : getReturnedParams(cp))
    collecting.insert(path);
  std::vector<Node> inner;
  forwardBlock(body, MemoryPhase::Recompute, inner);
  if (generatorState)
    storage.release(*generatorState);
  Operation *yield = body.getTerminator();
  SmallVector<unsigned> temps;
  for (auto [result, value] : llvm::zip(cp->getResults(), yield->getOperands()))
    if (auto it = gradOf.find(gradKey(result)); it != gradOf.end()) {
      storage.retain(it->second);
      giveGrad(value, it->second, temps);
    }
  // The runtime drops the recomputed outputs before their backward: only
  // what the region's ops saved stays.
  for (Value value : yield->getOperands())
    storage.drop(value);
  backward(inner);
  auto returned = std::move(collected);
  collecting = std::move(outerCollecting);
  collected = std::move(outerCollected);
  // The inputs' gradients go to the enclosing backward: a parameter passed
  // in from an enclosing region's body is that region's to collect.
  for (auto [input, arg] : llvm::zip(cp.getInputs(), body.getArguments()))
    if (auto it = gradOf.find(gradKey(arg)); it != gradOf.end()) {
      unsigned grad = it->second;
      gradOf.erase(it);
      giveGrad(input, grad, temps);
    }
  storage.record(cp, MemoryPhase::Backward);
  for (unsigned id : temps)
    storage.release(id);
  for (Value result : cp->getResults())
    releaseGrad(result);
  for (Value value : yield->getOperands())
    releaseGrad(value);
  for (unsigned id : llvm::concat<unsigned>(node.saved, restored))
    storage.release(id);
  // The returned parameter gradients go where autograd sends them.
  temps.clear();
  for (auto &[path, grad] : returned)
    giveGrad(grad.first, grad.second, temps);
  for (unsigned id : temps)
    storage.release(id);
  sumHeldParamGrads(cp, /*oneByOne=*/false);
}

int64_t MemorySimulator::getStateBytes(CheckpointOp region) {
  auto [it, inserted] = stateBytes.try_emplace(region, 0);
  if (inserted)
    it->second = getWrittenStateBytes(region);
  return it->second;
}

ArrayRef<StringAttr> MemorySimulator::getReturnedParams(CheckpointOp region) {
  auto found = returnedParams.find(region);
  if (found != returnedParams.end())
    return found->second;
  auto trainable = [](ParamOp param) {
    return !param.getFrozen() && !param->use_empty();
  };
  if (!paramOpsCounted) {
    Operation *root = region;
    while (root->getParentOp() && !isa<func::FuncOp>(root))
      root = root->getParentOp();
    root->walk([&](ParamOp param) {
      if (trainable(param))
        ++paramOpCounts[param.getPathAttr()];
    });
    paramOpsCounted = true;
  }
  llvm::MapVector<StringAttr, unsigned> inside;
  region.getBodyBlock().walk([&](ParamOp param) {
    if (trainable(param))
      ++inside[param.getPathAttr()];
  });
  SmallVector<StringAttr> shared;
  for (auto &[path, count] : inside)
    if (paramOpCounts.lookup(path) > count)
      shared.push_back(path);
  return returnedParams[region] = std::move(shared);
}
