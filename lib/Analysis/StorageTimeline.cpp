//===- StorageTimeline.cpp - live storages of a simulated step ------------===//
//
// Storages are reference counted: a value holds its storages until it is
// dropped, an autograd node holds what it saves until its backward ran, and
// a gradient buffer is held by the value it belongs to (MemorySimulator
// decides which; this file only counts).
//
//===----------------------------------------------------------------------===//
#include "StorageTimeline.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::memopt;

unsigned StorageTimeline::newStorage(int64_t bytes, bool resident) {
  bytes = getAllocatedBytes(bytes, device);
  storages.push_back({std::max<int64_t>(bytes, 0), 0, resident});
  valueOwners.emplace_back();
  gradOwners.emplace_back();
  if (!resident)
    live += storages.back().bytes;
  return storages.size() - 1;
}

void StorageTimeline::release(unsigned id) {
  Storage &s = storages[id];
  if (--s.refs == 0 && !s.resident)
    live -= s.bytes;
}

void StorageTimeline::define(Value value, ArrayRef<unsigned> ids) {
  Storages &held = storagesOf[value];
  held.assign(ids.begin(), ids.end());
  definedStorages[value] = held;
  for (unsigned id : held) {
    retain(id);
    if (!valueOwners[id])
      valueOwners[id] = value;
  }
}

void StorageTimeline::drop(Value value) {
  auto it = storagesOf.find(value);
  if (it == storagesOf.end())
    return;
  for (unsigned id : it->second)
    release(id);
  storagesOf.erase(it);
}

int64_t StorageTimeline::getUniqueBytes(ArrayRef<unsigned> ids) const {
  DenseSet<unsigned> seen;
  int64_t bytes = 0;
  for (unsigned id : ids)
    if (seen.insert(id).second)
      bytes += storages[id].bytes;
  return bytes;
}

void StorageTimeline::record(Operation *op, MemoryPhase phase,
                             int64_t transient) {
  recordHigh(op, phase, live + std::max<int64_t>(transient, 0));
}

void StorageTimeline::recordHigh(Operation *op, MemoryPhase phase,
                                 int64_t high) {
  model.timeline.push_back({op, phase, high});
  if (model.timeline.size() - 1 == peakTensorsIndex)
    recordPeakTensors(high);
  if (high > model.peakBytes || model.peakIndex == ~0u) {
    model.peakBytes = std::max(model.peakBytes, high);
    model.peakIndex = model.timeline.size() - 1;
  }
}

void StorageTimeline::recordPeakTensors(int64_t high) {
  SmallVector<PeakTensor> &tensors = model.peakTensors;
  tensors.clear();
  int64_t counted = 0;
  for (unsigned id = 0; id < storages.size(); ++id) {
    const Storage &storage = storages[id];
    if (storage.refs <= 0 || storage.resident || storage.bytes <= 0)
      continue;
    if (Value value = gradOwners[id])
      tensors.push_back({PeakTensor::Role::Gradient, value, storage.bytes});
    else if (Value value = valueOwners[id])
      tensors.push_back({PeakTensor::Role::Value, value, storage.bytes});
    else
      tensors.push_back({PeakTensor::Role::Other, Value(), storage.bytes});
    counted += storage.bytes;
  }
  if (high > counted)
    tensors.push_back({PeakTensor::Role::Workspace, Value(), high - counted});
  llvm::stable_sort(tensors, [](const PeakTensor &a, const PeakTensor &b) {
    return a.bytes > b.bytes;
  });
}
