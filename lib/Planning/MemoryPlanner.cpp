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
#include "memopt/Planning/RegionPeakGains.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"

#include <cmath>
#include <memory>
#include <mutex>

using namespace mlir;
using namespace mlir::memopt;

// Packing a float32 spike tensor to bits and back runs at about 11.5 and
// 22.4 GB/s of input (docs/runtime-compression.md).
static constexpr double kCompressSecondsPerByte = 1 / 11.5e9 + 1 / 22.4e9;
// Of a host offload's two copies (out in forward, back in backward), the
// part the side stream does not hide behind compute: half, before the
// prefetch schedule (memopt-schedule-prefetch) places each copy.
static constexpr double kOffloadExposedFraction = 0.5;

namespace {
/// A chain plan the training-memory model has judged on the function.
struct Candidate {
  unsigned chain;
  ChainPlan plan;
  int64_t peak;
  int64_t outsideRegionsPeak;
};

/// The search for one function's plan: its chains (one per cut selection,
/// and each again without region state copies), the candidates their
/// budget sweeps give, judged by the training-memory model, and the choice
/// among them for a budget or a preference.
class PlanSearch {
public:
  PlanSearch(func::FuncOp func, const PlanningOptions &options)
      : func(func), options(options) {}

  /// Builds the chains; returns the modelled step seconds.
  FailureOr<double> buildChains(TrainingMemoryModel &memory);
  /// Sweeps every chain's budgets and keeps each plan the outliner accepts
  /// with its modelled peak. Fails (with the first refusal) when none is
  /// left.
  LogicalResult collectCandidates(int64_t baselinePeakBytes);

  /// The candidate of least peak (then least cost).
  const Candidate &getLeastPeakCandidate() const { return *leastPeak; }
  /// Least cost within `budget`, else null.
  const Candidate *chooseWithinBudget(int64_t budget) const;
  /// Least peak within the preference's time allowance; `nestedWon` says
  /// whether the choice was made for its peak with regions nested in
  /// recomputes.
  const Candidate *chooseForPreference(Preference preference,
                                       double stepSeconds, bool &nestedWon);
  /// The chosen candidate's plan with regions aligned to whole modules and
  /// idle ones dropped (a plan chosen for its nested peak stays as it is:
  /// these steps judge flat peaks).
  ChainPlan finish(const Candidate &best, bool nestedWon);

  const FunctionChain &getChain(const Candidate &c) const {
    return *chains[c.chain];
  }
  PlanApplier &getApplier(const Candidate &c) { return *appliers[c.chain]; }
  const ChainPlannerOptions &getPlannerOptions() const {
    return plannerOptions;
  }
  /// The recompute seconds the preference allows (set by
  /// chooseForPreference).
  double getAllowedSeconds() const { return allowed; }

private:
  /// Models each (chain, plan) on the function and keeps those the
  /// outliner accepts as candidates, in the given order.
  void judge(const std::vector<std::pair<unsigned, ChainPlan>> &plans);
  /// The peak after nesting regions within `c`'s recomputes, within the
  /// preference's allowance (on a scratch copy).
  std::optional<int64_t> nestedPeak(const Candidate &c);
  /// Replaces `best` by the candidate whose nested peak is least, among the
  /// few whose peak outside regions is below best's nested peak; true when
  /// another one won.
  bool chooseWithNesting(const Candidate *&best);
  /// A plan's modelled peak, without the outliner's refusals as diagnostics.
  FailureOr<int64_t> predictQuietly(PlanApplier &applier,
                                    const ChainPlan &plan);
  /// The least-peak candidate below `best`'s peak whose plan, with idle
  /// regions dropped, costs no more than the allowance (levels bisected);
  /// kept in `refined`.
  const Candidate *refineOverAllowance(const Candidate *best);

  static constexpr unsigned kTries = 3;
  func::FuncOp func;
  const PlanningOptions &options;
  std::vector<std::unique_ptr<FunctionChain>> chains;
  std::vector<std::unique_ptr<PlanApplier>> appliers;
  ChainPlannerOptions plannerOptions;
  std::vector<Candidate> candidates;
  std::string firstRefusal;
  const Candidate *leastPeak = nullptr;
  std::optional<Candidate> refined;
  double allowed = 0;
};
} // namespace

