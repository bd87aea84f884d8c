//===- PlanApplier.cpp - outline a chain plan into checkpoint regions -----===//
#include "PlanApplier.h"

#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Planning/OffloadSchedule.h"
#include "memopt/Planning/RegionOutlining.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Format.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

PlanApplier::PlanApplier(Block &source, const FunctionChain &chain,
                         const PlanningOptions &options, BlockLocator locate)
    : chain(chain), options(options), locate(std::move(locate)) {
  unsigned next = 0;
  for (Operation &op : source.without_terminator())
    index[&op] = next++;
}

FailureOr<int64_t> PlanApplier::predict(func::FuncOp func,
                                        const ChainPlan &plan) const {
  FailureOr<Peaks> peaks = predictPeaks(func, plan);
  return failed(peaks) ? FailureOr<int64_t>(failure()) : peaks->step;
}

FailureOr<PlanApplier::Peaks>
PlanApplier::predictPeaks(func::FuncOp func, const ChainPlan &plan) const {
  OwningOpRef<func::FuncOp> copy(func.clone());
  inheritModelStamps(func, *copy);
  // Offload plans name their prefetch triggers by region label.
  Labels labels = options.allowsOffload() ? Labels::Final : Labels::Scratch;
  if (failed(apply(*copy, plan, labels)))
    return failure();
  TrainingMemoryModel memory(*copy);
  Peaks peaks{memory.predictPeak(), 0};
  for (const TimelineEntry &entry : memory.getTimeline())
    if (entry.op && !entry.op->getParentOfType<CheckpointOp>())
      peaks.outsideRegions = std::max(peaks.outsideRegions, entry.liveBytes);
  return peaks;
}

/// The module path of `members` when they are all of that module, else
/// the range of its submodules they cover ("blocks.0..blocks.3").
static std::string labelFor(ArrayRef<Operation *> members, Block &body,
                            function_ref<bool(Operation *)> definesOnlyFree) {
  std::string label = getRegionLabel(members, definesOnlyFree);
  if (label.find("..") != std::string::npos)
    return label;
  llvm::SmallPtrSet<Operation *, 32> inside(members.begin(), members.end());
  bool whole = llvm::none_of(body, [&](Operation &op) {
    return !inside.contains(&op) && !definesOnlyFree(&op) &&
           locationInModule(op.getLoc(), label);
  });
  if (whole)
    return label;
  auto child = [&](Operation *op) {
    std::string path = getModulePath(op);
    size_t next = path.find('.', label.size() + 1);
    return next == std::string::npos ? path : path.substr(0, next);
  };
  // Ops of the model's own forward (no module path) name nothing.
  SmallVector<Operation *> computing;
  for (Operation *op : members)
    if (!definesOnlyFree(op) && !getModulePath(op).empty())
      computing.push_back(op);
  if (computing.empty())
    return label;
  std::string first = child(computing.front()), last = child(computing.back());
  return first == last ? first : first + ".." + last;
}

/// Free ops left without users once their users moved into regions.
static void eraseUnusedFreeOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  // Users before definitions, so chains of free ops go at once.
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && definesOnlyFreeValues(op))
      op->erase();
}

const PlanApplier::BlockFacts &PlanApplier::getFacts(func::FuncOp func,
                                                     Block &target) const {
  std::call_once(factsOnce, [&] {
    BinaryValueAnalysis binary(func, options.assumeBinary);
    FreeValueMemo memo;
    for (Operation &op : target.without_terminator()) {
      facts.firstResult.push_back(facts.freeResult.size());
      for (Value result : op.getResults()) {
        facts.freeResult.push_back(memo.isFree(result));
        facts.binaryResult.push_back(binary.isBinary(result));
      }
    }
    facts.firstResult.push_back(facts.freeResult.size());
    for (BlockArgument argument : target.getArguments())
      facts.binaryArgument.push_back(binary.isBinary(argument));
  });
  return facts;
}

