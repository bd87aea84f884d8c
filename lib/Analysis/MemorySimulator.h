//===- MemorySimulator.h - op rules of the memory model ---------*- C++ -*-===//
//
// What each op, region and backward node does to the storages of a step:
// which it creates, which it saves for backward, which gradients it makes.
// The storages and the timeline themselves are a StorageTimeline.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H
#define MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H

#include "StorageTimeline.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <vector>

namespace mlir::memopt {
class MemorySimulator {
public:
  MemorySimulator(TrainingMemoryModel &model,
                  const TrainingMemoryOptions &options)
      : model(model), options(options), storage(model, options.device) {}
  void run(Operation *funcOp);
  /// Lists the live storages as the timeline entry `index` is made (the
  /// model's peak tensors).
  void recordPeakTensorsAt(unsigned index) {
    storage.recordPeakTensorsAt(index);
  }

private:
  /// An autograd node: an op (or a checkpoint region) recorded in forward.
  struct Node {
    Operation *op;
    SmallVector<unsigned> saved;
    SmallVector<std::pair<Value, bool>> grads;
    SmallVector<SmallVector<unsigned, 1>> inputStorages; // checkpoints only
    /// Gradients reduced from the passed-through output gradient
    /// (OpMemoryEffects::reducedPassThrough): no unreduced buffer.
    SmallVector<Value> reducedGrads;
    /// New gradients seen through a view (OpMemoryEffects::viewGrads):
    /// never added to in place.
    SmallVector<Value> viewGrads;
    /// OpMemoryEffects::unreducedGrads.
    SmallVector<std::pair<Value, int64_t>> unreducedGrads;
    /// A packed saved input (`saved_input`) is unpacked into a buffer of
    /// this size while the node's backward runs.
    int64_t unpackBytes = 0;
    /// Per entry of `grads`: the value whose gradient it is at the op (the
    /// version of an operand written in place before: versionOf).
    SmallVector<Value> gradTargets;
    /// A write through a view of a bigger tensor (`out[:, :m] = y`):
    /// autograd's CopySlices copies the incoming gradient, the base's size,
    /// before running the write's backward on the slice.
    int64_t viewWriteBytes = 0;
    /// What the op's backward allocates at its highest, its new gradients
    /// included (OpMemoryEffects::backwardHighWater), or -1.
    int64_t backwardHighWater = -1;
    /// What it allocates beside them (backwardAboveGradients), or -1.
    int64_t backwardAboveGradients = -1;
  };
  using Storages = StorageTimeline::Storages;

  bool requiresGrad(Value value) const { return gradValues.contains(value); }
  int64_t bytesOf(Value value, Operation *user);
  void markUnknown(Operation *op) {
    if (unknownSet.insert(op).second)
      model.unknownOps.push_back(op);
  }
  /// Saves for `node` a bit per value of `value` (a ReLU's result, a
  /// dropout's noise) instead of the tensor.
  void saveMaskOf(Value value, Node &node);

  void forwardBlock(Block &block, MemoryPhase phase, std::vector<Node> &nodes);
  void forwardOp(Operation *op, MemoryPhase phase, std::vector<Node> &nodes);
  void forwardTorchOp(TorchOp op, MemoryPhase phase, std::vector<Node> &nodes);
  /// `to` (a region's body argument) has the layout of `from` (the region's
  /// input): strided, or copied by a product's folding reshape.
  void inheritLayout(Value from, Value to);
  /// What the runtime keeps of the CPU generator for `cp` (its body draws
  /// random numbers, the device is the CPU), else 0.
  int64_t getGeneratorStateBytes(CheckpointOp cp) const;
  /// A list operation (isTensorListOperation): its result holds the
  /// elements of its list operands; nothing is allocated or saved.
  void forwardListOperation(TorchOp op);
  void forwardCheckpoint(CheckpointOp op, MemoryPhase phase,
                         std::vector<Node> &nodes);
  void backward(std::vector<Node> &nodes);
  void backwardCheckpoint(Node &node);
  /// Brings back, as `trigger`'s backward starts, the offloaded inputs of
  /// the recorded regions whose `prefetch_at` names it.
  void prefetchTriggeredBy(CheckpointOp trigger, ArrayRef<Node> nodes);
  /// The value whose gradient `value`'s gradient is (through casts and
  /// list/tuple elements).
  Value gradKey(Value value) const;
  /// What a use of `value` at this point of forward reads: the result of
  /// the last op that wrote it in place (directly or through a view), whose
  /// node receives the gradient of later uses, or `value` itself.
  Value versionOf(Value value) const {
    auto it = latestVersion.find(value);
    return it == latestVersion.end() ? value : it->second;
  }
  /// After `op` wrote its operand in place: later uses of it and of the
  /// tensors it is a view of read `op`'s result, and need a gradient when
  /// that does (`out = zeros_like(f); out[:, :m] = y`).
  void noteInPlaceWrite(TorchOp op, Node *node);
  void giveGrad(Value value, unsigned grad, SmallVectorImpl<unsigned> &temps);
  /// A parameter's summed gradient becomes its newly allocated `.grad`.
  void allocateParamGrad(Value param, unsigned grad,
                         SmallVectorImpl<unsigned> &temps);
  void releaseGrad(Value value);
  /// Adds the parameter gradients a backward node produced for parameters
  /// that already hold one: after the node freed its incoming gradients and
  /// saved tensors, as the autograd engine adds a node's outputs to the next
  /// node's input buffer, one at a time. Records the sums' momentary high
  /// as `op`'s. `oneByOne`: the node's backward made each of them just
  /// before its sum (many autograd nodes), not all before the first.
  void sumHeldParamGrads(Operation *op, bool oneByOne);
  /// Whether autograd adds a later gradient into `grad`'s buffer of `bytes`
  /// (the engine's fact, nothing else holding it, not seen through a view)
  /// rather than into a new sum.
  bool canAddInPlace(unsigned grad, int64_t bytes) const;
  /// A gradient block the runtime adds into `param`'s resident `.grad`
  /// itself (weight gradients by row block): counts the use, holds
  /// nothing. False, doing nothing, where `param` is no parameter or a
  /// region's backward collects its gradient.
  bool addedIntoGrad(Value param, unsigned block,
                     SmallVectorImpl<unsigned> &temps);
  /// A new, retained storage for the sum of `param`'s gradients.
  unsigned newParamGradSum(Value param);