FailureOr<double> PlanSearch::buildChains(TrainingMemoryModel &memory) {
  CostModel cost(func);
  BinaryValueAnalysis binary(func, options.assumeBinary);
  FunctionChainOptions chainOptions;
  chainOptions.forceCheckpoint = options.checkpoint;
  chainOptions.forbidCheckpoint = options.noCheckpoint;
  // A long function keeps a bounded number of cuts. Which ones suit a model
  // differs (cheap crossings for a spiking network's block boundaries,
  // balanced segments for a MobileNetV2's full-resolution stem), so both
  // chains are searched and their plans judged alike.
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
  return chains.front()->stepSeconds;
}

static bool sameGroups(const ChainPlan &a, const ChainPlan &b) {
  return a.groups.size() == b.groups.size() &&
         std::equal(a.groups.begin(), a.groups.end(), b.groups.begin(),
                    [](const ChainGroup &x, const ChainGroup &y) {
                      return x.begin == y.begin && x.end == y.end &&
                             x.checkpointed == y.checkpointed &&
                             x.policy == y.policy;
                    });
}

LogicalResult PlanSearch::collectCandidates(int64_t baselinePeakBytes) {
  plannerOptions.allowCompress = true;
  plannerOptions.allowOffload = options.allowsOffload();
  plannerOptions.compressSecondsPerByte = kCompressSecondsPerByte;
  plannerOptions.offloadSecondsPerByte =
      kOffloadExposedFraction * (1 / options.getOffloadD2HBytesPerSecond() +
                                 1 / options.getOffloadBytesPerSecond());
  plannerOptions.maxGroupLength = 0;
  // Partial plans within 1/256 of the modelled peak compete on cost: this
  // bounds the search on long chains (each plan is then checked against
  // the training-memory model anyway).
  plannerOptions.retainedResolutionBytes =
      std::max<int64_t>(1, baselinePeakBytes / 256);

  // The chain model approximates the training-memory model. Rather than
  // trusting its peaks, sweep chain budgets from "nothing recomputed" down to
  // its least-peak plan, and judge each optimal chain plan by the modelled
  // peak of the function it produces.
  for (const auto &chain : chains)
    appliers.push_back(std::make_unique<PlanApplier>(
        func.getBody().front(), *chain, options, PlanApplier::functionBody));
  std::vector<std::pair<unsigned, ChainPlan>> plans;
  for (unsigned c = 0; c < chains.size(); ++c)
    for (ChainPlan &plan : sweepChainBudgets(
             func.getContext(), chains[c]->segments, plannerOptions))
      if (llvm::none_of(plans, [&](const auto &known) {
            return known.first == c && sameGroups(known.second, plan);
          }))
        plans.emplace_back(c, std::move(plan));
  judge(plans);
  if (candidates.empty())
    return func.emitError("no plan could be outlined: ") << firstRefusal;
  for (const Candidate &c : candidates)
    if (!leastPeak || c.peak < leastPeak->peak ||
        (c.peak == leastPeak->peak && c.plan.cost < leastPeak->plan.cost))
      leastPeak = &c;
  return success();
}

/// Which plan the current thread is judging (for the diagnostic handler).
static thread_local int judgedPlan = -1;

void PlanSearch::judge(
    const std::vector<std::pair<unsigned, ChainPlan>> &plans) {
  // Each plan is applied to its own copy of the function and modelled:
  // independent, most of the planning time, so in parallel. Results and
  // refusals are kept by plan and read in the plans' order, so the choice
  // and its messages do not depend on the threads.
  std::vector<FailureOr<PlanApplier::Peaks>> peaks(plans.size(), failure());
  std::vector<std::string> refusals(plans.size());
  std::mutex refusalsMutex;
  {
    // A plan the outliner refuses is no candidate (the chain model does not
    // know every rule of regions); its message is kept in case none is
    // left.
    ScopedDiagnosticHandler keep(func.getContext(), [&](Diagnostic &d) {
      if (judgedPlan >= 0) {
        std::lock_guard<std::mutex> lock(refusalsMutex);
        if (refusals[judgedPlan].empty())
          refusals[judgedPlan] = d.str();
      }
      return success();
    });
    parallelFor(func.getContext(), 0, plans.size(), [&](size_t i) {
      int outer = judgedPlan; // a thread may run a task while waiting
      judgedPlan = static_cast<int>(i);
      peaks[i] = appliers[plans[i].first]->predictPeaks(func, plans[i].second);
      judgedPlan = outer;
    });
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (succeeded(peaks[i]))
      candidates.push_back({plans[i].first, plans[i].second, peaks[i]->step,
                            peaks[i]->outsideRegions});
    else if (firstRefusal.empty())
      firstRefusal = refusals[i];
  }
}

