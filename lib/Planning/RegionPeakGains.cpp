//===- RegionPeakGains.cpp - what each checkpoint region lowers -----------===//
//
// The planner chooses regions on its chain model, and each later step
// (module alignment, nesting, the least-peak alternative, dropping
// by-channel backwards) changes the function under them. A region that
// the final function's modelled peak does not need recomputes for
// nothing; one that it needs is worth what the peak rises without it.
// Both are read the same way: inline the region on a copy of the function
// and model the copy.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/RegionPeakGains.h"
#include "PlanApplier.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Planning/RegionOutlining.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::memopt;

/// Makes `region`, nested until now, a region of the function: where a
/// module is at hand, it reads the parameters, buffers and attributes it
/// took as inputs itself (as the outliner makes top-level regions: the
/// exporter passes no state into them), and its recompute no longer runs
/// within another's.
static void makeTopLevel(CheckpointOp region) {
  MLIRContext *context = region.getContext();
  // Its reason no longer speaks of the enclosing region.
  if (auto reason = region->getAttrOfType<StringAttr>(kRegionReasonAttrName)) {
    StringRef text = reason.getValue();
    text.consume_front(kNestedRegionReasonPrefix);
    text = text.split(kNestingReasonInfix).first;
    region->setAttr(kRegionReasonAttrName, StringAttr::get(context, text));
  }
  Block &body = region.getBodyBlock();
  OpBuilder builder = OpBuilder::atBlockBegin(&body);
  SmallVector<Attribute> policies(region.getPolicies().begin(),
                                  region.getPolicies().end());
  for (unsigned i = region.getInputs().size(); i-- > 0;) {
    Operation *def = region.getInputs()[i].getDefiningOp();
    if (!def || !isStateRead(def))
      continue;
    body.getArgument(i).replaceAllUsesWith(builder.clone(*def)->getResult(0));
    body.eraseArgument(i);
    region->eraseOperand(i);
    policies.erase(policies.begin() + i);
  }
  region.setPoliciesAttr(ArrayAttr::get(context, policies));
}

void mlir::memopt::inlineCheckpointRegion(CheckpointOp region) {
  Block &body = region.getBodyBlock();
  SmallVector<CheckpointOp> nested;
  if (isa<func::FuncOp>(region->getParentOp()))
    llvm::append_range(nested, body.getOps<CheckpointOp>());
  auto yield = cast<YieldOp>(body.getTerminator());
  for (auto [argument, input] :
       llvm::zip(body.getArguments(), region.getInputs()))
    argument.replaceAllUsesWith(input);
  region->replaceAllUsesWith(yield.getOperands());
  yield->erase();
  region->getBlock()->getOperations().splice(
      region->getIterator(), body.getOperations(), body.begin(), body.end());
  region->erase();
  for (CheckpointOp inner : nested)
    makeTopLevel(inner);
}

/// The regions of `func` in walk order: a region's index names the same
/// region in a copy of the function.
static SmallVector<CheckpointOp> collectRegions(func::FuncOp func) {
  SmallVector<CheckpointOp> regions;
  func.walk<WalkOrder::PreOrder>(
      [&](CheckpointOp region) { regions.push_back(region); });
  return regions;
}

/// The modelled peak of `func` with the regions at `indices` inlined, on a
/// copy.
static int64_t peakWithout(func::FuncOp func, ArrayRef<unsigned> indices) {
  OwningOpRef<func::FuncOp> copy(func.clone());
  inheritModelStamps(func, *copy);
  SmallVector<CheckpointOp> regions = collectRegions(*copy);
  for (unsigned index : indices)
    inlineCheckpointRegion(regions[index]);
  return TrainingMemoryModel(*copy).predictPeak();
}

/// Whether a drop may take `region` out: it keeps or packs its inputs (no
/// offload, no prefetch schedule) and no --checkpoint path asked for it. A
/// packed input that lowers nothing is recompute spent for nothing too:
/// inlined, the region's ops save what they saved before the plan. The
/// regions within it, if any, stay and recompute on their own.
static bool mayDrop(CheckpointOp region, ArrayRef<std::string> forcedModules,
                    const llvm::StringSet<> &prefetchTriggers) {
  if (!llvm::all_of(region.getPolicies(), [](Attribute policy) {
        return isa<KeepPolicyAttr, CompressPolicyAttr>(policy);
      }))
    return false;
  if (region.getPrefetchAt() || region.getOffloadHeldFor() ||
      prefetchTriggers.contains(region.getLabel()))
    return false;
  return !region.getBodyBlock()
              .walk([&](Operation *op) {
                return opInAnyModule(op, forcedModules)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              })
              .wasInterrupted();
}

SmallVector<int64_t>
mlir::memopt::modelPeaksWithoutEachRegion(func::FuncOp func) {
  SmallVector<int64_t> peaks(collectRegions(func).size());
  parallelFor(func.getContext(), 0, peaks.size(), [&](size_t i) {
    peaks[i] = peakWithout(func, static_cast<unsigned>(i));
  });
  return peaks;
}

std::optional<RegionDropResult>
mlir::memopt::dropRegionsBelowLimit(func::FuncOp func, int64_t limitBytes,
                                    ArrayRef<std::string> forcedModules,
                                    ArrayRef<int64_t> peaksWithout) {
  SmallVector<CheckpointOp> regions = collectRegions(func);
  assert(peaksWithout.size() == regions.size() &&
         "peaks modelled on another function");
  llvm::StringSet<> prefetchTriggers;
  for (CheckpointOp region : regions)
    if (std::optional<StringRef> trigger = region.getPrefetchAt())
      prefetchTriggers.insert(*trigger);
  // (peak without it, walk index) of each region that may go alone.
  SmallVector<std::pair<int64_t, unsigned>> below;
  for (auto [index, region] : llvm::enumerate(regions))
    if (peaksWithout[index] <= limitBytes &&
        mayDrop(region, forcedModules, prefetchTriggers))
      below.push_back({peaksWithout[index], index});
  if (below.empty())
    return std::nullopt;
  // The ones that raise the peak least go first.
  llvm::sort(below);

  SmallVector<unsigned> dropped;
  int64_t peak = 0;
  SmallVector<unsigned> all;
  for (auto [_, index] : below)
    all.push_back(index);
  if (int64_t together = peakWithout(func, all); together <= limitBytes) {
    dropped = all;
    peak = together;
  } else {
    for (auto [alonePeak, index] : below) {
      dropped.push_back(index);
      int64_t with =
          dropped.size() == 1 ? alonePeak : peakWithout(func, dropped);
      if (with <= limitBytes)
        peak = with;
      else
        dropped.pop_back();
    }
  }

  RegionDropResult result;
  result.peakBytes = peak;
  result.dropped = dropped.size();
  CostModel costs(func);
  for (unsigned index : dropped) {
    result.recomputeSeconds += costs.getCost(regions[index]).seconds;
    inlineCheckpointRegion(regions[index]);
  }
  return result;
}

void mlir::memopt::stampRegionPeakGains(func::FuncOp func, int64_t peakBytes,
                                        ArrayRef<int64_t> peaksWithout) {
  SmallVector<CheckpointOp> regions = collectRegions(func);
  assert(peaksWithout.size() == regions.size() &&
         "peaks modelled on another function");
  Builder builder(func.getContext());
  for (auto [region, peak] : llvm::zip(regions, peaksWithout))
    region->setAttr(
        kLowersPeakByAttrName,
        builder.getI64IntegerAttr(std::max<int64_t>(0, peak - peakBytes)));
}
