//===- CompileReport.h - what memopt-compile predicted and planned -*- C++ -*-=//
//
// The report of one compile: per input signature, the predicted baseline
// (TrainingMemoryModel on the imported IR), the planned peak (the same model
// after the planning pipeline), the plan's decisions (checkpoint regions,
// compressed and offloaded tensors, recompute overhead) and timings. Written
// as JSON (docs/compile.md gives the schema) and as a short text summary.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_COMPILE_COMPILEREPORT_H
#define MEMOPT_COMPILE_COMPILEREPORT_H

#include "memopt/Conversion/TorchScriptExport.h"
#include "memopt/Planning/PlanningOptions.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

/// Version of the JSON schema (docs/compile.md).
inline constexpr int kCompileReportVersion = 1;

/// Live bytes while one op runs (TrainingMemoryModel's timeline).
struct TimelinePoint {
  std::string op, modulePath, phase;
  int64_t liveBytes = 0;
};

/// A tensor live at the predicted peak (largest first in MemoryPrediction).
struct PeakTensorReport {
  std::string what; // "layer1.0.conv1 (aten::conv2d)", "" for workspace
  std::string role; // value, gradient, workspace, other
  int64_t bytes = 0;
};

/// One TrainingMemoryModel prediction.
struct MemoryPrediction {
  int64_t peakBytes = 0;
  int64_t residentBytes = 0;
  int64_t endOfForwardBytes = 0;
  /// DDP's gradient buckets, part of residentBytes (world size above one).
  int64_t gradientBucketBytes = 0;
  /// Where the peak is reached.
  std::string peakOp, peakModulePath, peakPhase;
  /// Bytes saved for backward per module path, largest first (at most 10).
  std::vector<std::pair<std::string, int64_t>> savedByModule;
  /// What is live at the peak, largest first (at most 12, the rest summed
  /// in one "other" entry).
  std::vector<PeakTensorReport> peakTensors;
  /// Every op's live bytes, forward then backward (in the JSON report with
  /// `--timeline`).
  std::vector<TimelinePoint> timeline;
};

struct RegionReport {
  std::string label;
  /// Module paths of the recomputed ops (outermost first, no path twice).
  std::vector<std::string> modulePaths;
  int64_t savedBytesAvoided = 0;
  /// How much higher the modelled peak is without the region (its body
  /// inlined); unknown on IR planned before memopt stamped it.
  std::optional<int64_t> peakBytesLowered;
  std::string reason;
  /// Per region input: keep, compress:<kind>, offload:<kind>.
  std::vector<std::string> inputPolicies;
  int64_t numOps = 0;
};

struct CompressedReport {
  std::string what;   // the tensor's producer, "layer1.0.act (aten::relu)"
  std::string usedBy; // "region layer2" or "conv2 (aten::conv2d)"
  std::string kind;  // bit, bool, uint8, sparse
  std::string via;   // checkpoint-input, saved-input, compress-op
  int64_t bytesFull = 0, bytesPacked = 0;
};

struct OffloadedReport {
  std::string what;
  std::string usedBy;
  std::string kind;  // host, unified
  std::string via;   // checkpoint-input, offload-op
  int64_t bytes = 0;
  /// The region whose backward prefetches it (checkpoint inputs).
  std::string prefetchAt;
};

/// An op whose backward runs a leaner kernel (batch-norm by channel, a
/// linear weight gradient by row block): its transient bytes in backward,
/// with ATen's kernel and as it runs now.
struct BackwardKernelReport {
  std::string what; // "bn1 (aten::batch_norm)"
  std::string kind; // by_channel, weight_rows
  int64_t transientBytesAten = 0, transientBytes = 0;
};

struct UnknownOpReport {
  std::string op, where;
};

/// Everything about one compiled signature (one func.func).
struct SignatureReport {
  std::string function;   // name of the func.func
  std::string signature;  // --spec syntax, e.g. x:8x3x32x32
  std::vector<std::string> inputNames;
  int64_t count = 0;
  bool passthrough = false;

  MemoryPrediction baseline;
  std::optional<MemoryPrediction> planned;
  std::optional<int64_t> budgetBytes;
  std::optional<bool> feasible;
  std::optional<int64_t> minReachablePeakBytes;
  /// The planner's own prediction (memopt.plan), next to our re-analysis.
  std::optional<int64_t> plannerPeakBytes;
  std::string preference;
  double recomputeSeconds = 0, stepSeconds = 0;
  /// memopt.prefetch_schedule (CUDA plans with offloaded region inputs).
  struct PrefetchSchedule {
    int64_t offloadedRegions = 0, prefetchedEarly = 0;
    double transferSeconds = 0, stallSeconds = 0;
    double offloadSeconds = 0; // the copies to the host in forward
    int64_t heldRegions = 0;   // whose copy outlasts the next op
  };
  std::optional<PrefetchSchedule> prefetch;