const Candidate *PlanSearch::chooseWithinBudget(int64_t budget) const {
  const Candidate *best = nullptr;
  for (const Candidate &c : candidates)
    if (c.peak <= budget &&
        (!best || c.plan.cost < best->plan.cost ||
         (c.plan.cost == best->plan.cost && c.peak < best->peak)))
      best = &c;
  return best;
}

const Candidate *PlanSearch::chooseForPreference(Preference preference,
                                                 double stepSeconds,
                                                 bool &nestedWon) {
  allowed = getTimeBudgetFraction(preference) * stepSeconds;
  const Candidate *best = nullptr;
  for (const Candidate &c : candidates)
    if (c.plan.cost <= allowed &&
        (!best || c.peak < best->peak ||
         (c.peak == best->peak && c.plan.cost < best->plan.cost)))
      best = &c;
  if (!best) // only when forced regions alone exceed the allowance
    best = &getLeastPeakCandidate();
  // A plan over the allowance may come within it once its idle regions
  // are dropped (what a budget's plan gets below): the sweep's chain plans
  // recompute more than their modelled peak needs.
  if (const Candidate *lower = refineOverAllowance(best))
    best = lower;
  // Regions nested in a recompute lower it; then a plan keeping less
  // outside its regions (the end of forward) may have the least peak.
  nestedWon = chooseWithNesting(best);
  return best;
}

std::optional<int64_t> PlanSearch::nestedPeak(const Candidate &c) {
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
}

bool PlanSearch::chooseWithNesting(const Candidate *&best) {
  int64_t bar = nestedPeak(*best).value_or(best->peak);
  std::vector<const Candidate *> others;
  for (const Candidate &c : candidates)
    if (&c != best && c.plan.cost <= allowed && c.outsideRegionsPeak < bar)
      others.push_back(&c);
  llvm::sort(others, [](const Candidate *a, const Candidate *b) {
    return a->outsideRegionsPeak < b->outsideRegionsPeak;
  });
  // Each try nests on its own copy of the function: in parallel, then
  // taken in order as one after the other would.
  ArrayRef<const Candidate *> tries = llvm::ArrayRef(others).take_front(kTries);
  std::vector<std::optional<int64_t>> peaks(tries.size());
  parallelFor(func.getContext(), 0, tries.size(),
              [&](size_t i) { peaks[i] = nestedPeak(*tries[i]); });
  bool replaced = false;
  for (auto [c, peak] : llvm::zip(tries, peaks))
    if (peak && *peak < bar) {
      bar = *peak;
      best = c;
      replaced = true;
    }
  return replaced;
}

FailureOr<int64_t> PlanSearch::predictQuietly(PlanApplier &applier,
                                              const ChainPlan &plan) {
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  return applier.predict(func, plan);
}

const Candidate *PlanSearch::refineOverAllowance(const Candidate *best) {
  std::vector<const Candidate *> lower;
  for (const Candidate &c : candidates)
    if (c.peak < best->peak && c.plan.cost > allowed)
      lower.push_back(&c);
  llvm::sort(lower, [](const Candidate *a, const Candidate *b) {
    return a->peak < b->peak ||
           (a->peak == b->peak && a->plan.cost < b->plan.cost);
  });
  // One try per peak level, its cheapest plan: several candidates often
  // share a peak.
  std::vector<const Candidate *> levels;
  for (const Candidate *c : lower)
    if (levels.empty() || levels.back()->peak != c->peak)
      levels.push_back(c);
  // Less peak takes more recompute, so a level's refined cost falls as its
  // peak rises: the least level that fits is found by bisection, from the
  // highest (the likeliest to fit; when it does not, no lower one is
  // tried). Trying levels from the least up stopped short on a U-Net whose
  // lowest three did not fit and its fourth did.
  std::vector<std::optional<ChainPlan>> refinedPlans(levels.size());
  auto fits = [&](size_t level) {
    const Candidate &c = *levels[level];
    refinedPlans[level] = dropIdleRegions(
        c.plan, chains[c.chain]->segments, plannerOptions, c.peak,
        [&](const ChainPlan &p) {
          return predictQuietly(*appliers[c.chain], p);
        },
        func.getContext());
    return refinedPlans[level]->cost <= allowed;
  };
  if (levels.empty() || !fits(levels.size() - 1))
    return nullptr;
  size_t least = 0, fitting = levels.size() - 1;
  while (least < fitting) {
    size_t middle = least + (fitting - least) / 2;
    if (fits(middle))
      fitting = middle;
    else
      least = middle + 1;
  }
  const Candidate &c = *levels[fitting];
  refined = Candidate{c.chain, std::move(*refinedPlans[fitting]), c.peak,
                      c.outsideRegionsPeak};
  return &*refined;
}

