//===- TrainingMemoryModel.cpp - simulate the live bytes of a step --------===//
//
// Storages are reference counted: a value holds its storages until its last
// use, an autograd node holds what it saves until its backward ran, and a
// gradient buffer is held by the value it belongs to. Views and in-place ops
// share the storage of their operand.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "MemorySimulator.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::memopt;

StringRef mlir::memopt::stringifyMemoryPhase(MemoryPhase phase) {
  switch (phase) {
  case MemoryPhase::Forward:
    return "forward";
  case MemoryPhase::Recompute:
    return "recompute";
  case MemoryPhase::Backward:
    return "backward";
  }
  llvm_unreachable("unknown phase");
}

unsigned MemorySimulator::newStorage(int64_t bytes, bool resident) {
  bytes = getAllocatedBytes(bytes, options.device);
  storages.push_back({std::max<int64_t>(bytes, 0), 0, resident});
  valueOwners.emplace_back();
  gradOwners.emplace_back();
  if (!resident)
    live += storages.back().bytes;
  return storages.size() - 1;
}

void MemorySimulator::release(unsigned id) {
  Storage &s = storages[id];
  if (--s.refs == 0 && !s.resident)
    live -= s.bytes;
}

void MemorySimulator::define(Value value, ArrayRef<unsigned> ids) {
  Storages &held = storagesOf[value];
  held.assign(ids.begin(), ids.end());
  definedStorages[value] = held;
  for (unsigned id : held) {
    retain(id);
    if (!valueOwners[id])
      valueOwners[id] = value;
  }
}

void MemorySimulator::drop(Value value) {
  auto it = storagesOf.find(value);
  if (it == storagesOf.end())
    return;
  for (unsigned id : it->second)
    release(id);
  storagesOf.erase(it);
}

void MemorySimulator::record(Operation *op, MemoryPhase phase,
                             int64_t transient) {
  recordHigh(op, phase, live + std::max<int64_t>(transient, 0));
}

void MemorySimulator::recordHigh(Operation *op, MemoryPhase phase,
                                 int64_t high) {
  model.timeline.push_back({op, phase, high});
  if (model.timeline.size() - 1 == peakTensorsIndex)
    recordPeakTensors(high);
  if (high > model.peakBytes || model.peakIndex == ~0u) {
    model.peakBytes = std::max(model.peakBytes, high);
    model.peakIndex = model.timeline.size() - 1;
  }
}

void MemorySimulator::recordPeakTensors(int64_t high) {
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

int64_t MemorySimulator::bytesOf(Value value, Operation *user) {
  int64_t bytes = getDeviceBytes(value.getType());
  if (bytes < 0) {
    markUnknown(user); // dynamic shape: its size cannot be known here
    return 0;
  }
  return bytes;
}

int64_t MemorySimulator::saveBytes(Node &node) {
  DenseSet<unsigned> seen;
  int64_t bytes = 0;
  for (unsigned id : node.saved)
    if (seen.insert(id).second)
      bytes += storages[id].bytes;
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
    unsigned id = newStorage(bytes, /*resident=*/true);
    define(arg, id);
  }
  std::vector<Node> nodes;
  forwardBlock(entry, MemoryPhase::Forward, nodes);
  model.endOfForwardBytes = live;
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
        if (requiresGrad(v) && !gradOf.count(gradKey(v))) {
          unsigned g = newStorage(bytesOf(v, ret));
          retain(g);
          retain(g);
          gradOf[gradKey(v)] = g;
          noteGradOf(gradKey(v), g);
          lossGrads.push_back(g);
        }
      }
    }
  backward(nodes);
  for (unsigned g : lossGrads)
    release(g);
}

void MemorySimulator::forwardBlock(Block &block, MemoryPhase phase,
                                   std::vector<Node> &nodes) {
  DenseMap<Value, Operation *> lastUse;
  for (Operation &op : block)
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
  for (BlockArgument arg : block.getArguments())
    if (!lastUse.count(arg))
      drop(arg);
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      break; // its operands stay held for the caller
    forwardOp(&op, phase, nodes);
    DenseSet<Value> done;
    for (Value operand : op.getOperands())
      if (lastUse.lookup(operand) == &op && done.insert(operand).second)
        drop(operand);
    for (Value result : op.getResults())
      if (!lastUse.count(result))
        drop(result);
  }
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
    define(param, newStorage(bytes, /*resident=*/true));
    params.insert(param);
    if (!param.getFrozen() && gradEnabled)
      gradValues.insert(param);
    return;
  }
  if (auto buffer = dyn_cast<BufferOp>(op)) {
    int64_t bytes = std::max<int64_t>(getDeviceBytes(buffer.getType()), 0);
    if (residentCounted.insert(op).second)
      model.residentBytes += bytes;
    define(buffer, newStorage(bytes, /*resident=*/true));
    return;
  }
  if (auto set = dyn_cast<SetAttrOp>(op)) {
    // Module state outlives the step: keep its storages.
    for (unsigned id : storagesOf.lookup(set.getValue()))
      retain(id);
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
    define(result, newStorage(bytesOf(result, op)));
  }
  record(op, phase);
}