LogicalResult PlanApplier::apply(func::FuncOp func, const ChainPlan &plan,
                                 Labels labels) const {
  Block &target = locate(func);
  std::vector<Operation *> ops;
  for (Operation &op : target.without_terminator())
    ops.push_back(&op);
  const BlockFacts &known = getFacts(func, target);
  if (known.getNumOps() != ops.size())
    return func.emitError("internal error: a plan applied to a block of ")
           << ops.size() << " ops, built for one of " << known.getNumOps();
  // Facts by position, as the block is now. Outlining erases the ops it
  // moves into a region; every value asked about later is one of those
  // still in place, or a region's result, decided on its own (a new op may
  // reuse an erased one's address). Region bodies are isolated: every
  // operand of the block's ops is a result of one of them or an argument.
  DenseMap<Operation *, unsigned> position;
  position.reserve(ops.size());
  for (auto [i, op] : llvm::enumerate(ops))
    position[op] = i;
  FreeValueMemo nestedMemo; // values inside ops' own regions
  auto resultFact =
      [&](OpResult result,
          const std::vector<bool> &byResult) -> std::optional<bool> {
    auto at = position.find(result.getOwner());
    if (at == position.end())
      return std::nullopt;
    return byResult[known.firstResult[at->second] + result.getResultNumber()];
  };
  auto isFree = [&](Value value) {
    auto result = dyn_cast<OpResult>(value);
    if (!result)
      return true; // block arguments: inputs, or a body's resident values
    if (isa<CheckpointOp>(result.getOwner()))
      return isFreeValue(value);
    if (std::optional<bool> free = resultFact(result, known.freeResult))
      return *free;
    return nestedMemo.isFree(value);
  };
  auto definesOnlyFree = [&](Operation *op) {
    if (isa<CheckpointOp>(op))
      return definesOnlyFreeValues(op);
    auto at = position.find(op);
    return at != position.end() ? known.definesOnlyFree(at->second)
                                : nestedMemo.definesOnlyFree(op);
  };
  auto isBinary = [&](Value value) {
    if (auto argument = dyn_cast<BlockArgument>(value))
      return argument.getOwner() == &target &&
             known.binaryArgument[argument.getArgNumber()];
    auto result = cast<OpResult>(value);
    return !isa<CheckpointOp>(result.getOwner()) &&
           resultFact(result, known.binaryResult).value_or(false);
  };
  SmallVector<CheckpointOp> regions;
  for (const ChainGroup &group : llvm::reverse(plan.groups)) {
    if (!group.checkpointed)
      continue;
    SmallVector<Operation *> members;
    for (unsigned k = group.begin; k < group.end; ++k)
      for (Operation *op : chain.ops[k])
        members.push_back(ops[index.lookup(op)]);
    auto policyFor = [&](Value input) -> Attribute {
      MLIRContext *context = func.getContext();
      // Function inputs, parameters and buffers stay resident anyway.
      bool activation = isa<TensorType>(input.getType()) && !isFree(input);
      // Binary inputs kept are packed anyway (memopt-pack-region-inputs
      // after planning): predict what will run.
      if (activation && group.policy != InputPolicy::Offload &&
          isBinary(input) && isCompressibleTensor(input.getType()))
        return CompressPolicyAttr::get(context, CompressionKind::bit);
      if (activation && group.policy == InputPolicy::Offload)
        return OffloadPolicyAttr::get(context, options.offloadKind);
      return KeepPolicyAttr::get(context);
    };
    std::string label = labels == Labels::Final
                            ? labelFor(members, target, definesOnlyFree)
                            : getRegionLabel(members, definesOnlyFree);
    FailureOr<CheckpointOp> region =
        outlineCheckpointRegion(members, label, policyFor, isFree);
    if (failed(region))
      return failure();
    annotate(*region, group);
    regions.push_back(*region);
  }
  eraseUnusedFreeOps(target);
  // Gradients summed as eager sums them, or no plan (the chain model does
  // not see every use a region ends up with).
  llvm::DenseMap<StringAttr, unsigned> uses;
  countParameterUses(func, uses);
  for (CheckpointOp region : regions)
    if (StringAttr param = findSplitParameterSum(region, uses))
      return region.emitError("checkpoint region '")
             << region.getLabel() << "' would hold some but not all of the "
             << uses.lookup(param) << " uses of parameter '" << param.getValue()
             << "' and sum its gradient in another order than autograd";
  // A copy to the host keeps its input on the device while the next ops
  // run: judge the plan with that (memopt-schedule-prefetch redoes it on
  // the final function).
  if (options.allowsOffload()) {
    annotateOffloadHolds(func,
                         OffloadLink{options.getOffloadD2HBytesPerSecond(),
                                     options.getOffloadBytesPerSecond()},
                         CostModel(func));
  }
  return success();
}