ChainPlan PlanSearch::finish(const Candidate &best, bool nestedWon) {
  if (nestedWon)
    return best.plan;
  const FunctionChain &chain = *chains[best.chain];
  PlanApplier &applier = *appliers[best.chain];
  auto predictChosen = [&](const ChainPlan &plan) {
    return predictQuietly(applier, plan);
  };
  // Whole modules where that costs nothing, so that reports can name them.
  ChainPlan chosen = alignRegionsToModules(
      best.plan, chain.segments, ModuleSplitCounter(chain), plannerOptions,
      AlignmentLimits{best.peak, best.plan.cost}, predictChosen,
      func.getContext());
  return dropIdleRegions(chosen, chain.segments, plannerOptions, best.peak,
                         predictChosen, func.getContext());
}

namespace {
/// A whole plan made on a copy of the function.
struct AlternativePlan {
  OwningOpRef<func::FuncOp> func;
  int64_t peakBytes = 0;
  double seconds = 0;
  unsigned regions = 0;
};
} // namespace

/// The least-peak candidate finished (`plan`), applied to a copy of `func` and
/// with regions nested at its peak within the rest of the preference's
/// allowance; nothing when it does not fit the allowance or cannot be made.
static std::optional<AlternativePlan>
planFromLeastPeak(func::FuncOp func, const PlanningOptions &options,
                  PlanSearch &search, const ChainPlan &plan) {
  const Candidate &leastPeak = search.getLeastPeakCandidate();
  double allowed = search.getAllowedSeconds();
  if (plan.cost > allowed)
    return std::nullopt;
  AlternativePlan alternative;
  alternative.func = OwningOpRef<func::FuncOp>(func.clone());
  inheritModelStamps(func, *alternative.func);
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  if (failed(search.getApplier(leastPeak).apply(*alternative.func, plan)))
    return std::nullopt;
  NestingLimits limits;
  limits.extraSeconds = allowed - plan.cost;
  FailureOr<NestingResult> nested = nestRegionsAtPeak(
      *alternative.func, options, search.getPlannerOptions(), limits);
  if (failed(nested))
    return std::nullopt;
  alternative.peakBytes = nested->peakBytes;
  alternative.seconds = plan.cost + nested->addedSeconds;
  alternative.regions = nested->regions;
  for (const ChainGroup &group : plan.groups)
    alternative.regions += group.checkpointed;
  return alternative;
}

