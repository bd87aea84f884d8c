//===- OffloadSchedule.cpp - When offload copies run on the side stream ---===//
#include "memopt/Planning/OffloadSchedule.h"

#include "memopt/Analysis/TensorBytes.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::memopt;

int64_t mlir::memopt::getOffloadedBytes(CheckpointOp region) {
  int64_t total = 0;
  for (auto [input, policy] :
       llvm::zip(region.getInputs(), region.getPolicies()))
    if (isa<OffloadPolicyAttr>(policy))
      total += std::max<int64_t>(getDeviceBytes(input.getType()), 0);
  return total;
}

/// Backward seconds of one top-level op; a region's includes its recompute
/// (CostModel::getCost of a region is its body's forward).
static double getBackwardSeconds(Operation *op, const CostModel &cost) {
  if (!isa<CheckpointOp>(op))
    return isa<TorchOp>(op) ? cost.getBackwardSeconds(op) : 0.0;
  double seconds = cost.getCost(op).seconds;
  op->walk([&](TorchOp inner) { seconds += cost.getBackwardSeconds(inner); });
  return seconds;
}

ForwardCopies mlir::memopt::annotateOffloadHolds(func::FuncOp func,
                                                 const OffloadLink &link,
                                                 const CostModel &cost) {
  ForwardCopies copies;
  if (func.isExternal())
    return copies;
  Block &body = func.getBody().front();
  SmallVector<Operation *> ops;
  SmallVector<double> ends; // forward seconds at the end of each op
  double now = 0;
  for (Operation &op : body.without_terminator()) {
    now += cost.getCost(&op).seconds; // a region: its body, without grad
    ops.push_back(&op);
    ends.push_back(now);
  }
  double queueFree = 0;
  for (unsigned k = 0; k < ops.size(); ++k) {
    auto region = dyn_cast<CheckpointOp>(ops[k]);
    if (!region)
      continue;
    int64_t bytes = getOffloadedBytes(region);
    if (bytes == 0) {
      region.removeOffloadHeldForAttr();
      continue;
    }
    ++copies.offloadingRegions;
    double seconds = CostModel::getTransferSeconds(bytes, link.deviceToHost);
    copies.copySeconds += seconds;
    double done = std::max(ends[k], queueFree) + seconds;
    queueFree = done;
    // Op m (> k) starts when op m - 1 ends; it runs with the copy pending
    // while it starts before the copy is done.
    unsigned held = 0;
    for (unsigned m = k + 1; m < ops.size() && ends[m - 1] < done; ++m)
      ++held;
    if (held == 0) {
      region.removeOffloadHeldForAttr();
      continue;
    }
    copies.heldPastNextOp += held > 1;
    region.setOffloadHeldFor(held);
  }
  copies.busyAfterForward = std::max(0.0, queueFree - now);
  return copies;
}

PrefetchTimeline::PrefetchTimeline(func::FuncOp func, const OffloadLink &link,
                                   const CostModel &cost, double busyAtStart)
    : busyAtStart(busyAtStart) {
  Block &body = func.getBody().front();
  SmallVector<Step> forward;
  for (Operation &op : body.without_terminator()) {
    Step step{getBackwardSeconds(&op, cost), -1};
    if (auto region = dyn_cast<CheckpointOp>(op)) {
      step.region = regions.size();
      regions.push_back(region);
      int64_t offloaded = memopt::getOffloadedBytes(region);
      bytes.push_back(offloaded);
      transfer.push_back(offloaded ? CostModel::getTransferSeconds(
                                         offloaded, link.hostToDevice)
                                   : 0);
    }
    forward.push_back(step);
  }
  steps.assign(forward.rbegin(), forward.rend());
}

double PrefetchTimeline::getStallSeconds(ArrayRef<unsigned> triggers) const {
  assert(triggers.size() == regions.size() && "one trigger per region");
  // Per trigger, the regions it fetches: its own first, then nearest
  // first (the order the runtime issues them in).
  SmallVector<SmallVector<unsigned, 2>> issuedAt(regions.size());
  for (unsigned i = regions.size(); i-- > 0;)
    if (bytes[i] > 0)
      issuedAt[triggers[i]].push_back(i);
  SmallVector<double> ready(regions.size(), 0);
  double now = 0, queueFree = busyAtStart, stall = 0;
  for (const Step &step : steps) {
    if (step.region >= 0) {
      unsigned r = step.region;
      for (unsigned i : issuedAt[r]) {
        queueFree = std::max(now, queueFree) + transfer[i];
        ready[i] = queueFree;
      }
      if (bytes[r] > 0 && ready[r] > now) {
        stall += ready[r] - now;
        now = ready[r];
      }
    }
    now += step.seconds;
  }
  return stall;
}
