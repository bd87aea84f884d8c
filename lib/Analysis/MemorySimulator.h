//===- MemorySimulator.h - reference-counted storages of a step -*- C++ -*-===//
#ifndef MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H
#define MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H

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
      : model(model), options(options) {}
  void run(Operation *funcOp);
  /// Lists the live storages as the timeline entry `index` is made (the
  /// model's peak tensors).
  void recordPeakTensorsAt(unsigned index) { peakTensorsIndex = index; }

private:
  struct Storage {
    int64_t bytes;
    int refs;
    bool resident;
  };
  /// An autograd node: an op (or a checkpoint region) recorded in forward.
  struct Node {
    Operation *op;
    SmallVector<unsigned> saved;
    SmallVector<std::pair<Value, bool>> grads;
    SmallVector<SmallVector<unsigned, 1>> inputStorages; // checkpoints only
    /// A packed saved input (`saved_input`) is unpacked into a buffer of
    /// this size while the node's backward runs.
    int64_t unpackBytes = 0;
  };
  using Storages = SmallVector<unsigned, 1>;

  unsigned newStorage(int64_t bytes, bool resident = false);
  void retain(unsigned id) { ++storages[id].refs; }
  void release(unsigned id);
  void define(Value value, ArrayRef<unsigned> ids);
  /// Records that storage `id` was made to hold `value`'s gradient (the
  /// first such value names it in the peak's tensors).
  void noteGradOf(Value value, unsigned id) {
    if (!gradOwners[id])
      gradOwners[id] = value;
  }
  void drop(Value value);
  /// Appends a timeline entry: the live bytes plus `transient` bytes the op
  /// holds only while it runs (kernel workspace).
  void record(Operation *op, MemoryPhase phase, int64_t transient = 0);
  /// A timeline point at `high` bytes (a measured peak, which may be below
  /// the live bytes the simulator adds up).
  void recordHigh(Operation *op, MemoryPhase phase, int64_t high);
  /// Fills the model's peak tensors with what is live now, at `high` bytes.
  void recordPeakTensors(int64_t high);
  bool requiresGrad(Value value) const { return gradValues.contains(value); }
  int64_t bytesOf(Value value, Operation *user);
  void markUnknown(Operation *op) {
    if (unknownSet.insert(op).second)
      model.unknownOps.push_back(op);
  }
  int64_t saveBytes(Node &node);
  /// Saves for `node` a bit per value of `value` (a ReLU's result, a
  /// dropout's noise) instead of the tensor.
  void saveMaskOf(Value value, Node &node);

  void forwardBlock(Block &block, MemoryPhase phase, std::vector<Node> &nodes);
  void forwardOp(Operation *op, MemoryPhase phase, std::vector<Node> &nodes);
  void forwardTorchOp(TorchOp op, MemoryPhase phase, std::vector<Node> &nodes);
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
  void giveGrad(Value value, unsigned grad, SmallVectorImpl<unsigned> &temps);
  /// A parameter's summed gradient becomes its newly allocated `.grad`.
  void allocateParamGrad(Value param, unsigned grad,
                         SmallVectorImpl<unsigned> &temps);
  void releaseGrad(Value value);
  /// Adds the parameter gradients a backward node produced for parameters
  /// that already hold one: after the node freed its incoming gradients and
  /// saved tensors, as the autograd engine adds a node's outputs to the next
  /// node's input buffer. Records the sums' momentary high as `op`'s.
  void sumHeldParamGrads(Operation *op);
  /// A new, retained storage for the sum of `param`'s gradients.
  unsigned newParamGradSum(Value param);

  TrainingMemoryModel &model;
  const TrainingMemoryOptions &options;
  std::vector<Storage> storages;
  /// Per storage: the first value defined with it, and the first value
  /// whose gradient it holds (null when none), which name it at the peak.
  SmallVector<Value> valueOwners, gradOwners;
  DenseMap<Value, Storages> storagesOf;
  /// What each value was defined with, kept after it dies (list elements).
  DenseMap<Value, Storages> definedStorages;
  DenseSet<Value> gradValues, params, nonContiguous;
  /// Non-contiguous values that matmul's folding reshape copies.
  DenseSet<Value> foldCopies;
  DenseMap<Value, unsigned> gradOf;
  DenseMap<Value, Value> gradAlias;
  /// Per parameter: uses whose gradient backward has yet to produce, and the
  /// gradient held until then.
  DenseMap<StringAttr, unsigned> pendingParamGrads;
  DenseMap<StringAttr, unsigned> heldParamGrads;
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
  bool gradEnabled = true;
  int64_t live = 0;
  unsigned peakTensorsIndex = ~0u;
};
} // namespace mlir::memopt

#endif // MEMOPT_LIB_ANALYSIS_MEMORYSIMULATOR_H