StringRef mlir::memopt::stringifyGradBuffers(GradBuffers mode) {
  return mode == GradBuffers::Allocated ? "allocated" : "resident";
}

std::optional<GradBuffers> mlir::memopt::parseGradBuffers(StringRef text) {
  if (text == "resident")
    return GradBuffers::Resident;
  if (text == "allocated")
    return GradBuffers::Allocated;
  return std::nullopt;
}

GradBuffers mlir::memopt::getGradBuffers(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto attr = op->getAttrOfType<StringAttr>(kGradBuffersAttrName))
      if (std::optional<GradBuffers> mode = parseGradBuffers(attr.getValue()))
        return *mode;
  return GradBuffers::Resident;
}

std::optional<TrainingDevice>
mlir::memopt::parseTrainingDevice(StringRef text) {
  if (text == "cpu")
    return TrainingDevice::CPU;
  if (text == "cuda")
    return TrainingDevice::CUDA;
  return std::nullopt;
}

StringRef mlir::memopt::stringifyTrainingDevice(TrainingDevice device) {
  return device == TrainingDevice::CUDA ? "cuda" : "cpu";
}

TrainingDevice mlir::memopt::getTrainingDevice(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto attr = op->getAttrOfType<StringAttr>(kTrainingDeviceAttrName))
      if (std::optional<TrainingDevice> device =
              parseTrainingDevice(attr.getValue()))
        return *device;
  return TrainingDevice::CPU;
}

int64_t mlir::memopt::getAllocatedBytes(int64_t bytes, TrainingDevice device) {
  // c10::cuda::CUDACachingAllocator rounds every request up to 512 bytes.
  constexpr int64_t kCudaBlock = 512;
  if (device != TrainingDevice::CUDA || bytes <= 0)
    return bytes;
  return (bytes + kCudaBlock - 1) / kCudaBlock * kCudaBlock;
}

int64_t mlir::memopt::getWorldSize(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto attr = op->getAttrOfType<IntegerAttr>(kWorldSizeAttrName))
      return std::max<int64_t>(attr.getValue().getSExtValue(), 1);
  return 1;
}

void mlir::memopt::inheritModelStamps(Operation *original, Operation *copy) {
  GradBuffers mode = getGradBuffers(original);
  if (mode != getGradBuffers(copy))
    copy->setAttr(
        kGradBuffersAttrName,
        StringAttr::get(copy->getContext(), stringifyGradBuffers(mode)));
  TrainingDevice device = getTrainingDevice(original);
  if (device != getTrainingDevice(copy))
    copy->setAttr(
        kTrainingDeviceAttrName,
        StringAttr::get(copy->getContext(), stringifyTrainingDevice(device)));
  int64_t worldSize = getWorldSize(original);
  if (worldSize != getWorldSize(copy))
    copy->setAttr(
        kWorldSizeAttrName,
        IntegerAttr::get(IntegerType::get(copy->getContext(), 64), worldSize));
}

TrainingMemoryOptions mlir::memopt::getStampedMemoryOptions(Operation *op) {
  TrainingMemoryOptions options;
  options.gradBuffers = getGradBuffers(op);
  options.device = getTrainingDevice(op);
  options.worldSize = getWorldSize(op);
  return options;
}

TrainingMemoryModel::TrainingMemoryModel(Operation *op)
    : TrainingMemoryModel(op, getStampedMemoryOptions(op)) {}

TrainingMemoryModel::TrainingMemoryModel(Operation *op,
                                         const TrainingMemoryOptions &options) {
  MemorySimulator(*this, options).run(op);
  if (!options.recordPeakTensors || peakIndex == ~0u)
    return;
  // Once more, listing the live storages where the peak's entry is made:
  // listing them at every new high instead would be quadratic in the ops.
  TrainingMemoryModel replay;
  MemorySimulator simulator(replay, options);
  simulator.recordPeakTensorsAt(peakIndex);
  simulator.run(op);
  peakTensors = std::move(replay.peakTensors);
}

llvm::DenseMap<Value, unsigned>
TrainingMemoryModel::countKeepers(Block &body) const {
  llvm::DenseMap<Value, unsigned> keepers;
  for (Operation &op : body)
    for (Value saved : getSavedValues(&op))
      ++keepers[saved];
  return keepers;
}

const TimelineEntry *TrainingMemoryModel::getPeakEntry() const {
  return peakIndex < timeline.size() ? &timeline[peakIndex] : nullptr;
}
