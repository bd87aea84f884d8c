//===- TrainingMemoryModel.h - live bytes of one training step --*- C++ -*-===//
//
// Predicts the peak memory of one training step (forward + backward) of a
// memopt function, as docs/analyses.md and ARCHITECTURE.md define it: bytes
// allocated above those live before the step (parameters, buffers, the
// input batch are resident and not counted; so are parameter .grad buffers
// zeroed in place, while gradients allocated in the step count in its peak).
//
// Forward allocates results and the extra tensors autograd saves (dropout
// noise, batch-norm statistics, max-pool indices); a tensor dies after its
// last use unless returned or saved. Backward runs the autograd nodes in
// reverse order: each allocates its input gradients (or passes the output
// gradient through), then releases its saved tensors and output gradients.
// A memopt.checkpoint saves only its inputs (by policy), runs its body
// without saving, and in backward restores the inputs and recomputes the
// body with saving before running its backward. Linear in the op count.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_TRAININGMEMORYMODEL_H
#define MEMOPT_ANALYSIS_TRAININGMEMORYMODEL_H

#include "memopt/Dialect/MemoptAttrNames.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::memopt {

enum class MemoryPhase { Forward, Recompute, Backward };
StringRef stringifyMemoryPhase(MemoryPhase phase);

/// The high-water mark of counted bytes while one op runs.
struct TimelineEntry {
  Operation *op;
  MemoryPhase phase;
  int64_t liveBytes;
};

/// How parameter .grad buffers live across steps, as the training loop's
/// `zero_grad` leaves them: zeroed in place (`set_to_none=False`, PyTorch
/// 1.x's default) they are resident before the step; set to None (PyTorch
/// 2.x's default) autograd allocates them in backward and they count in the
/// step's peak. Stamped on a module or function as `memopt.grad_buffers`.
enum class GradBuffers { Resident, Allocated };
StringRef stringifyGradBuffers(GradBuffers mode);
std::optional<GradBuffers> parseGradBuffers(StringRef text);
/// The mode stamped on `op` or its nearest ancestor (Resident if none).
GradBuffers getGradBuffers(Operation *op);

/// Where the modelled training runs. On CUDA, dropout keeps its mask as bool
/// (a byte per value; the CPU keeps the noise in the input's dtype) and the
/// caching allocator hands out blocks in multiples of 512 bytes, which is
/// what `torch.cuda.max_memory_allocated` counts. Stamped on a module or
/// function as `memopt.device` ("cpu" when absent).
enum class TrainingDevice { CPU, CUDA };
std::optional<TrainingDevice> parseTrainingDevice(StringRef text);
/// "cpu" | "cuda".
StringRef stringifyTrainingDevice(TrainingDevice device);
/// The device stamped on `op` or its nearest ancestor (CPU if none).
TrainingDevice getTrainingDevice(Operation *op);
/// The size of the block the CUDA caching allocator gives `bytes` (the
/// bytes themselves on the CPU).
int64_t getAllocatedBytes(int64_t bytes, TrainingDevice device);

/// Data-parallel processes stamped on `op` or its nearest ancestor as
/// `memopt.world_size` (1 if none).
int64_t getWorldSize(Operation *op);

/// The most intra-op threads a plan is made for.
inline constexpr int64_t kMaxIntraOpThreads = 4096;
/// Intra-op threads stamped on `op` or its nearest ancestor as
/// `memopt.intra_op_threads` (1 if none).
int getIntraOpThreads(Operation *op);

/// Stamps `copy` (a detached scratch copy of, or function made from, part
/// of `original`) with `original`'s gradient-buffer mode, device, world
/// size and intra-op threads, so that models of it agree.
void inheritModelStamps(Operation *original, Operation *copy);

struct TrainingMemoryOptions {
  GradBuffers gradBuffers = GradBuffers::Resident;
  /// The loss gradient of each returned tensor is a new buffer (as with a
  /// loss function, or `out.backward(torch.ones_like(out))`).
  bool countOutputGradients = true;
  /// Count the transient buffers CPU kernels allocate while they run (the
  /// blocked-layout copies of oneDNN convolutions, PyTorch 1.13); off for a
  /// device whose kernels need no such copies.
  bool kernelWorkspaces = true;
  /// Intra-op threads of the measured process: PyTorch 1.13 runs small-batch
  /// unstrided 1x1 convolutions without oneDNN only on one thread.
  int intraOpThreads = 1;
  TrainingDevice device = TrainingDevice::CPU;
  /// Data-parallel processes (DistributedDataParallel). Above one, each
  /// process also holds DDP's gradient buckets: a flat copy of every
  /// trainable parameter's gradient, allocated when DDP wraps the model
  /// (gradient_as_bucket_view=False, DDP's default), so resident.
  int64_t worldSize = 1;
  /// Keep, at the peak, which tensors are live (getPeakTensors): costs a
  /// second run of the model, so only for reports.
  bool recordPeakTensors = false;
  /// Autograd adds a second gradient of a tensor into the first one's
  /// buffer when nothing else holds it (PyTorch 2.x), not into a new sum
  /// (1.13): the engine fact of the table this build derived, by default.
  bool accumulateInPlace = defaultAccumulateInPlace();
  /// Bytes of the CPU generator's state, which a checkpoint region that
  /// draws random numbers keeps for its recompute (the table's fact).
  int64_t cpuGeneratorStateBytes = defaultCpuGeneratorStateBytes();

