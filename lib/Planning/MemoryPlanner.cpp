//===- MemoryPlanner.cpp - checkpoint regions under a budget --------------===//
#include "memopt/Planning/MemoryPlanner.h"
#include "memopt/Analysis/BinaryValueAnalysis.h"
#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Planning/Budget.h"
#include "memopt/Planning/ChainPlanner.h"
#include "memopt/Planning/FunctionChain.h"
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
// Host offload over PCIe at about 12 GB/s each way, half of it hidden behind
// compute by the prefetch schedule.
static constexpr double kOffloadSecondsPerByte = 0.5 * 2 / 12e9;

std::optional<Preference> mlir::memopt::parsePreference(StringRef text) {
  return llvm::StringSwitch<std::optional<Preference>>(text)
      .Case("speed", Preference::Speed)
      .Case("balanced", Preference::Balanced)
      .Case("memory", Preference::Memory)
      .Default(std::nullopt);
}

StringRef mlir::memopt::stringifyPreference(Preference preference) {
  switch (preference) {
  case Preference::Speed:
    return "speed";
  case Preference::Balanced:
    return "balanced";
  case Preference::Memory:
    return "memory";
  }
  return "balanced";
}

double mlir::memopt::getTimeBudgetFraction(Preference preference) {
  switch (preference) {
  case Preference::Speed:
    return 0.05;
  case Preference::Balanced:
    return 0.12;
  case Preference::Memory:
    return 0.25;
  }
  return 0.12;
}

namespace {
/// Applies chain plans to a function (or a scratch copy of it).
class PlanApplier {
public:
  PlanApplier(func::FuncOp func, const FunctionChain &chain,
              const MemoryPlanOptions &options)
      : func(func), chain(chain), options(options) {
    unsigned next = 0;
    for (Operation &op : func.getBody().front().without_terminator())
      index[&op] = next++;
  }

  /// Modelled peak of `func` with `plan` applied (on a scratch copy).
  FailureOr<int64_t> predict(const ChainPlan &plan) {
    OwningOpRef<func::FuncOp> copy(func.clone());
    if (failed(apply(*copy, plan)))
      return failure();
    return TrainingMemoryModel(*copy).predictPeak();
  }

  LogicalResult apply(func::FuncOp target, const ChainPlan &plan) {
    std::vector<Operation *> ops;
    for (Operation &op : target.getBody().front().without_terminator())
      ops.push_back(&op);
    BinaryValueAnalysis binary(target, options.assumeBinary);
    for (const ChainGroup &group : llvm::reverse(plan.groups)) {
      if (!group.checkpointed)
        continue;
      SmallVector<Operation *> members;
      for (unsigned k = group.begin; k < group.end; ++k)
        for (Operation *op : chain.ops[k])
          members.push_back(ops[index.lookup(op)]);
      auto policyFor = [&](Value input) -> Attribute {
        MLIRContext *context = target.getContext();
        // Function inputs, parameters and buffers stay resident anyway.
        bool activation =
            isa<TensorType>(input.getType()) && !isFreeValue(input);
        if (activation && group.policy == InputPolicy::Compress &&
            binary.isBinary(input) && isCompressibleTensor(input.getType()))
          return CompressPolicyAttr::get(context, CompressionKind::bit);
        if (activation && group.policy == InputPolicy::Offload)
          return OffloadPolicyAttr::get(context, OffloadKind::host);
        return KeepPolicyAttr::get(context);
      };
      FailureOr<CheckpointOp> region = outlineCheckpointRegion(
          members, labelFor(members, target.getBody().front()), policyFor);
      if (failed(region))
        return failure();
      annotate(*region, group);
    }
    eraseUnusedFreeOps(target);
    return success();
  }

private:
  /// The module path of `members` when they are all of that module, else
  /// the range of its submodules they cover ("blocks.0..blocks.3").
  static std::string labelFor(ArrayRef<Operation *> members, Block &body) {
    std::string label = getRegionLabel(members);
    if (label.find("..") != std::string::npos)
      return label;
    llvm::SmallPtrSet<Operation *, 32> inside(members.begin(), members.end());
    bool whole = llvm::none_of(body, [&](Operation &op) {
      return !inside.contains(&op) && !definesOnlyFreeValues(&op) &&
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
      if (!definesOnlyFreeValues(op) && !getModulePath(op).empty())
        computing.push_back(op);
    if (computing.empty())
      return label;
    std::string first = child(computing.front()),
                last = child(computing.back());
    return first == last ? first : first + ".." + last;
  }

  void annotate(CheckpointOp region, const ChainGroup &group) {
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
      how = "its input offloaded to host memory";
    }
    int64_t avoided = std::max<int64_t>(0, stored - retained);
    std::string reason;
    llvm::raw_string_ostream os(reason);
    os << (forced ? "forced by --checkpoint; " : "") << "recomputing "
       << llvm::format("%.3f", seconds * 1e3) << " ms in backward frees "
       << llvm::format("%.2f", avoided / 1048576.0) << " MiB, with " << how;
    Builder b(region.getContext());
    region->setAttr("memopt.reason", b.getStringAttr(os.str()));
    region->setAttr("memopt.saved_bytes_avoided", b.getI64IntegerAttr(avoided));
  }

  static void eraseUnusedFreeOps(func::FuncOp target) {
    SmallVector<Operation *> ops;
    for (Operation &op : target.getBody().front().without_terminator())
      ops.push_back(&op);
    // Users before definitions, so chains of free ops go at once.
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty() && definesOnlyFreeValues(op))
        op->erase();
  }

