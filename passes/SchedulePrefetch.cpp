//===- SchedulePrefetch.cpp - memopt-schedule-prefetch --------------------===//
//
// Picks, for every checkpoint region with offloaded inputs, the region whose
// backward starts the copy back to the device: late enough not to hold the
// bytes longer than needed, early enough to hide the transfer behind the
// backward in between, and never raising the predicted peak.
//
//===----------------------------------------------------------------------===//
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

namespace mlir::memopt {
#define GEN_PASS_DEF_SCHEDULEPREFETCH
#include "memopt/Transforms/Passes.h.inc"
} // namespace mlir::memopt

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// Backward time of one top-level op; a region's includes its recompute.
double getBackwardTime(Operation *op, const CostModel &cost) {
  auto cp = dyn_cast<CheckpointOp>(op);
  if (!cp)
    return isa<TorchOp>(op) ? cost.getBackwardSeconds(op) : 0.0;
  double seconds = 0;
  for (Operation &inner : cp.getBodyBlock().without_terminator())
    if (isa<TorchOp>(inner))
      seconds += cost.getCost(&inner).seconds + cost.getBackwardSeconds(&inner);
  return seconds;
}

struct Region {
  CheckpointOp op;
  double endTime; // backward seconds of the top-level ops up to and
                  // including this region, from the function's start
  bool nameable;  // its label is unique in the function
  int64_t offloadedBytes = 0;
  double transfer = 0;
  unsigned trigger; // index into the region list; itself when not early
};

/// Sets every offloading region's `prefetch_at` (none: its own backward).
void writeTriggers(ArrayRef<Region> regions) {
  for (unsigned i = 0; i < regions.size(); ++i) {
    const Region &r = regions[i];
    if (r.offloadedBytes == 0)
      continue;
    CheckpointOp op = r.op;
    if (r.trigger == i)
      op.removePrefetchAtAttr();
    else
      op.setPrefetchAt(CheckpointOp(regions[r.trigger].op).getLabel());
  }
}

struct SchedulePrefetchPass
    : public memopt::impl::SchedulePrefetchBase<SchedulePrefetchPass> {
  using SchedulePrefetchBase::SchedulePrefetchBase;

  void runOnOperation() override;
};
} // namespace

void SchedulePrefetchPass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal() || func->hasAttr(kPassthroughAttrName))
    return markAllAnalysesPreserved();
  if (!(bandwidth > 0)) {
    std::string given;
    llvm::raw_string_ostream(given) << llvm::format("%g", double(bandwidth));
    func.emitError("memopt-schedule-prefetch: bandwidth must be positive, got ")
        << given << " GB/s";
    return signalPassFailure();
  }
  Block &body = func.getBody().front();
  const CostModel cost;
  llvm::StringMap<unsigned> labelCount;
  for (auto cp : body.getOps<CheckpointOp>())
    ++labelCount[cp.getLabel()];

  SmallVector<Region> regions;
  double elapsed = 0;
  for (Operation &op : body) {
    elapsed += getBackwardTime(&op, cost);
    auto cp = dyn_cast<CheckpointOp>(op);
    if (!cp)
      continue;
    Region r{cp, elapsed, labelCount[cp.getLabel()] == 1};
    for (auto [input, policy] : llvm::zip(cp.getInputs(), cp.getPolicies()))
      if (isa<OffloadPolicyAttr>(policy))
        r.offloadedBytes += getDeviceBytes(input.getType());
    r.transfer =
        r.offloadedBytes
            ? CostModel::getTransferSeconds(r.offloadedBytes, bandwidth * 1e9)
            : 0;
    r.trigger = regions.size();
    regions.push_back(r);
  }
  // The window of trigger j for region i: the backward from j's start to
  // i's start, i.e. of the top-level ops after i up to and including j.
  auto window = [&](unsigned i, unsigned j) {
    return regions[j].endTime - regions[i].endTime;
  };
  unsigned offloading = llvm::count_if(
      regions, [](const Region &r) { return r.offloadedBytes > 0; });
  if (offloading == 0) {
    func->removeAttr(kPrefetchScheduleAttrName);
    return;
  }
  // Early prefetches hold their bytes from the trigger on: never let that
  // raise the peak above prefetching each region at its own backward (every
  // trigger is still its own region here).
  auto predict = [&] { return TrainingMemoryModel(func).predictPeak(); };
  writeTriggers(regions);
  const int64_t lateOnly = predict();

  for (unsigned i = 0; i < regions.size(); ++i) {
    Region &r = regions[i];
    if (r.offloadedBytes == 0)
      continue;
    for (unsigned j = i + 1; j < regions.size(); ++j) {
      if (!regions[j].nameable)
        continue;
      r.trigger = j;
      if (window(i, j) >= r.transfer)
        break;
    }
  }
  writeTriggers(regions);
  int64_t peak = predict();
  while (peak > lateOnly) {
    // Move the farthest-reaching prefetch one nameable region closer.
    unsigned farthest = ~0u;
    unsigned reach = 0;
    for (unsigned i = 0; i < regions.size(); ++i)
      if (regions[i].trigger > i && regions[i].trigger - i > reach) {
        reach = regions[i].trigger - i;
        farthest = i;
      }
    if (farthest == ~0u)
      break;
    Region &r = regions[farthest];
    unsigned j = r.trigger - 1;
    while (j > farthest && !regions[j].nameable)
      --j;
    r.trigger = j;
    writeTriggers(regions);
    peak = predict();
  }

  unsigned early = 0;
  double transfer = 0, stall = 0;
  for (unsigned i = 0; i < regions.size(); ++i) {
    const Region &r = regions[i];
    if (r.offloadedBytes == 0)
      continue;
    early += r.trigger != i;
    transfer += r.transfer;
    stall += std::max(0.0, r.transfer - window(i, r.trigger));
  }
  func->setAttr(kPrefetchScheduleAttrName,
                PrefetchScheduleAttr::get(&getContext(), APFloat(bandwidth),
                                          offloading, peak, early,
                                          APFloat(stall), APFloat(transfer)));
}
