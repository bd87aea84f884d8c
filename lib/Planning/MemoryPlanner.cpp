//===- MemoryPlanner.cpp - checkpoint regions under a budget --------------===//
#include "memopt/Planning/MemoryPlanner.h"
#include "PlanApplier.h"
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/BackwardKernelMarks.h"
#include "memopt/Planning/BaselineStamp.h"
#include "memopt/Planning/Budget.h"
#include "memopt/Planning/ChainPlanner.h"
#include "memopt/Planning/FunctionChain.h"
#include "memopt/Planning/NestedRegions.h"
#include "memopt/Planning/PlanRefinement.h"
#include "memopt/Planning/RegionOutlining.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <memory>

using namespace mlir;
using namespace mlir::memopt;

// Packing a float32 spike tensor to bits and back runs at about 11.5 and
// 22.4 GB/s of input (docs/runtime-compression.md).
static constexpr double kCompressSecondsPerByte = 1 / 11.5e9 + 1 / 22.4e9;
// Of a host offload's two copies (out in forward, back in backward), the
// part the side stream does not hide behind compute: half, before the
// prefetch schedule (memopt-schedule-prefetch) places each copy.
static constexpr double kOffloadExposedFraction = 0.5;

FailureOr<MemoryPlanSummary>
mlir::memopt::planFunctionMemory(func::FuncOp func,
                                 const PlanningOptions &options) {
  if (failed(stampBaseline(func, options.budget)))
    return failure();
  TrainingMemoryModel memory(func);
  MemoryPlanSummary summary;
  summary.baselinePeakBytes = getStampedBaselineBytes(func);
  std::optional<int64_t> budget = getStampedBudgetBytes(func);
  if (budget)
    summary.budgetBytes = *budget;
  Preference preference = options.prefer;

  CostModel cost(func);
  BinaryValueAnalysis binary(func, options.assumeBinary);
  FunctionChainOptions chainOptions;
  chainOptions.forceCheckpoint = options.checkpoint;
  chainOptions.forbidCheckpoint = options.noCheckpoint;
  // A long function keeps a bounded number of cuts. Which ones suit a model
  // differs (cheap crossings for a spiking network's block boundaries,
  // balanced segments for a MobileNetV2's full-resolution stem), so both
  // chains are searched and their plans judged alike.
  std::vector<std::unique_ptr<FunctionChain>> chains;
  for (CutSelection selection :
       {CutSelection::CheapestCrossing, CutSelection::BalancedSaved}) {
    chainOptions.cutSelection = selection;
    FailureOr<FunctionChain> chain =
        buildFunctionChain(func, memory, cost, binary, chainOptions);
    if (failed(chain))
      return failure();
    chains.push_back(std::make_unique<FunctionChain>(std::move(*chain)));
    if (!chains.back()->coarsened)
      break;
  }
  summary.stepSeconds = chains.front()->stepSeconds;
  // The chain model is coarse (retained bytes compared at 1/256 of the peak,
  // below): the few hundred bytes of running statistics a region copies can
  // tip its budget sweep to other plans, 25 % worse on ResNet-18 (PyTorch
  // 2.6, 8x112). Each chain is also searched without those copies; the
  // training-memory model, which counts them, judges every plan alike.
  for (size_t c = 0, n = chains.size(); c < n; ++c)
    if (llvm::any_of(chains[c]->segments, [](const ChainSegment &segment) {
          return segment.writtenStateBytes > 0;
        })) {
      auto stateless = std::make_unique<FunctionChain>(*chains[c]);
      for (ChainSegment &segment : stateless->segments)
        segment.writtenStateBytes = 0;
      chains.push_back(std::move(stateless));
    }

  ChainPlannerOptions plannerOptions;
  plannerOptions.allowCompress = true;
  plannerOptions.allowOffload = options.allowsOffload();
  plannerOptions.compressSecondsPerByte = kCompressSecondsPerByte;
  plannerOptions.offloadSecondsPerByte =
      kOffloadExposedFraction * 2 / options.getOffloadBytesPerSecond();
  plannerOptions.maxGroupLength = 0;
  // Partial plans within 1/256 of the modelled peak compete on cost: this
  // bounds the search on long chains (each plan is then checked against
  // the training-memory model anyway).
  plannerOptions.retainedResolutionBytes =
      std::max<int64_t>(1, summary.baselinePeakBytes / 256);

  // The chain model approximates the training-memory model. Rather than
  // trusting its peaks, sweep chain budgets from "nothing recomputed" down to
  // its least-peak plan, and judge each optimal chain plan by the modelled
  // peak of the function it produces.
  std::vector<std::unique_ptr<PlanApplier>> appliers;
  for (const auto &chain : chains)
    appliers.push_back(std::make_unique<PlanApplier>(
        func.getBody().front(), *chain, options, PlanApplier::functionBody));
  struct Candidate {
    unsigned chain;
    ChainPlan plan;
    int64_t peak;
    int64_t outsideRegionsPeak;
  };
  std::vector<Candidate> candidates;
  std::string firstRefusal;
  auto consider = [&](unsigned chain, const ChainPlan &plan) {
    for (const Candidate &known : candidates)
      if (known.chain == chain &&
          known.plan.groups.size() == plan.groups.size() &&
          std::equal(known.plan.groups.begin(), known.plan.groups.end(),
                     plan.groups.begin(),
                     [](const ChainGroup &a, const ChainGroup &b) {
                       return a.begin == b.begin && a.end == b.end &&
                              a.checkpointed == b.checkpointed &&
                              a.policy == b.policy;
                     }))
        return;
    // A plan the outliner refuses is no candidate (the chain model does not
    // know every rule of regions); its message is kept in case none is left.
    FailureOr<PlanApplier::Peaks> peak;
    {
      ScopedDiagnosticHandler keep(func.getContext(), [&](Diagnostic &d) {
        if (firstRefusal.empty())
          firstRefusal = d.str();
        return success();
      });
      peak = appliers[chain]->predictPeaks(func, plan);
    }
    if (succeeded(peak))
      candidates.push_back({chain, plan, peak->step, peak->outsideRegions});
  };
  for (unsigned c = 0; c < chains.size(); ++c)
    for (const ChainPlan &plan : sweepChainBudgets(
             func.getContext(), chains[c]->segments, plannerOptions))
      consider(c, plan);

  if (candidates.empty())
    return func.emitError("no plan could be outlined: ") << firstRefusal;
  const Candidate *leastPeakCandidate = nullptr;
  for (const Candidate &c : candidates)
    if (!leastPeakCandidate || c.peak < leastPeakCandidate->peak ||
        (c.peak == leastPeakCandidate->peak &&
         c.plan.cost < leastPeakCandidate->plan.cost))
      leastPeakCandidate = &c;
  summary.minReachablePeakBytes =
      std::min(leastPeakCandidate->peak, summary.baselinePeakBytes);

  // Best candidate: least cost within the budget, or least peak within the
  // preference's time allowance.
  const Candidate *best = nullptr;
  double allowed = getTimeBudgetFraction(preference) * summary.stepSeconds;
  bool alternative = false;
  // The peak after nesting regions within `c`'s recomputes, within the
  // preference's allowance (on a scratch copy).
  auto nestedPeak = [&](const Candidate &c) -> std::optional<int64_t> {
    OwningOpRef<func::FuncOp> copy(func.clone());
    inheritModelStamps(func, *copy);
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    if (failed(appliers[c.chain]->apply(*copy, c.plan)))
      return std::nullopt;
    NestingLimits limits;
    limits.extraSeconds = allowed - c.plan.cost;
    FailureOr<NestingResult> nested =
        nestRegionsAtPeak(*copy, options, plannerOptions, limits);
    if (failed(nested))
      return std::nullopt;
    return nested->peakBytes;
  };
  // Replaces `best` by the candidate whose nested peak is least, among the
  // few whose peak outside regions is below best's nested peak; true when
  // another one won.
  auto chooseWithNesting = [&](const Candidate *&best) {
    constexpr unsigned kTries = 3;
    int64_t bar = nestedPeak(*best).value_or(best->peak);
    std::vector<const Candidate *> others;
    for (const Candidate &c : candidates)
      if (&c != best && c.plan.cost <= allowed && c.outsideRegionsPeak < bar)
        others.push_back(&c);
    llvm::sort(others, [](const Candidate *a, const Candidate *b) {
      return a->outsideRegionsPeak < b->outsideRegionsPeak;
    });
    bool replaced = false;
    for (const Candidate *c : llvm::ArrayRef(others).take_front(kTries))
      if (std::optional<int64_t> peak = nestedPeak(*c); peak && *peak < bar) {
        bar = *peak;
        best = c;
        replaced = true;
      }
    return replaced;
  };
  // A plan's modelled peak, without the outliner's refusals as diagnostics.
  auto predictQuietly = [&](PlanApplier &applier,
                            const ChainPlan &plan) -> FailureOr<int64_t> {
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    return applier.predict(func, plan);
  };
  // The least-peak candidate below `best`'s peak whose plan, with idle
  // regions dropped, costs no more than the allowance (at most kTries tried,
  // least peak first); kept in `refined`.
  std::optional<Candidate> refined;
  auto refineOverAllowance = [&](const Candidate *best) -> const Candidate * {
    constexpr unsigned kTries = 3;
    std::vector<const Candidate *> lower;
    for (const Candidate &c : candidates)
      if (c.peak < best->peak && c.plan.cost > allowed)
        lower.push_back(&c);
    llvm::sort(lower, [](const Candidate *a, const Candidate *b) {
      return a->peak < b->peak ||
             (a->peak == b->peak && a->plan.cost < b->plan.cost);
    });
    for (const Candidate *c : llvm::ArrayRef(lower).take_front(kTries)) {
      ChainPlan plan = dropIdleRegions(
          c->plan, chains[c->chain]->segments, plannerOptions, c->peak,
          [&](const ChainPlan &p) {
            return predictQuietly(*appliers[c->chain], p);
          });
      if (plan.cost <= allowed) {
        refined = Candidate{c->chain, plan, c->peak, c->outsideRegionsPeak};
        return &*refined;
      }
    }
    return nullptr;
  };
  if (budget) {
    for (const Candidate &c : candidates)
      if (c.peak <= *budget &&
          (!best || c.plan.cost < best->plan.cost ||
           (c.plan.cost == best->plan.cost && c.peak < best->peak)))
        best = &c;
    // Else the least-peak plan, with regions nested in recomputes that may
    // still bring it within the budget (checked below).
    summary.feasible = best != nullptr;
    if (!best)
      best = leastPeakCandidate;
  } else {
    for (const Candidate &c : candidates)
      if (c.plan.cost <= allowed &&
          (!best || c.peak < best->peak ||
           (c.peak == best->peak && c.plan.cost < best->plan.cost)))
        best = &c;
    if (!best) // only when forced regions alone exceed the allowance
      best = leastPeakCandidate;
    // A plan over the allowance may come within it once its idle regions
    // are dropped (what a budget's plan gets below): the sweep's chain plans
    // recompute more than their modelled peak needs.
    if (const Candidate *lower = refineOverAllowance(best))
      best = lower;
    // Regions nested in a recompute lower it; then a plan keeping less
    // outside its regions (the end of forward) may have the least peak.
    alternative = chooseWithNesting(best);
  }
  const FunctionChain &chain = *chains[best->chain];
  PlanApplier &applier = *appliers[best->chain];
  auto predictChosen = [&](const ChainPlan &plan) {
    return predictQuietly(applier, plan);
  };
  // Whole modules where that costs nothing, so that reports can name them.
  // (Not for a plan chosen for its nested peak: these judge flat peaks.)
  ChainPlan chosen = alternative ? best->plan : alignRegionsToModules(
      best->plan, chain.segments, ModuleSplitCounter(chain), plannerOptions,
      AlignmentLimits{best->peak, best->plan.cost}, predictChosen);
  if (!alternative)
    chosen = dropIdleRegions(chosen, chain.segments, plannerOptions,
                             best->peak, predictChosen);

  if (failed(applier.apply(func, chosen)))
    return failure();
  summary.recomputeSeconds = chosen.cost;
  for (const ChainGroup &group : chosen.groups)
    summary.regions += group.checkpointed;

  // Where a region's recompute is the peak, regions within it. A feasible
  // budget needs none; an infeasible one may take any time to be met.
  std::optional<int64_t> plannedPeak;
  if (!budget || !summary.feasible) {
    NestingLimits limits;
    limits.extraSeconds = budget ? INFINITY : allowed - chosen.cost;
    limits.targetPeakBytes = budget ? *budget : 0;
    FailureOr<NestingResult> nested =
        nestRegionsAtPeak(func, options, plannerOptions, limits);
    if (failed(nested))
      return failure();
    summary.recomputeSeconds += nested->addedSeconds;
    summary.regions += nested->regions;
    plannedPeak = nested->peakBytes; // modelled on `func` as it is now
  }
  summary.plannedPeakBytes =
      plannedPeak ? *plannedPeak : TrainingMemoryModel(func).predictPeak();
  summary.minReachablePeakBytes =
      std::min(summary.minReachablePeakBytes, summary.plannedPeakBytes);
  if (budget && !summary.feasible) {
    summary.feasible = summary.plannedPeakBytes <= *budget;
    if (!summary.feasible && !options.allowOverBudget)
      return func.emitError("budget ")
             << formatBytes(*budget) << " is infeasible for @"
             << func.getSymName() << ": the smallest reachable peak is "
             << formatBytes(summary.minReachablePeakBytes) << " (baseline "
             << formatBytes(summary.baselinePeakBytes)
             << "); raise --budget to at least that, or pass "
                "--allow-over-budget";
  }

  // By-channel batch-norm backwards cost two strided copies each, row
  // blocks of a weight gradient a few more calls: keep them only when the
  // plan needs them (its peak, or its budget).
  if (std::optional<int64_t> peak = dropUnneededBackwardKernels(
          func, budget && summary.feasible
                    ? std::max(*budget, summary.plannedPeakBytes)
                    : summary.plannedPeakBytes))
    summary.plannedPeakBytes = *peak;

  PlanGoal goal = PlanGoal::budget;
  if (!budget)
    switch (preference) {
    case Preference::Speed:
      goal = PlanGoal::speed;
      break;
    case Preference::Balanced:
      goal = PlanGoal::balanced;
      break;
    case Preference::Memory:
      goal = PlanGoal::memory;
      break;
    }
  func->setAttr(kPlanAttrName,
                PlanSummaryAttr::get(
                    func.getContext(), summary.baselinePeakBytes,
                    summary.plannedPeakBytes, summary.budgetBytes,
                    summary.feasible, summary.minReachablePeakBytes,
                    APFloat(summary.recomputeSeconds),
                    APFloat(summary.stepSeconds), goal, chain.segments.size()));
  return summary;
}
