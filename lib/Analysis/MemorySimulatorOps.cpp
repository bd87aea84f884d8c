//===- MemorySimulatorOps.cpp - forward and backward of ops and regions ---===//
#include "MemorySimulator.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/TensorBytes.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::memopt;

static bool isFloatTensorLike(Type type) {
  if (auto list = dyn_cast<ListType>(type))
    type = list.getElementType();
  auto tensor = dyn_cast<TensorType>(type);
  return tensor && isa<FloatType>(tensor.getElementType());
}

/// The integer constant at argument `pos`, or `fallback`.
static int64_t getIntArg(TorchOp op, unsigned pos, int64_t fallback) {
  if (pos >= op.getArgs().size())
    return fallback;
  auto attr = dyn_cast<IntegerAttr>(op.getArgs()[pos]);
  return attr ? attr.getInt() : fallback;
}

/// Views whose result is not contiguous even when their operand is.
static bool makesNonContiguous(TorchOp op) {
  StringRef name = op.getName();
  if (llvm::StringSwitch<bool>(name)
          .Cases("aten::transpose", "aten::permute", "aten::t", true)
          .Cases("aten::expand", "aten::expand_as", "aten::as_strided", true)
          .Case("aten::unfold", true)
          .Default(false))
    return true;
  // Slicing and splitting along a dimension other than the first.
  if (llvm::StringSwitch<bool>(name)
          .Cases("aten::select", "aten::slice", "aten::narrow", true)
          .Cases("aten::chunk", "aten::split", "aten::unbind", true)
          .Default(false))
    return getIntArg(op, name == "aten::chunk" ? 2 : 1, 0) != 0;
  return false;
}

