//===- PlanningOptions.h - what a plan is asked for -------------*- C++ -*-===//
//
// Every planning option, parsed once. memopt-compile's flags, the
// memopt-pipeline and memopt-insert-checkpoints pass options all spell them
// alike (`--budget 40%`, `budget=40%`); parsePlanningOptions turns any of
// them into PlanningOptions with the same one-line errors, and
// printPassOptions writes them back as pass-option text, so the pipeline a
// compile runs (and `memopt-opt --memopt-pipeline=...`) reproduces it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_PLANNINGOPTIONS_H
#define MEMOPT_PLANNING_PLANNINGOPTIONS_H

#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Planning/Budget.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

/// Preferences pick a point on the peak/cost trade-off: the least peak
/// whose modelled extra time stays within a fraction of the modelled step
/// (speed 5%, balanced 12%, memory 25%).
enum class Preference { Speed, Balanced, Memory };

/// "speed" | "balanced" | "memory".
std::optional<Preference> parsePreference(llvm::StringRef text);
llvm::StringRef stringifyPreference(Preference preference);
/// Allowed extra time as a fraction of the modelled step.
double getTimeBudgetFraction(Preference preference);

/// The copy bandwidth CUDA plans assume by default, GB/s each way (an H100
/// over PCIe Gen5: 54.8 / 54.5 measured, docs/gpu.md).
inline constexpr double kDefaultOffloadBandwidthGBps = 55.0;

struct PlanningOptions {
  std::optional<Budget> budget; // none: plan for the preference
  Preference prefer = Preference::Balanced;
  TrainingDevice device = TrainingDevice::CPU;
  /// Device<->host copy bandwidth each way, for offload (CUDA plans);
  /// host to device only when offloadD2HBandwidthGBps is set.
  double offloadBandwidthGBps = kDefaultOffloadBandwidthGBps;
  /// Device-to-host bandwidth; 0: offloadBandwidthGBps.
  double offloadD2HBandwidthGBps = 0;
  /// Where offloaded inputs go: pinned host buffers (copies on a side
  /// stream) or CUDA managed memory migrated to the host and back.
  OffloadKind offloadKind = OffloadKind::host;
  bool allowOverBudget = false; // apply the least-peak plan if needed
  /// Pack binary saved tensors and keep masks (memopt-pipeline only).
  bool compress = true;
  std::vector<std::string> checkpoint;   // module paths forced into regions
  std::vector<std::string> noCheckpoint; // module paths kept out of regions
  std::vector<std::string> assumeBinary; // module outputs asserted binary

  /// Offload to host memory is planned for CUDA only.
  bool allowsOffload() const { return device == TrainingDevice::CUDA; }
  double getOffloadBytesPerSecond() const { return offloadBandwidthGBps * 1e9; }
  double getOffloadD2HBandwidthGBps() const {
    return offloadD2HBandwidthGBps > 0 ? offloadD2HBandwidthGBps
                                       : offloadBandwidthGBps;
  }
  double getOffloadD2HBytesPerSecond() const {
    return getOffloadD2HBandwidthGBps() * 1e9;
  }
};

/// Parses the text forms. Errors are one line naming the flag, as
/// memopt-compile spells it: "unknown --prefer 'fast' (expected speed,
/// balanced or memory)".
llvm::FailureOr<PlanningOptions> parsePlanningOptions(
    llvm::StringRef budget, llvm::StringRef prefer, llvm::StringRef device,
    double offloadBandwidthGBps, bool allowOverBudget,
    llvm::ArrayRef<std::string> checkpoint,
    llvm::ArrayRef<std::string> noCheckpoint,
    llvm::ArrayRef<std::string> assumeBinary, std::string &error);

/// Sets the offload policy ("host", "unified"; empty: host) and the
/// device-to-host bandwidth (0: that of --offload-bandwidth). Errors are
/// one line naming the flag.
llvm::LogicalResult parseOffloadOptions(PlanningOptions &options,
                                        llvm::StringRef policy,
                                        double d2hBandwidthGBps,
                                        std::string &error);

/// `budget=40% prefer=memory device=cpu ... allow-over-budget=false`: the
/// options of memopt-insert-checkpoints (and, with `compress=false` when
/// off, of memopt-pipeline). Defaults the parser restores are left out
/// (empty lists, the bandwidth of CPU plans); values keep every digit.
std::string printPassOptions(const PlanningOptions &options,
                             bool withCompress = false);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_PLANNINGOPTIONS_H
