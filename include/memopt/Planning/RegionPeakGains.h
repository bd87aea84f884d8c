//===- RegionPeakGains.h - what each checkpoint region lowers --*- C++ -*-===//
#ifndef MEMOPT_PLANNING_REGIONPEAKGAINS_H
#define MEMOPT_PLANNING_REGIONPEAKGAINS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>

namespace mlir::memopt {

class CheckpointOp;

/// Puts `region`'s body in its place: its ops run in forward as any others
/// and keep what their backwards need; regions within it stay regions.
void inlineCheckpointRegion(CheckpointOp region);

/// The modelled peak of `func` with each of its regions (in walk order:
/// pre-order) inlined in turn, each on its own copy (in parallel).
SmallVector<int64_t> modelPeaksWithoutEachRegion(func::FuncOp func);

/// The regions a drop took out, and what it spent on them.
struct RegionDropResult {
  int64_t peakBytes = 0;       // the modelled peak after the drops
  unsigned dropped = 0;        // regions inlined
  double recomputeSeconds = 0; // their recompute, saved
};

/// Inlines the regions of `func` whose recompute buys nothing within
/// `limitBytes`: each one, once inlined, leaves the modelled peak at or under
/// the limit (checked together, then one by one, the least rise first).
/// `peaksWithout` is modelPeaksWithoutEachRegion(func). Regions that a
/// --checkpoint module path (`forcedModules`) names, that pack or offload an
/// input or carry a prefetch schedule are kept; the regions within a dropped
/// one stay, and recompute on their own.
/// Nullopt when none is dropped.
std::optional<RegionDropResult>
dropRegionsBelowLimit(func::FuncOp func, int64_t limitBytes,
                      ArrayRef<std::string> forcedModules,
                      ArrayRef<int64_t> peaksWithout);

/// Stamps each region of `func` (modelled peak `peakBytes`) with
/// `memopt.lowers_peak_by`: how much higher the modelled peak is with that
/// region's body inlined (0 when it is not higher). `peaksWithout` is
/// modelPeaksWithoutEachRegion(func).
void stampRegionPeakGains(func::FuncOp func, int64_t peakBytes,
                          ArrayRef<int64_t> peaksWithout);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_REGIONPEAKGAINS_H