/// Records `summary` as the function's #memopt.plan.
static void writePlanSummary(func::FuncOp func,
                             const MemoryPlanSummary &summary, bool budgeted,
                             Preference preference, size_t segments) {
  PlanGoal goal = PlanGoal::budget;
  if (!budgeted)
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
  func->setAttr(
      kPlanAttrName,
      PlanSummaryAttr::get(func.getContext(), summary.baselinePeakBytes,
                           summary.plannedPeakBytes, summary.budgetBytes,
                           summary.feasible, summary.minReachablePeakBytes,
                           APFloat(summary.recomputeSeconds),
                           APFloat(summary.stepSeconds), goal, segments));
}

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

  PlanSearch search(func, options);
  FailureOr<double> stepSeconds = search.buildChains(memory);
  if (failed(stepSeconds))
    return failure();
  summary.stepSeconds = *stepSeconds;
  if (failed(search.collectCandidates(summary.baselinePeakBytes)))
    return failure();
  const Candidate &leastPeak = search.getLeastPeakCandidate();
  summary.minReachablePeakBytes =
      std::min(leastPeak.peak, summary.baselinePeakBytes);

  // Best candidate: least cost within the budget, or least peak within the
  // preference's time allowance.
  const Candidate *best = nullptr;
  bool nestedWon = false;
  if (budget) {
    best = search.chooseWithinBudget(*budget);
    // Else the least-peak plan, with regions nested in recomputes that may
    // still bring it within the budget (checked below).
    summary.feasible = best != nullptr;
    if (!best)
      best = &leastPeak;
  } else {
    best = search.chooseForPreference(options.prefer, summary.stepSeconds,
                                      nestedWon);
  }
  // A preference may also end lower from the least-peak plan, finished
  // (its idle regions dropped) and with regions nested in its recomputes
  // within what the allowance leaves: how a budget below every candidate
  // is met. Planned on a copy first, while `func` is as imported.
  bool tryLeastPeak = !budget && !nestedWon && best != &leastPeak;
  // Finishing a plan models many variants of it, each on its own copy of
  // the function: the two plans are finished in parallel.
  ChainPlan chosen, leastPeakFinished;
  parallelFor(func.getContext(), 0, tryLeastPeak ? 2 : 1, [&](size_t i) {
    if (i == 0)
      chosen = search.finish(*best, nestedWon);
    else
      leastPeakFinished = search.finish(leastPeak, /*nestedWon=*/false);
  });
  std::optional<AlternativePlan> alternative;
  if (tryLeastPeak)
    alternative = planFromLeastPeak(func, options, search, leastPeakFinished);
  if (failed(search.getApplier(*best).apply(func, chosen)))
    return failure();
  summary.recomputeSeconds = chosen.cost;
  for (const ChainGroup &group : chosen.groups)
    summary.regions += group.checkpointed;

  // Where a region's recompute is the peak, regions within it. A feasible
  // budget needs none; an infeasible one may take any time to be met.
  std::optional<int64_t> plannedPeak;
  if (!budget || !summary.feasible) {
    NestingLimits limits;
    limits.extraSeconds =
        budget ? INFINITY : search.getAllowedSeconds() - chosen.cost;
    limits.targetPeakBytes = budget ? *budget : 0;
    FailureOr<NestingResult> nested =
        nestRegionsAtPeak(func, options, search.getPlannerOptions(), limits);
    if (failed(nested))
      return failure();
    summary.recomputeSeconds += nested->addedSeconds;
    summary.regions += nested->regions;
    plannedPeak = nested->peakBytes; // modelled on `func` as it is now
  }
  if (alternative && plannedPeak && alternative->peakBytes < *plannedPeak) {
    func.getBody().takeBody(alternative->func->getBody());
    plannedPeak = alternative->peakBytes;
    summary.recomputeSeconds = alternative->seconds;
    summary.regions = alternative->regions;
    best = &leastPeak;
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

  // The chain model chose the regions; alignment, nesting and the
  // least-peak alternative changed the function under them since. Those
  // the final function's modelled peak does not need (it stays where it
  // is without them) come out again.
  SmallVector<int64_t> peaksWithout;
  for (bool changed = true; changed;) {
    peaksWithout = modelPeaksWithoutEachRegion(func);
    std::optional<RegionDropResult> drop = dropRegionsBelowLimit(
        func, summary.plannedPeakBytes, options.checkpoint, peaksWithout);
    if (drop) {
      summary.plannedPeakBytes = drop->peakBytes;
      summary.recomputeSeconds =
          std::max(0.0, summary.recomputeSeconds - drop->recomputeSeconds);
      summary.regions -= drop->dropped;
    }
    // By-channel batch-norm backwards cost two strided copies each, row
    // blocks of a weight gradient a few more calls: keep them only when
    // the plan needs them (its peak, or its budget).
    std::optional<int64_t> leanerPeak = dropUnneededBackwardKernels(
        func, budget && summary.feasible
                  ? std::max(*budget, summary.plannedPeakBytes)
                  : summary.plannedPeakBytes);
    if (leanerPeak)
      summary.plannedPeakBytes = *leanerPeak;
    // Each drop changes the function under the regions and marks left:
    // again until neither changes it (each round removes one at least).
    changed = drop || leanerPeak;
  }
  // What each region lowers, on the final function.
  stampRegionPeakGains(func, summary.plannedPeakBytes, peaksWithout);
  writePlanSummary(func, summary, budget.has_value(), options.prefer,
                   search.getChain(*best).segments.size());
  return summary;
}