void MemorySimulator::forwardTorchOp(TorchOp op, MemoryPhase phase,
                                     std::vector<Node> &nodes) {
  StringRef name = op.getName();
  if (llvm::none_of(op->getResultTypes(), isTensorLike))
    return; // sizes, scalars, prints: no tensor memory
  if (name == "prim::ListConstruct" || name == "prim::TupleConstruct") {
    Storages all;
    bool grad = false, strided = false;
    for (Value operand : op.getOperands()) {
      all.append(storagesOf.lookup(operand));
      grad |= requiresGrad(operand);
      strided |= nonContiguous.contains(operand);
    }
    define(op->getResult(0), all);
    if (grad)
      gradValues.insert(op->getResult(0));
    if (strided)
      nonContiguous.insert(op->getResult(0));
    return;
  }
  if (name == "prim::ListUnpack" || name == "prim::TupleUnpack" ||
      name == "prim::TupleIndex" || name == "aten::__getitem__") {
    Value list = op->getOperand(0);
    SmallVector<Value> elements = getListElements(list);
    bool elementwise = elements.size() == op->getNumResults() &&
                       (elements.size() != 1 || elements[0] != list);
    for (auto [i, result] : llvm::enumerate(op->getResults())) {
      Value from = elementwise ? elements[i] : list;
      define(result, storagesOf.lookup(from));
      if (requiresGrad(from))
        gradValues.insert(result);
      if (nonContiguous.contains(from))
        nonContiguous.insert(result);
    }
    return;
  }

  OpMemoryEffects fx = getOpMemoryEffects(
      op, [&](Value v) { return requiresGrad(v); },
      [&](Value v) { return !nonContiguous.contains(v); });
  if (!fx.known)
    markUnknown(op);
  Value first;
  for (Value operand : op.getOperands())
    if (isa<TensorType>(operand.getType())) {
      first = operand;
      break;
    }
  bool record_ = gradEnabled && fx.differentiable;
  for (auto [result, alias] : llvm::zip(op->getResults(), fx.resultAliases)) {
    if (!isTensorLike(result.getType()))
      continue;
    if (alias)
      define(result, storagesOf.lookup(alias));
    else
      define(result, newStorage(bytesOf(result, op)));
    // Elementwise results keep the strides of their input.
    if (makesNonContiguous(op) || (alias && nonContiguous.contains(alias)) ||
        (!alias && first && nonContiguous.contains(first) &&
         result.getType() == first.getType() && name != "aten::contiguous" &&
         name != "aten::reshape" && name != "aten::flatten"))
      nonContiguous.insert(result);
    if (record_ && isFloatTensorLike(result.getType()))
      gradValues.insert(result);
  }

  SmallVector<unsigned> temps;
  Node node{op, {}, fx.grads, {}};
  for (int64_t bytes : fx.savedNewBytes) {
    if (bytes < 0)
      markUnknown(op);
    unsigned id = newStorage(bytes);
    retain(id);
    // Without grad the op still computes it (dropout's noise), then drops it.
    (record_ ? node.saved : temps).push_back(id);
  }
  if (record_) {
    for (Value value : fx.savedValues)
      for (unsigned id : storagesOf.lookup(value))
        if (!storages[id].resident) {
          retain(id);
          node.saved.push_back(id);
        }
    if (phase == MemoryPhase::Forward)
      model.savedBytes[op] = saveBytes(node);
    nodes.push_back(std::move(node));
  }
  record(op, phase);
  for (unsigned id : temps)
    release(id);
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

void MemorySimulator::forwardCheckpoint(CheckpointOp cp, MemoryPhase phase,
                                        std::vector<Node> &nodes) {
  Block &body = cp.getBodyBlock();
  bool anyGrad =
      gradEnabled &&
      (llvm::any_of(cp.getInputs(), [&](Value v) { return requiresGrad(v); }) ||
       llvm::any_of(body.getOps<ParamOp>(),
                    [](ParamOp p) { return !p.getFrozen(); }));
  Node node{cp, {}, {}, {}};
  for (auto [input, policy] : llvm::zip(cp.getInputs(), cp.getPolicies())) {
    node.inputStorages.push_back(storagesOf.lookup(input));
    if (!anyGrad)
      continue;
    if (requiresGrad(input))
      node.grads.push_back({input, true});
    if (isa<KeepPolicyAttr>(policy)) {
      for (unsigned id : storagesOf.lookup(input))
        if (!storages[id].resident) {
          retain(id);
          node.saved.push_back(id);
        }
    } else if (isa<CompressPolicyAttr>(policy)) {
      unsigned id = newStorage(getSavedInputBytes(policy, input.getType()));
      retain(id);
      node.saved.push_back(id);
    }
  }
  // Forward of the body without grad: intermediates die at their last use.
  bool wasEnabled = gradEnabled;
  gradEnabled = false;
  for (auto [arg, input] : llvm::zip(body.getArguments(), cp.getInputs()))
    define(arg, storagesOf.lookup(input));
  std::vector<Node> none;
  forwardBlock(body, phase, none);
  gradEnabled = wasEnabled;
  Operation *yield = body.getTerminator();
  for (auto [result, value] :
       llvm::zip(cp->getResults(), yield->getOperands())) {
    define(result, storagesOf.lookup(value));
    if (anyGrad && isFloatTensorLike(result.getType()))
      gradValues.insert(result);
  }
  for (Value value : yield->getOperands())
    drop(value);
  if (anyGrad) {
    if (phase == MemoryPhase::Forward)
      model.savedBytes[cp] = saveBytes(node);
    nodes.push_back(std::move(node));
  }
  record(cp, phase);
}

void MemorySimulator::giveGrad(Value value, unsigned grad,
                               SmallVectorImpl<unsigned> &temps) {
  // Parameter gradients are added into the resident .grad in place;
  // a second gradient of an activation is summed into its buffer.
  if (params.contains(value) || !gradOf.try_emplace(value, grad).second)
    temps.push_back(grad);
}

void MemorySimulator::releaseGrad(Value value) {
  auto it = gradOf.find(value);
  if (it == gradOf.end())
    return;
  release(it->second);
  gradOf.erase(it);
}

void MemorySimulator::backward(std::vector<Node> &nodes) {
  for (Node &node : llvm::reverse(nodes)) {
    if (isa<CheckpointOp>(node.op)) {
      backwardCheckpoint(node);
      continue;
    }
    std::optional<unsigned> incoming;
    for (Value result : node.op->getResults())
      if (auto it = gradOf.find(result); it != gradOf.end()) {
        incoming = it->second;
        break;
      }
    SmallVector<unsigned> temps;
    if (incoming)
      for (auto [value, fresh] : node.grads) {
        unsigned grad = fresh ? newStorage(bytesOf(value, node.op)) : *incoming;
        retain(grad);
        giveGrad(value, grad, temps);
      }
    record(node.op, MemoryPhase::Backward);
    for (unsigned id : temps)
      release(id);
    for (Value result : node.op->getResults())
      releaseGrad(result);
    for (unsigned id : node.saved)
      release(id);
  }
}

void MemorySimulator::backwardCheckpoint(Node &node) {
  auto cp = cast<CheckpointOp>(node.op);
  Block &body = cp.getBodyBlock();
  // Restore the inputs (decompress / prefetch into new buffers); they stay
  // until the region's backward returns, then recompute.
  SmallVector<unsigned> restored;
  for (auto [k, input] : llvm::enumerate(cp.getInputs())) {
    BlockArgument arg = body.getArgument(k);
    if (isa<KeepPolicyAttr>(cp.getPolicies()[k])) {
      define(arg, node.inputStorages[k]);
    } else {
      restored.push_back(newStorage(bytesOf(input, cp)));
      retain(restored.back());
      define(arg, restored.back());
    }
    if (requiresGrad(input))
      gradValues.insert(arg);
  }
  std::vector<Node> inner;
  forwardBlock(body, MemoryPhase::Recompute, inner);
  Operation *yield = body.getTerminator();
  SmallVector<unsigned> temps;
  for (auto [result, value] : llvm::zip(cp->getResults(), yield->getOperands()))
    if (auto it = gradOf.find(result); it != gradOf.end()) {
      retain(it->second);
      giveGrad(value, it->second, temps);
    }
  backward(inner);
  for (auto [input, arg] : llvm::zip(cp.getInputs(), body.getArguments()))
    if (auto it = gradOf.find(arg); it != gradOf.end()) {
      unsigned grad = it->second;
      gradOf.erase(it);
      giveGrad(input, grad, temps);
    }
  record(cp, MemoryPhase::Backward);
  for (unsigned id : temps)
    release(id);
  for (Value result : cp->getResults())
    releaseGrad(result);
  for (Value value : yield->getOperands()) {
    releaseGrad(value);
    drop(value);
  }
  for (unsigned id : llvm::concat<unsigned>(node.saved, restored))
    release(id);
}
