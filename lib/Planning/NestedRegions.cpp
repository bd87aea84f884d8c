//===- NestedRegions.cpp - regions within a region's recompute ------------===//
#include "memopt/Planning/NestedRegions.h"
#include "PlanApplier.h"
#include "memopt/Dialect/MemoptAttrNames.h"

#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/Budget.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"

#include <set>

using namespace mlir;
using namespace mlir::memopt;

/// Positions of `op` and of its ancestors in their blocks, outermost first:
/// the same op in a clone of the function.
static std::vector<unsigned> pathFromFunction(Operation *op) {
  std::vector<unsigned> path;
  for (; !isa<func::FuncOp>(op); op = op->getParentOp()) {
    unsigned position = 0;
    for (Operation &sibling : *op->getBlock()) {
      if (&sibling == op)
        break;
      ++position;
    }
    path.insert(path.begin(), position);
  }
  return path;
}

static Operation *followPath(func::FuncOp func, ArrayRef<unsigned> path) {
  Block *block = &func.getBody().front();
  Operation *op = nullptr;
  for (unsigned position : path) {
    op = &*std::next(block->begin(), position);
    if (op->getNumRegions())
      block = &op->getRegion(0).front();
  }
  return op;
}

/// The body of `region` as a function of its own (inputs as arguments,
/// yielded values as results), for the chain builder and its analyses.
/// Its ops are clones of the body's, in the same order.
static OwningOpRef<func::FuncOp> bodyAsFunction(CheckpointOp region) {
  Block &body = region.getBodyBlock();
  Operation *yield = body.getTerminator();
  OpBuilder builder(region.getContext());
  auto type = builder.getFunctionType(body.getArgumentTypes(),
                                      yield->getOperandTypes());
  OwningOpRef<func::FuncOp> func =
      func::FuncOp::create(region.getLoc(), "region_body", type);
  Block *entry = func->addEntryBlock();
  IRMapping mapping;
  mapping.map(body.getArguments(), entry->getArguments());
  builder.setInsertionPointToEnd(entry);
  for (Operation &op : body.without_terminator())
    builder.clone(op, mapping);
  SmallVector<Value> results;
  for (Value value : yield->getOperands())
    results.push_back(mapping.lookup(value));
  builder.create<func::ReturnOp>(yield->getLoc(), results);
  inheritModelStamps(region, *func);
  return func;
}

static unsigned regionDepth(Operation *op) {
  unsigned depth = 0;
  for (; op; op = op->getParentOfType<CheckpointOp>())
    depth += isa<CheckpointOp>(op);
  return depth;
}

/// The highest point of `memory`'s timeline while `region` recomputes and
/// runs its backward.
static int64_t peakWithin(const TrainingMemoryModel &memory,
                          Operation *region) {
  int64_t peak = 0;
  for (const TimelineEntry &entry : memory.getTimeline())
    if (entry.op && region->isProperAncestor(entry.op))
      peak = std::max(peak, entry.liveBytes);
  return peak;
}

namespace {
/// A nested plan as the training-memory model sees the whole step.
struct NestedCandidate {
  ChainPlan plan;
  int64_t peak = 0;      // of the step
  int64_t localPeak = 0; // while the enclosing region recomputes and
                         // runs its backward
};

/// Modelled peaks of `func` with `plan` nested in the region at `path`
/// (on a scratch copy); failure when the plan cannot be outlined.
FailureOr<NestedCandidate> evaluate(func::FuncOp func,
                                    const std::vector<unsigned> &path,
                                    const PlanApplier &applier,
                                    const ChainPlan &plan) {
  OwningOpRef<func::FuncOp> copy(func.clone());
  inheritModelStamps(func, *copy);
  {
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(applier.apply(*copy, plan)))
      return failure();
  }
  Operation *region = followPath(*copy, path);
  TrainingMemoryModel memory(*copy);
  return NestedCandidate{plan, memory.predictPeak(),
                         peakWithin(memory, region)};
}