  TrainingMemoryModel &model;
  const TrainingMemoryOptions &options;
  StorageTimeline storage;
  DenseSet<Value> gradValues, params, nonContiguous;
  /// Ops whose results reach nothing the block returns through values that
  /// can carry a gradient: autograd keeps nothing of them for backward.
  DenseSet<Operation *> gradDeadEnds;
  /// Non-contiguous values that matmul's folding reshape copies.
  DenseSet<Value> foldCopies;
  /// Non-contiguous values laid out as a dense tensor with permuted dims:
  /// the dims that permute each back into a contiguous one (a measured
  /// `dense_order`, followed through transposes and permutes).
  DenseMap<Value, SmallVector<int64_t, 4>> denseOrders;
  DenseMap<Value, unsigned> gradOf;
  DenseMap<Value, Value> gradAlias;
  DenseMap<Value, Value> latestVersion;
  /// Per parameter: uses whose gradient backward has yet to produce, and the
  /// gradient held until then.
  DenseMap<StringAttr, unsigned> pendingParamGrads;
  DenseMap<StringAttr, unsigned> heldParamGrads;
  /// Gradient storages a view exposes (GradRule::View).
  DenseSet<unsigned> viewGradStorages;
  /// Gradients of parameters holding one, to sum after the current node.
  struct LaterParamGrad {
    Value param;
    unsigned grad;
    bool last; // the parameter's last use: the sum goes to .grad
  };
  SmallVector<LaterParamGrad> laterParamGrads;
  /// A region call's backward returns the gradients of the parameters that
  /// are used outside it too (the runtime accumulates only a parameter no
  /// other node uses into .grad from inside): the paths of those, per
  /// region, and while a region's backward runs, the ones it collects with
  /// the gradient collected so far (inner uses summed out of place).
  ArrayRef<StringAttr> getReturnedParams(CheckpointOp region);
  /// getWrittenStateBytes, once per region (forward and backward ask).
  int64_t getStateBytes(CheckpointOp region);
  DenseMap<Operation *, int64_t> stateBytes;
  DenseMap<Operation *, SmallVector<StringAttr>> returnedParams;
  DenseMap<StringAttr, unsigned> paramOpCounts;
  bool paramOpsCounted = false;
  DenseSet<StringAttr> collecting;
  llvm::MapVector<StringAttr, std::pair<Value, unsigned>> collected;
  DenseMap<Value, SmallVector<Value, 4>> listParts;
  DenseSet<Operation *> unknownSet, residentCounted;
  /// Per region: input index -> storage its offloaded input was prefetched
  /// into before the region's own backward.
  DenseMap<Operation *, DenseMap<unsigned, unsigned>> prefetchedInputs;
  /// Offloaded inputs whose copy to the host still reads them: live while
  /// `remaining` more top-level ops run forward (`offload_held_for`).
  struct CopyHold {
    Operation *region;
    unsigned remaining;
    SmallVector<unsigned> storages;
  };
  SmallVector<CopyHold> copyHolds;
  /// Counts `op` against every hold made before it; ends the finished ones.
  void advanceCopyHolds(Operation *op);
  bool gradEnabled = true;
  /// Inside the forward of this many region bodies, whose graph the runtime
  /// drops at the region's end: what their ops save is no model's.
  unsigned droppedGraphDepth = 0;
  /// Whether ops simulated now record what they save in the model (the
  /// forward of the step, outside region bodies).
  bool recordsSaved(MemoryPhase phase) const {
    return phase == MemoryPhase::Forward && droppedGraphDepth == 0;
  }
};
} // namespace mlir::memopt

#endif // MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H