  std::vector<RegionReport> regions;
  std::vector<CompressedReport> compressed;
  std::vector<OffloadedReport> offloaded;
  std::vector<BackwardKernelReport> backwardKernels;
  std::vector<UnknownOpReport> unknownOps;

  double recomputeOverhead() const {
    return stepSeconds > 0 ? recomputeSeconds / stepSeconds : 0.0;
  }
};

struct CompileTimings {
  double importSeconds = 0, probeSeconds = 0, planSeconds = 0,
         exportSeconds = 0, totalSeconds = 0;
};

/// Where kernel workspaces came from (--kernel-workspaces).
struct KernelWorkspaceReport {
  bool probed = false;
  unsigned measured = 0, cached = 0, reused = 0, skipped = 0;
};

/// Marks measured on the training GPU (--kernel-marks, --kernel-requests).
struct DeviceMarksReport {
  std::string file, context, requestsFile;
  unsigned applied = 0, requested = 0, skipped = 0;
};

/// A fit of the machine that will train (--cost-model): the classes the
/// file gave, each (secondsPerFlop, secondsPerByte, overheadSeconds).
struct CostModelReport {
  std::string file;
  std::vector<std::pair<std::string, std::array<double, 3>>> classes;
};

struct CompileReport {
  std::string model, output, command;
  bool analyzeOnly = false;
  /// The options that shaped the plan.
  PlanningOptions planning;
  std::string fallback;
  /// "resident" or "allocated" (TrainingMemoryOptions::gradBuffers).
  std::string gradBuffers = "resident";
  /// Data-parallel processes; budgets, plans and peaks are per process.
  int64_t worldSize = 1;
  /// Intra-op threads CPU training was planned for (0: not a CPU plan).
  int intraOpThreads = 1;
  KernelWorkspaceReport kernelWorkspaces;
  std::optional<DeviceMarksReport> deviceMarks;
  std::optional<CostModelReport> costModel;
  /// The exporter's forward check (its seconds are not in `timings`'
  /// export); std::nullopt when not asked for.
  std::optional<ForwardCheckResult> forwardCheck;
  /// The PyTorch (LibTorch) the compiler and its tables were built for.
  std::string torchVersion;
  /// --load-library, as given: the libraries of the model's own operators.
  std::vector<std::string> operatorLibraries;
  bool strictSignatures = false;
  /// Write each prediction's per-op timeline into the JSON report.
  bool timelineInJSON = false;
  /// Signatures in compile order; more than one for multi-signature compiles.
  std::vector<SignatureReport> signatures;
  CompileTimings timings;

  /// The most frequent signature (the first among equals): its blocks are
  /// the report's top-level ones.
  const SignatureReport *primary() const;
  /// The JSON report (docs/compile.md), keys in schema order.
  void writeJSON(llvm::raw_ostream &os) const;
  llvm::json::Value toJSON() const;
  /// The human summary (stderr), ending with a recommendation line.
  void printSummary(llvm::raw_ostream &os) const;
  /// The summary's recommendation for one signature (also in the JSON).
  std::string recommend(const SignatureReport &signature) const;
};

/// Predicts one training step of `func` (see TrainingMemoryModel); fills
/// `unknownOps` with the ops the saved-tensor table does not know.
/// `inputNames` name the function's inputs in the peak's tensors.
MemoryPrediction
predictMemory(func::FuncOp func,
              std::vector<UnknownOpReport> *unknownOps = nullptr,
              ArrayRef<std::string> inputNames = {});

/// Reads what the planning pipeline left on `func` (memopt.plan, checkpoint
/// regions, compress/offload policies) and predicts its planned peak.
void collectPlan(func::FuncOp func, SignatureReport &report);

/// Prints the per-op live-bytes timeline of `func` (`-v/--timeline`).
void printTimeline(func::FuncOp func, llvm::StringRef title,
                   llvm::raw_ostream &os);

/// The module path of a location (its NameLoc), or "".
std::string getModulePath(Location loc);

} // namespace mlir::memopt

#endif // MEMOPT_COMPILE_COMPILEREPORT_H
