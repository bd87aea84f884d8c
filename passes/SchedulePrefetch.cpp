//===- SchedulePrefetch.cpp - memopt-schedule-prefetch --------------------===//
//
// Schedules the side stream's copies of offloaded region inputs: how long
// each input's device copy stays alive while it goes to the host in
// forward, and, per region, the region whose backward starts the copy back
// to the device: late enough not to hold the bytes longer than needed,
// early enough to hide the transfer behind the backward in between, and
// never raising the predicted peak.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/OffloadSchedule.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

namespace mlir::memopt {
#define GEN_PASS_DEF_SCHEDULEPREFETCH
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// Sets every offloading region's `prefetch_at` (none: its own backward).
void writeTriggers(const PrefetchTimeline &timeline,
                   ArrayRef<unsigned> triggers) {
  ArrayRef<CheckpointOp> regions = timeline.getRegions();
  for (unsigned i = 0; i < regions.size(); ++i) {
    if (timeline.getOffloadedBytes(i) == 0)
      continue;
    CheckpointOp op = regions[i];
    if (triggers[i] == i)
      op.removePrefetchAtAttr();
    else
      op.setPrefetchAt(CheckpointOp(regions[triggers[i]]).getLabel());
  }
}

std::string formatGBps(double gbps) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", gbps);
  return text;
}

struct SchedulePrefetchPass
    : public mlir::memopt::impl::SchedulePrefetchBase<SchedulePrefetchPass> {
  using SchedulePrefetchBase::SchedulePrefetchBase;

  void runOnOperation() override;
};
} // namespace

void SchedulePrefetchPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
    return markAllAnalysesPreserved();
  for (auto [name, gbps] :
       {std::pair<StringRef, double>{"bandwidth", bandwidth},
        {"d2h-bandwidth", d2hBandwidth}})
    if (!(gbps > 0) || !std::isfinite(gbps)) {
      func.emitError("memopt-schedule-prefetch: ")
          << name << " must be positive, got " << formatGBps(gbps) << " GB/s";
      return signalPassFailure();
    }
  Block &body = func.getBody().front();
  const CostModel cost;
  const OffloadLink link{d2hBandwidth * 1e9, bandwidth * 1e9};
  ForwardCopies forward = annotateOffloadHolds(func, link, cost);
  if (forward.offloadingRegions == 0) {
    func->removeAttr(kPrefetchScheduleAttrName);
    return;
  }
  PrefetchTimeline timeline(func, link, cost, forward.busyAfterForward);
  ArrayRef<CheckpointOp> regions = timeline.getRegions();
  llvm::StringMap<unsigned> labelCount;
  for (auto cp : body.getOps<CheckpointOp>())
    ++labelCount[cp.getLabel()];
  auto nameable = [&](unsigned j) {
    return labelCount[CheckpointOp(regions[j]).getLabel()] == 1;
  };

  SmallVector<unsigned> triggers;
  for (unsigned i = 0; i < regions.size(); ++i)
    triggers.push_back(i);
  // Early prefetches hold their bytes from the trigger on: never let that
  // raise the peak above prefetching each region at its own backward.
  auto predict = [&] { return TrainingMemoryModel(func).predictPeak(); };
  writeTriggers(timeline, triggers);
  const int64_t lateOnly = predict();

  // In the order backward needs them: the nearest trigger of least stall,
  // with the copies already placed queued on the same stream.
  for (unsigned i = regions.size(); i-- > 0;) {
    if (timeline.getOffloadedBytes(i) == 0)
      continue;
    unsigned best = i;
    double least = timeline.getStallSeconds(triggers);
    for (unsigned j = i + 1; j < regions.size(); ++j) {
      if (!nameable(j))
        continue;
      triggers[i] = j;
      double stall = timeline.getStallSeconds(triggers);
      if (stall < least - 1e-12) {
        least = stall;
        best = j;
      }
    }
    triggers[i] = best;
  }
  writeTriggers(timeline, triggers);
  int64_t peak = predict();
  while (peak > lateOnly) {
    // Move the farthest-reaching prefetch one nameable region closer.
    unsigned farthest = ~0u;
    unsigned reach = 0;
    for (unsigned i = 0; i < regions.size(); ++i)
      if (triggers[i] > i && triggers[i] - i > reach) {
        reach = triggers[i] - i;
        farthest = i;
      }
    if (farthest == ~0u)
      break;
    unsigned j = triggers[farthest] - 1;
    while (j > farthest && !nameable(j))
      --j;
    triggers[farthest] = j;
    writeTriggers(timeline, triggers);
    peak = predict();
  }

  unsigned early = 0;
  double transfer = 0;
  for (unsigned i = 0; i < regions.size(); ++i) {
    if (timeline.getOffloadedBytes(i) == 0)
      continue;
    early += triggers[i] != i;
    transfer += timeline.getTransferSeconds(i);
  }
  func->setAttr(kPrefetchScheduleAttrName,
                PrefetchScheduleAttr::get(
                    &getContext(), APFloat(double(bandwidth)),
                    forward.offloadingRegions, peak, early,
                    APFloat(timeline.getStallSeconds(triggers)),
                    APFloat(transfer), APFloat(double(d2hBandwidth)),
                    APFloat(forward.copySeconds), forward.heldPastNextOp));
}
