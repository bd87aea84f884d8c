//===- OffloadSchedule.h - Offload copies on the side stream --*- C++ -*-===//
//
// The runtime moves every offloaded region input over one side stream per
// device, in issue order: the copies to the host as each region's forward
// ends, the copies back (prefetches) as the backward of the region named
// by `prefetch_at` starts. This models that stream as one first-in,
// first-out queue against the cost model's compute times: how long the
// device copy of an input stays alive after its region (the caching
// allocator keeps it until the copy has read it), and how long backward
// waits for a prefetch.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_OFFLOADSCHEDULE_H
#define MEMOPT_PLANNING_OFFLOADSCHEDULE_H

#include "memopt/Analysis/CostModel.h"
#include "memopt/Dialect/MemoptOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::memopt {

/// Copy bandwidths of the side stream, bytes per second.
struct OffloadLink {
  double deviceToHost = 0;
  double hostToDevice = 0;
};

/// Bytes a region moves off the device: its offloaded inputs.
int64_t getOffloadedBytes(CheckpointOp region);

/// What the copies to the host cost in forward.
struct ForwardCopies {
  unsigned offloadingRegions = 0;
  double copySeconds = 0;      // every copy to the host, queued or not
  double busyAfterForward = 0; // the queue's work left when forward ends
  unsigned heldPastNextOp = 0; // regions whose copy outlasts the next op
};

/// Sets `offload_held_for` on each top-level region of `func` that
/// offloads (the ops after it that run forward while its copy is queued or
/// running) and removes it from the others.
ForwardCopies annotateOffloadHolds(func::FuncOp func, const OffloadLink &link,
                                   const CostModel &cost);

/// The backward of `func`'s top-level ops against the side stream.
class PrefetchTimeline {
public:
  PrefetchTimeline(func::FuncOp func, const OffloadLink &link,
                   const CostModel &cost, double busyAtStart);

  /// Top-level regions in forward order.
  ArrayRef<CheckpointOp> getRegions() const { return regions; }
  int64_t getOffloadedBytes(unsigned region) const { return bytes[region]; }
  double getTransferSeconds(unsigned region) const { return transfer[region]; }

  /// Seconds backward waits for prefetches when region i's inputs are
  /// fetched as region `triggers[i]`'s backward starts (triggers[i] >= i).
  /// Copies issued at one trigger queue the trigger's own inputs first,
  /// then the others nearest first, as the runtime issues them.
  double getStallSeconds(ArrayRef<unsigned> triggers) const;

private:
  struct Step {
    double seconds; // backward, a region's recompute included
    int region;     // index into `regions`, -1 for other ops
  };
  SmallVector<Step> steps; // in backward order
  SmallVector<CheckpointOp> regions;
  SmallVector<int64_t> bytes;
  SmallVector<double> transfer;
  double busyAtStart;
};

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_OFFLOADSCHEDULE_H
