//===- MemorySimulator.cpp - a training step, block by block --------------===//
//
// Forward runs each op of a block in order (MemorySimulatorOps.cpp has the
// rules per op); a value holds its storages until its last use, and views
// and in-place ops share their operand's storage. Then backward runs the
// recorded autograd nodes in reverse.
//
//===----------------------------------------------------------------------===//
#include "MemorySimulator.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <utility>

using namespace mlir;
using namespace mlir::memopt;

int64_t MemorySimulator::bytesOf(Value value, Operation *user) {
  int64_t bytes = getDeviceBytes(value.getType());
  if (bytes < 0) {
    markUnknown(user); // dynamic shape: its size cannot be known here
    return 0;
  }
  return bytes;
}

void MemorySimulator::run(Operation *funcOp) {
  auto func = dyn_cast<func::FuncOp>(funcOp);
  if (!func || func.isExternal())
    return;
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    int64_t bytes = getDeviceBytes(arg.getType());
    model.residentBytes += std::max<int64_t>(bytes, 0);
    unsigned id = storage.newStorage(bytes, /*resident=*/true);
    storage.define(arg, id);
  }
  std::vector<Node> nodes;
  forwardBlock(entry, MemoryPhase::Forward, nodes);
  model.endOfForwardBytes = storage.getLiveBytes();
  model.nonContiguous = nonContiguous;
  // The caller holds the loss gradients (`out.backward(g)`, or the ones
  // `loss.backward()` makes) until backward returns: one per differentiable
  // tensor returned, also inside a returned tuple or list (GoogLeNet's
  // auxiliary logits), whose backward would otherwise start from nothing.
  SmallVector<unsigned> lossGrads;
  if (options.countOutputGradients)
    if (Operation *ret = entry.getTerminator()) {
      SmallVector<Value> outputs(ret->getOperands());
      for (size_t i = 0; i < outputs.size(); ++i) {
        Value v = outputs[i];
        if (!isa<TensorType>(v.getType())) {
          SmallVector<Value> elements = getListElements(v, ret);
          if (elements.size() != 1 || elements.front() != v) {
            outputs.append(elements.begin(), elements.end());
            continue;
          }
        }
        // A tensor written in place after it was made: its last version.
        Value key = gradKey(versionOf(v));
        if (requiresGrad(v) && !gradOf.count(key)) {
          unsigned g = storage.newStorage(bytesOf(v, ret));
          storage.retain(g);
          storage.retain(g);
          gradOf[key] = g;
          storage.noteGradOf(key, g);
          lossGrads.push_back(g);
        }
      }
    }
  backward(nodes);
  for (unsigned g : lossGrads)
    storage.release(g);
}

/// The ops of `block` none of whose results reaches what the block returns
/// through values that can carry a gradient (the `x.abs().max()` of a
/// condition `x.abs().max() > 4`): autograd frees their graph, and what it
/// saved, once their results die. Ops that write, draw random numbers,
/// make views or are not operators count as reaching.
static DenseSet<Operation *> findGradientDeadEnds(Block &block) {
  DenseSet<Value> reaching;
  DenseSet<Operation *> deadEnds;
  for (Operation &op : llvm::reverse(block)) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      reaching.insert(op.operand_begin(), op.operand_end());
      continue;
    }
    auto torchOp = dyn_cast<TorchOp>(&op);
    bool reaches = !torchOp || !torchOp.isFunctional() || torchOp.getViews() ||
                   llvm::any_of(op.getResults(), [&](Value result) {
                     return reaching.contains(result) &&
                            mayCarryGradient(result.getType());
                   });
    if (!reaches) {
      deadEnds.insert(&op);
      continue;
    }
    reaching.insert(op.operand_begin(), op.operand_end());
  }
  return deadEnds;
}

void MemorySimulator::forwardBlock(Block &block, MemoryPhase phase,
                                   std::vector<Node> &nodes) {
  for (Operation *op : findGradientDeadEnds(block))
    gradDeadEnds.insert(op);
  DenseMap<Value, Operation *> lastUse;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
  for (BlockArgument arg : block.getArguments())
    if (!lastUse.count(arg))
      storage.drop(arg);
  bool topLevel = isa_and_nonnull<func::FuncOp>(block.getParentOp());
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      break; // its operands stay held for the caller
    forwardOp(&op, phase, nodes);
    // An operand passed twice is dropped once (a few operands: no set).
    SmallVector<Value, 4> done;
    for (Value operand : op.getOperands())
      if (lastUse.lookup(operand) == &op &&
          !llvm::is_contained(done, operand)) {
        done.push_back(operand);
        storage.drop(operand);
      }
    for (Value result : op.getResults())
      if (!lastUse.count(result))
        storage.drop(result);
    if (topLevel)
      advanceCopyHolds(&op);
  }
  // Copies still running when forward ends are done before backward needs
  // the bytes (the model does not time backward).
  if (topLevel)
    for (CopyHold &hold : std::exchange(copyHolds, {}))
      for (unsigned id : hold.storages)
        storage.release(id);
}

void MemorySimulator::advanceCopyHolds(Operation *op) {
  llvm::erase_if(copyHolds, [&](CopyHold &hold) {
    if (hold.region == op || --hold.remaining > 0)
      return false;
    for (unsigned id : hold.storages)
      storage.release(id);
    return true;
  });
}

void MemorySimulator::forwardOp(Operation *op, MemoryPhase phase,
                                std::vector<Node> &nodes) {
  if (auto torchOp = dyn_cast<TorchOp>(op))
    return forwardTorchOp(torchOp, phase, nodes);
  if (auto cp = dyn_cast<CheckpointOp>(op))
    return forwardCheckpoint(cp, phase, nodes);
  if (auto param = dyn_cast<ParamOp>(op)) {
    int64_t bytes = std::max<int64_t>(getDeviceBytes(param.getType()), 0);
    if (residentCounted.insert(op).second) { // not again when recomputed
      model.residentBytes +=
          param.getFrozen() || options.gradBuffers == GradBuffers::Allocated
              ? bytes
              : 2 * bytes;
      if (!param.getFrozen() && options.worldSize > 1) {
        model.residentBytes += bytes;
        model.gradientBucketBytes += bytes;
      }
    }
    storage.define(param, storage.newStorage(bytes, /*resident=*/true));
    params.insert(param);
    if (!param.getFrozen() && gradEnabled)
      gradValues.insert(param);
    return;
  }
  if (auto buffer = dyn_cast<BufferOp>(op)) {
    int64_t bytes = std::max<int64_t>(getDeviceBytes(buffer.getType()), 0);
    if (residentCounted.insert(op).second)
      model.residentBytes += bytes;
    storage.define(buffer, storage.newStorage(bytes, /*resident=*/true));
    return;
  }
  if (auto set = dyn_cast<SetAttrOp>(op)) {
    // Module state outlives the step: keep its storages.
    for (unsigned id : storage.heldBy(set.getValue()))
      storage.retain(id);
    return;
  }
  // compress, decompress, offload, wait and anything else: new results.
  bool unknown =
      !isa<CompressOp, DecompressOp, OffloadOp, PrefetchOp, WaitOp, GetAttrOp>(
          op);
  for (Value result : op->getResults()) {
    if (!isTensorLike(result.getType()) &&
        !isa<PackedTensorType, HostTensorType>(result.getType()))
      continue;
    if (unknown)
      markUnknown(op);
    storage.define(result, storage.newStorage(bytesOf(result, op)));
  }
  storage.record(op, phase);
}
