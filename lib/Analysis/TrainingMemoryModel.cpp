//===- TrainingMemoryModel.cpp - the training-memory model's facade -------===//
//
// Options and stamps, and the model's entry point: MemorySimulator walks the
// step (MemorySimulator.cpp, MemorySimulatorOps.cpp) on a StorageTimeline
// that fills this model's timeline and peak.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "MemorySimulator.h"
#include "OpMemoryEffects.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/SavedTensorTable.h"
#include "memopt/Dialect/MemoptOps.h"

#include <algorithm>

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

int mlir::memopt::getIntraOpThreads(Operation *op) {
  for (; op; op = op->getParentOp())
    if (auto attr = op->getAttrOfType<IntegerAttr>(kIntraOpThreadsAttrName))
      return static_cast<int>(std::clamp<int64_t>(
          attr.getValue().getSExtValue(), 1, kMaxIntraOpThreads));
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
  int threads = getIntraOpThreads(original);
  if (threads != getIntraOpThreads(copy))
    copy->setAttr(
        kIntraOpThreadsAttrName,
        IntegerAttr::get(IntegerType::get(copy->getContext(), 64), threads));
  // A copy planned apart is priced as the original is.
  if (DictionaryAttr fitted = getFittedCostModel(original);
      fitted && !copy->hasAttr(kCostModelAttrName))
    copy->setAttr(kCostModelAttrName, fitted);
}

bool TrainingMemoryOptions::defaultAccumulateInPlace() {
  return SavedTensorTable::get().getTorchFacts().inputBufferAccumulatesInPlace;
}

int64_t TrainingMemoryOptions::defaultCpuGeneratorStateBytes() {
  return SavedTensorTable::get().getTorchFacts().cpuGeneratorStateBytes;
}

TrainingMemoryOptions mlir::memopt::getStampedMemoryOptions(Operation *op) {
  TrainingMemoryOptions options;
  options.gradBuffers = getGradBuffers(op);
  options.device = getTrainingDevice(op);
  options.worldSize = getWorldSize(op);
  options.intraOpThreads = getIntraOpThreads(op);
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
