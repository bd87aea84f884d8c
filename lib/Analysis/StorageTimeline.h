//===- StorageTimeline.h - live storages of a simulated step ----*- C++ -*-===//
//
// The bottom layer of the training-memory model: reference-counted storages,
// which values hold them, and the timeline of live bytes. It knows nothing
// of operators; MemorySimulator (the op rules) drives it, and it writes the
// timeline, the peak and the peak's tensors into the TrainingMemoryModel it
// was given. Calls run one way: model facade -> simulator -> timeline.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_ANALYSIS_STORAGETIMELINE_H
#define MEMOPT_LIB_ANALYSIS_STORAGETIMELINE_H

#include "memopt/Analysis/TrainingMemoryModel.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace mlir::memopt {
class StorageTimeline {
public:
  using Storages = SmallVector<unsigned, 1>;

  StorageTimeline(TrainingMemoryModel &model, TrainingDevice device)
      : model(model), device(device) {}

  /// A new storage of `bytes` (rounded as the device's allocator rounds),
  /// held by no one yet. Resident storages (parameters, buffers, inputs)
  /// never count in the live bytes.
  unsigned newStorage(int64_t bytes, bool resident = false);
  void retain(unsigned id) { ++storages[id].refs; }
  void release(unsigned id);

  /// `value` holds `ids` from now until drop(value).
  void define(Value value, ArrayRef<unsigned> ids);
  void drop(Value value);
  /// What `value` holds now (empty once dropped).
  Storages heldBy(Value value) const { return storagesOf.lookup(value); }
  bool isHeld(Value value) const { return storagesOf.count(value); }
  /// Makes `value` (a list) hold `ids` too, until the list is dropped.
  void holdAlso(Value value, ArrayRef<unsigned> ids) {
    Storages &held = storagesOf[value];
    for (unsigned id : ids) {
      retain(id);
      held.push_back(id);
    }
  }
  /// What `value` was defined with, also after it was dropped.
  Storages definedWith(Value value) const {
    return definedStorages.lookup(value);
  }
  /// Records that storage `id` was made to hold `value`'s gradient (the
  /// first such value names it in the peak's tensors).
  void noteGradOf(Value value, unsigned id) {
    if (!gradOwners[id])
      gradOwners[id] = value;
  }

  int64_t getBytes(unsigned id) const { return storages[id].bytes; }
  int getRefs(unsigned id) const { return storages[id].refs; }
  bool isResident(unsigned id) const { return storages[id].resident; }
  /// The bytes of `ids`, each storage counted once.
  int64_t getUniqueBytes(ArrayRef<unsigned> ids) const;
  int64_t getLiveBytes() const { return live; }

  /// Appends a timeline entry: the live bytes plus `transient` bytes the op
  /// holds only while it runs (kernel workspace).
  void record(Operation *op, MemoryPhase phase, int64_t transient = 0);
  /// A timeline point at `high` bytes (a measured peak, which may be below
  /// the live bytes the simulator adds up).
  void recordHigh(Operation *op, MemoryPhase phase, int64_t high);
  /// Lists the live storages as the timeline entry `index` is made (the
  /// model's peak tensors).
  void recordPeakTensorsAt(unsigned index) { peakTensorsIndex = index; }

private:
  struct Storage {
    int64_t bytes;
    int refs;
    bool resident;
  };
  /// Fills the model's peak tensors with what is live now, at `high` bytes.
  void recordPeakTensors(int64_t high);

  TrainingMemoryModel &model;
  TrainingDevice device;
  std::vector<Storage> storages;
  /// Per storage: the first value defined with it, and the first value
  /// whose gradient it holds (null when none), which name it at the peak.
  SmallVector<Value> valueOwners, gradOwners;
  DenseMap<Value, Storages> storagesOf;
  /// What each value was defined with, kept after it dies (list elements).
  DenseMap<Value, Storages> definedStorages;
  int64_t live = 0;
  unsigned peakTensorsIndex = ~0u;
};
} // namespace mlir::memopt

#endif // MEMOPT_LIB_ANALYSIS_STORAGETIMELINE_H