void PlanApplier::annotate(CheckpointOp region, const ChainGroup &group) const {
  const ChainSegment &head = chain.segments[group.begin];
  int64_t stored = head.savedInputBytes;
  double seconds = 0;
  bool forced = false;
  for (unsigned k = group.begin; k < group.end; ++k) {
    const ChainSegment &segment = chain.segments[k];
    stored += segment.savedBytes + segment.savedOutputBytes;
    if (k > group.begin)
      stored += segment.savedInputBytes - segment.sharedBoundaryBytes;
    seconds += segment.forwardCost;
    forced |= segment.forceCheckpoint;
  }
  int64_t retained = head.inputBytes;
  StringRef how = "its input kept";
  if (group.policy == InputPolicy::Compress) {
    retained = head.packedInputBytes.value_or(head.inputBytes);
    how = "its binary input packed to 1 bit per value";
  } else if (group.policy == InputPolicy::Offload) {
    retained = 0;
    how = options.offloadKind == OffloadKind::unified
              ? "its input offloaded to managed memory on the host"
              : "its input offloaded to host memory";
  }
  int64_t avoided = std::max<int64_t>(0, stored - retained);
  std::string reason;
  llvm::raw_string_ostream os(reason);
  bool nested = isa<CheckpointOp>(region->getParentOp());
  os << (forced ? "forced by --checkpoint; " : "")
     << (nested ? kNestedRegionReasonPrefix : "") << "recomputing "
     << llvm::format("%.3f", seconds * 1e3) << " ms in backward";
  // Inside a body the chain sees the body's inputs as resident: what the
  // region saves may be what its ops would have kept of them anyway (the
  // nesting step adds the peak it measured on the whole step).
  if (nested && avoided == 0)
    os << ", with " << how;
  else
    os << " frees " << llvm::format("%.2f", avoided / 1048576.0)
       << " MiB, with " << how;
  Builder b(region.getContext());
  region->setAttr(kRegionReasonAttrName, b.getStringAttr(os.str()));
  region->setAttr(kSavedBytesAvoidedAttrName, b.getI64IntegerAttr(avoided));
}

/// The chain-model peak when nothing is checkpointed.
static int64_t storedChainPeak(const std::vector<ChainSegment> &segments,
                               const ChainPlannerOptions &options) {
  std::vector<ChainGroup> groups;
  for (unsigned k = 0; k < segments.size(); ++k)
    groups.push_back(ChainGroup{k, k + 1, false, InputPolicy::Keep});
  return evaluateChainPlan(segments, groups, options).peakBytes;
}

std::vector<ChainPlan>
mlir::memopt::sweepChainBudgets(MLIRContext *context,
                                const std::vector<ChainSegment> &segments,
                                const ChainPlannerOptions &options) {
  auto planWithin = [&](int64_t chainBudget) {
    ChainPlannerOptions within = options;
    within.budgetBytes = chainBudget;
    return planChain(segments, within);
  };
  std::vector<ChainPlan> plans = {planWithin(0)}; // infeasible: least peak
  int64_t chainBaseline = storedChainPeak(segments, options);
  int64_t low = std::max<int64_t>(1, plans.front().peakBytes);
  constexpr int kSweep = 12;
  std::vector<int64_t> chainBudgets;
  for (int step = 0; step <= kSweep; ++step) {
    double fraction = double(step) / kSweep;
    chainBudgets.push_back(static_cast<int64_t>(
        low * std::pow(double(std::max(chainBaseline, low)) / low, fraction)));
  }
  chainBudgets.push_back(INT64_MAX);
  // Independent searches (most of the planning time): run them in parallel.
  std::vector<ChainPlan> sweep(chainBudgets.size());
  parallelFor(context, 0, sweep.size(),
              [&](size_t i) { sweep[i] = planWithin(chainBudgets[i]); });
  for (size_t i = 0; i < sweep.size(); ++i)
    if (i + 1 == sweep.size() || sweep[i].feasible)
      plans.push_back(std::move(sweep[i]));
  return plans;
}