  func::FuncOp func;
  const FunctionChain &chain;
  const MemoryPlanOptions &options;
  DenseMap<Operation *, unsigned> index;
};
} // namespace

/// The chain-model peak when nothing is checkpointed.
static int64_t storedChainPeak(const std::vector<ChainSegment> &segments,
                               const ChainPlannerOptions &options) {
  std::vector<ChainGroup> groups;
  for (unsigned k = 0; k < segments.size(); ++k)
    groups.push_back(ChainGroup{k, k + 1, false, InputPolicy::Keep});
  return evaluateChainPlan(segments, groups, options).peakBytes;
}

FailureOr<MemoryPlanSummary>
mlir::memopt::planFunctionMemory(func::FuncOp func,
                                 const MemoryPlanOptions &options) {
  TrainingMemoryModel memory(func);
  MemoryPlanSummary summary;
  summary.baselinePeakBytes = memory.predictPeak();
  if (auto unplanned = func->getAttrOfType<IntegerAttr>(kUnplannedPeakAttrName))
    summary.baselinePeakBytes = unplanned.getInt();
  std::optional<int64_t> budget;
  if (!options.budget.empty()) {
    std::string error;
    FailureOr<Budget> parsed = parseBudget(options.budget, error);
    if (failed(parsed))
      return func.emitError(error);
    budget = parsed->resolve(summary.baselinePeakBytes);
    summary.budgetBytes = *budget;
  }
  Preference preference = options.prefer.value_or(Preference::Balanced);

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

  ChainPlannerOptions plannerOptions;
  plannerOptions.allowCompress = true;
  plannerOptions.allowOffload = options.allowOffload;
  plannerOptions.compressSecondsPerByte = kCompressSecondsPerByte;
  plannerOptions.offloadSecondsPerByte = kOffloadSecondsPerByte;
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
    appliers.push_back(std::make_unique<PlanApplier>(func, *chain, options));
  struct Candidate {
    unsigned chain;
    ChainPlan plan;
    int64_t peak;
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
    FailureOr<int64_t> peak;
    {
      ScopedDiagnosticHandler keep(func.getContext(), [&](Diagnostic &d) {
        if (firstRefusal.empty())
          firstRefusal = d.str();
        return success();
      });
      peak = appliers[chain]->predict(plan);
    }
    if (succeeded(peak))
      candidates.push_back({chain, plan, *peak});
  };
  for (unsigned c = 0; c < chains.size(); ++c) {
    const std::vector<ChainSegment> &segments = chains[c]->segments;
    auto planWithin = [&](int64_t chainBudget) {
      ChainPlannerOptions within = plannerOptions;
      within.budgetBytes = chainBudget;
      return planChain(segments, within);
    };
    ChainPlan leastPeak = planWithin(0); // infeasible: the least-peak plan
    consider(c, leastPeak);
    int64_t chainBaseline = storedChainPeak(segments, plannerOptions);
    int64_t low = std::max<int64_t>(1, leastPeak.peakBytes);
    constexpr int kSweep = 12;
    std::vector<int64_t> chainBudgets;
    for (int step = 0; step <= kSweep; ++step) {
      double fraction = double(step) / kSweep;
      chainBudgets.push_back(static_cast<int64_t>(
          low *
          std::pow(double(std::max(chainBaseline, low)) / low, fraction)));
    }
    chainBudgets.push_back(INT64_MAX);
    // Independent searches (most of the planning time): run them in
    // parallel, consider their plans in order.
    std::vector<ChainPlan> sweep(chainBudgets.size());
    parallelFor(func.getContext(), 0, sweep.size(),
                [&](size_t i) { sweep[i] = planWithin(chainBudgets[i]); });
    for (size_t i = 0; i < sweep.size(); ++i) {
      bool unbounded = i + 1 == sweep.size();
      if (unbounded || sweep[i].feasible)
        consider(c, sweep[i]);
    }
  }

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
  if (budget) {
    for (const Candidate &c : candidates)
      if (c.peak <= *budget &&
          (!best || c.plan.cost < best->plan.cost ||
           (c.plan.cost == best->plan.cost && c.peak < best->peak)))
        best = &c;
    if (!best) {
      summary.feasible = false;
      if (!options.allowOverBudget)
        return func.emitError("budget ")
               << formatBytes(*budget) << " is infeasible for @"
               << func.getSymName() << ": the smallest reachable peak is "
               << formatBytes(summary.minReachablePeakBytes) << " (baseline "
               << formatBytes(summary.baselinePeakBytes)
               << "); raise --budget to at least that, or pass "
                  "--allow-over-budget";
      best = leastPeakCandidate;
    }
  } else {
    double allowed = getTimeBudgetFraction(preference) * summary.stepSeconds;
    for (const Candidate &c : candidates)
      if (c.plan.cost <= allowed &&
          (!best || c.peak < best->peak ||
           (c.peak == best->peak && c.plan.cost < best->plan.cost)))
        best = &c;
    if (!best) // only when forced regions alone exceed the allowance
      best = leastPeakCandidate;
  }
  const FunctionChain &chain = *chains[best->chain];
  PlanApplier &applier = *appliers[best->chain];
  auto predictQuietly = [&](const ChainPlan &plan) -> FailureOr<int64_t> {
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    return applier.predict(plan);
  };
  // Whole modules where that costs nothing, so that reports can name them.
  ChainPlan chosen = alignRegionsToModules(
      best->plan, chain.segments, ModuleSplitCounter(chain), plannerOptions,
      AlignmentLimits{best->peak, best->plan.cost}, predictQuietly);
  chosen = dropIdleRegions(chosen, chain.segments, plannerOptions, best->peak,
                           predictQuietly);

  if (failed(applier.apply(func, chosen)))
    return failure();
  summary.plannedPeakBytes = TrainingMemoryModel(func).predictPeak();
  for (const ChainGroup &group : chosen.groups)
    summary.regions += group.checkpointed;
  summary.recomputeSeconds = chosen.cost;

  Builder b(func.getContext());
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("baseline_peak_bytes",
                     b.getI64IntegerAttr(summary.baselinePeakBytes)),
      b.getNamedAttr("planned_peak_bytes",
                     b.getI64IntegerAttr(summary.plannedPeakBytes)),
      b.getNamedAttr("budget_bytes", b.getI64IntegerAttr(summary.budgetBytes)),
      b.getNamedAttr("feasible", b.getBoolAttr(summary.feasible)),
      b.getNamedAttr("min_reachable_peak_bytes",
                     b.getI64IntegerAttr(summary.minReachablePeakBytes)),
      b.getNamedAttr("recompute_seconds",
                     b.getF64FloatAttr(summary.recomputeSeconds)),
      b.getNamedAttr("step_seconds", b.getF64FloatAttr(summary.stepSeconds)),
      b.getNamedAttr("preference",
                     b.getStringAttr(budget ? StringRef("budget")
                                            : stringifyPreference(preference))),
      b.getNamedAttr("segments", b.getI64IntegerAttr(chain.segments.size())),
  };
  func->setAttr("memopt.plan", b.getDictionaryAttr(fields));
  return summary;
}