  /// The built table's facts (TorchFacts).
  static bool defaultAccumulateInPlace();
  static int64_t defaultCpuGeneratorStateBytes();
};

/// A storage live where the peak is reached, and what it holds: a value
/// (an activation, or a tensor saved for backward), the gradient of a value,
/// or the bytes a kernel holds only while it runs.
struct PeakTensor {
  enum class Role { Value, Gradient, Workspace, Other };
  Role role;
  /// The value it holds or is the gradient of; null for Workspace / Other.
  Value value;
  int64_t bytes;
};

/// Default options with what is stamped on `op` or its ancestors: the
/// gradient-buffer mode, the device and the world size.
TrainingMemoryOptions getStampedMemoryOptions(Operation *op);

class TrainingMemoryModel {
public:
  /// For getAnalysis<>: `op` is a func.func; the gradient-buffer mode and
  /// device are the ones stamped on it or its module (getGradBuffers,
  /// getTrainingDevice).
  explicit TrainingMemoryModel(Operation *op);
  TrainingMemoryModel(Operation *op, const TrainingMemoryOptions &options);

  /// Predicted peak bytes of one step above the resident bytes.
  int64_t predictPeak() const { return peakBytes; }
  /// The entry where the peak is reached (null op for an empty function).
  const TimelineEntry *getPeakEntry() const;
  ArrayRef<TimelineEntry> getTimeline() const { return timeline; }
  /// Bytes an op keeps alive for backward (distinct non-resident tensors it
  /// saves, shared storages counted once per op); 0 for unknown ops.
  int64_t getSavedBytes(Operation *op) const { return savedBytes.lookup(op); }
  /// The non-resident values an op keeps for backward (their storages count
  /// towards getSavedBytes, with the new tensors it saves such as masks).
  ArrayRef<Value> getSavedValues(Operation *op) const {
    auto it = savedValues.find(op);
    return it == savedValues.end() ? ArrayRef<Value>() : it->second;
  }
  /// How many ops of `body` keep each value for backward: packing or
  /// masking one op's copy frees nothing while another keeps the tensor.
  llvm::DenseMap<Value, unsigned> countKeepers(Block &body) const;
  /// Whether `value` is laid out contiguously at run time, as the model
  /// follows transposes and permutes through views and elementwise ops.
  bool isContiguous(Value value) const {
    return !nonContiguous.contains(value);
  }
  /// Bytes live at the end of forward (saved tensors and outputs).
  int64_t getEndOfForwardBytes() const { return endOfForwardBytes; }
  /// Parameters, buffers and inputs, plus one gradient per trainable param
  /// when gradient buffers are resident, plus DDP's gradient buckets with
  /// a world size above one.
  int64_t getResidentBytes() const { return residentBytes; }
  /// DDP's gradient buckets (in getResidentBytes; 0 for one process).
  int64_t getGradientBucketBytes() const { return gradientBucketBytes; }
  /// Ops with tensor results that the saved-tensor table does not know (they
  /// are modelled as saving every tensor operand and result) or whose
  /// tensors have dynamic shapes.
  ArrayRef<Operation *> getUnknownOps() const { return unknownOps; }
  /// With `recordPeakTensors`: the storages live at the peak, largest first
  /// (kernel workspace as one entry).
  ArrayRef<PeakTensor> getPeakTensors() const { return peakTensors; }

private:
  friend class MemorySimulator;
  friend class StorageTimeline;
  TrainingMemoryModel() = default;
  SmallVector<TimelineEntry> timeline;
  llvm::DenseMap<Operation *, int64_t> savedBytes;
  llvm::DenseMap<Operation *, SmallVector<Value, 2>> savedValues;
  llvm::DenseSet<Value> nonContiguous;
  SmallVector<Operation *> unknownOps;
  SmallVector<PeakTensor> peakTensors;
  int64_t peakBytes = 0, endOfForwardBytes = 0, residentBytes = 0;
  int64_t gradientBucketBytes = 0;
  unsigned peakIndex = ~0u;
};

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_TRAININGMEMORYMODEL_H