/// Whether `a` is the better nested plan: within the target when there is
/// one, at least cost; else the least peak of the step, then the least
/// peak of the region (it may be the step's peak once other regions are
/// refined), then the least cost.
bool isBetter(const NestedCandidate &a, const NestedCandidate &b,
              int64_t target) {
  if (target) {
    bool aMeets = a.peak <= target, bMeets = b.peak <= target;
    if (aMeets != bMeets)
      return aMeets;
    if (aMeets)
      return a.plan.cost < b.plan.cost;
  }
  if (a.peak != b.peak)
    return a.peak < b.peak;
  if (a.localPeak != b.localPeak)
    return a.localPeak < b.localPeak;
  return a.plan.cost < b.plan.cost;
}
} // namespace

/// Appends to the reason of each region just nested in `outer` what the
/// whole-step model measured: the chain of a body sees the body's inputs as
/// resident, so its own figure can be 0 bytes for a region that helps.
static void describeNesting(CheckpointOp outer, int64_t before,
                            int64_t after) {
  Builder b(outer.getContext());
  for (auto inner : outer.getBodyBlock().getOps<CheckpointOp>()) {
    auto reason = inner->getAttrOfType<StringAttr>(kRegionReasonAttrName);
    std::string text = reason ? reason.str() : std::string();
    text += kNestingReasonInfix.str() + outer.getLabel().str() + " from " +
            formatBytes(before) + " to " + formatBytes(after);
    inner->setAttr(kRegionReasonAttrName, b.getStringAttr(text));
  }
}

FailureOr<NestingResult> mlir::memopt::nestRegionsAtPeak(
    func::FuncOp func, const PlanningOptions &options,
    const ChainPlannerOptions &planner, const NestingLimits &limits) {
  NestingResult result;
  std::set<std::vector<unsigned>> refined;
  for (;;) {
    TrainingMemoryModel memory(func);
    result.peakBytes = memory.predictPeak();
    if (limits.targetPeakBytes && result.peakBytes <= limits.targetPeakBytes)
      break;
    const TimelineEntry *peak = memory.getPeakEntry();
    if (!peak || !peak->op)
      break;
    auto region = peak->op->getParentOfType<CheckpointOp>();
    if (!region || regionDepth(region) >= limits.maxDepth)
      break;
    std::vector<unsigned> path = pathFromFunction(region);
    int64_t localPeak = peakWithin(memory, region);
    if (!refined.insert(path).second)
      break; // its body was planned already; the peak is in what is left

    OwningOpRef<func::FuncOp> body = bodyAsFunction(region);
    TrainingMemoryModel bodyMemory(*body);
    CostModel cost(*body);
    BinaryValueAnalysis binary(*body, options.assumeBinary);
    FunctionChainOptions chainOptions; // --checkpoint applied at top level
    FailureOr<FunctionChain> chain =
        buildFunctionChain(*body, bodyMemory, cost, binary, chainOptions);
    if (failed(chain))
      return failure();
    PlanApplier applier(
        body->getBody().front(), *chain, options,
        [&path](func::FuncOp target) -> Block & {
          return cast<CheckpointOp>(followPath(target, path)).getBodyBlock();
        });
    double allowed = limits.extraSeconds - result.addedSeconds;
    std::optional<NestedCandidate> best;
    for (const ChainPlan &plan :
         sweepChainBudgets(func.getContext(), chain->segments, planner)) {
      if (plan.cost > allowed ||
          llvm::none_of(plan.groups,
                        [](const ChainGroup &g) { return g.checkpointed; }))
        continue;
      FailureOr<NestedCandidate> candidate =
          evaluate(func, path, applier, plan);
      bool lowers =
          succeeded(candidate) && (candidate->peak < result.peakBytes ||
                                   (candidate->peak == result.peakBytes &&
                                    candidate->localPeak < localPeak));
      if (lowers &&
          (!best || isBetter(*candidate, *best, limits.targetPeakBytes)))
        best = *candidate;
    }
    if (!best)
      break;
    if (failed(applier.apply(func, best->plan)))
      return failure();
    describeNesting(cast<CheckpointOp>(followPath(func, path)), localPeak,
                    best->localPeak);
    result.addedSeconds += best->plan.cost;
    for (const ChainGroup &group : best->plan.groups)
      result.regions += group.checkpointed;
  }
  return result;
}
