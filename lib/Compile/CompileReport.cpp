//===- CompileReport.cpp - collect a plan's decisions, write JSON ---------===//
#include "memopt/Compile/CompileReport.h"
#include "memopt/Dialect/MemoptAttrNames.h"

#include "memopt/Analysis/CostModel.h"
#include "memopt/Analysis/TensorBytes.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptOps.h"
#include "memopt/Dialect/MemoptTypes.h"
#include "memopt/Runtime/BatchNormChunks.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace mlir::memopt;

std::string mlir::memopt::getModulePath(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto call = dyn_cast<CallSiteLoc>(loc))
    return getModulePath(call.getCallee());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (std::string path = getModulePath(part); !path.empty())
        return path;
  return "";
}

static std::string opName(Operation *op) {
  if (auto torchOp = dyn_cast<TorchOp>(op))
    return torchOp.getName().str();
  return op->getName().getStringRef().str();
}

/// "layer1.0.act (aten::relu)", "input 'x'", "aten::mul at model.py:12".
static std::string describeValue(Value value,
                                 ArrayRef<std::string> inputNames) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    unsigned index = arg.getArgNumber();
    if (isa_and_nonnull<func::FuncOp>(arg.getOwner()->getParentOp()))
      return index < inputNames.size() ? "input '" + inputNames[index] + "'"
                                       : "input #" + std::to_string(index);
    return "region argument #" + std::to_string(index);
  }
  Operation *op = value.getDefiningOp();
  std::string name = opName(op);
  if (op->getNumResults() > 1)
    name += " #" + std::to_string(cast<OpResult>(value).getResultNumber());
  std::string path = getModulePath(op->getLoc());
  if (!path.empty())
    return path + " (" + name + ")";
  std::string where = describeLocation(op->getLoc());
  return where.empty() ? name : name + " at " + where;
}

static StringRef roleName(PeakTensor::Role role) {
  switch (role) {
  case PeakTensor::Role::Value:
    return "value";
  case PeakTensor::Role::Gradient:
    return "gradient";
  case PeakTensor::Role::Workspace:
    return "workspace";
  case PeakTensor::Role::Other:
    break;
  }
  return "other";
}

/// The largest tensors live at the model's peak (storages of one value and
/// role summed, unnamed ones as one "other"), the rest summed as "other".
static std::vector<PeakTensorReport>
describePeakTensors(const TrainingMemoryModel &model,
                    ArrayRef<std::string> inputNames) {
  constexpr size_t kShown = 12;
  std::vector<PeakTensorReport> described;
  std::map<std::pair<std::string, std::string>, size_t> index;
  for (const PeakTensor &tensor : model.getPeakTensors()) {
    // Storages no value of the graph names: what autograd or the runtime
    // allocates only to save (packed inputs, masks, statistics, copies of
    // region state) and kernels' results not yet given to a value.
    std::string what;
    if (tensor.value)
      what = describeValue(tensor.value, inputNames);
    else if (tensor.role == PeakTensor::Role::Other)
      what = "(saved copies, masks, temporaries)";
    PeakTensorReport entry{what, roleName(tensor.role).str(), tensor.bytes};
    auto [it, inserted] =
        index.try_emplace({entry.what, entry.role}, described.size());
    if (inserted)
      described.push_back(std::move(entry));
    else
      described[it->second].bytes += tensor.bytes;
  }
  llvm::stable_sort(described, [](const auto &a, const auto &b) {
    return a.bytes > b.bytes;
  });
  if (described.size() > kShown) {
    int64_t rest = 0;
    for (size_t i = kShown; i < described.size(); ++i)
      rest += described[i].bytes;
    described.resize(kShown);
    described.push_back({"(the rest)", "other", rest});
  }
  return described;
}

MemoryPrediction
mlir::memopt::predictMemory(func::FuncOp func,
                            std::vector<UnknownOpReport> *unknownOps,
                            ArrayRef<std::string> inputNames) {
  TrainingMemoryOptions options = getStampedMemoryOptions(func);
  options.recordPeakTensors = true;
  TrainingMemoryModel model(func, options);
  MemoryPrediction prediction;
  prediction.peakBytes = model.predictPeak();
  prediction.residentBytes = model.getResidentBytes();
  prediction.gradientBucketBytes = model.getGradientBucketBytes();
  prediction.endOfForwardBytes = model.getEndOfForwardBytes();
  if (const TimelineEntry *peak = model.getPeakEntry(); peak && peak->op) {
    prediction.peakOp = opName(peak->op);
    prediction.peakModulePath = getModulePath(peak->op->getLoc());
    prediction.peakPhase = stringifyMemoryPhase(peak->phase).str();
  }
  // Saved bytes per module path (ops inside checkpoint regions save nothing
  // in forward; the model reports what each op itself keeps).
  llvm::StringMap<int64_t> byModule;
  std::vector<std::string> order;
  func.walk([&](Operation *op) {
    int64_t bytes = model.getSavedBytes(op);
    if (bytes <= 0)
      return;
    std::string path = getModulePath(op->getLoc());
    if (path.empty())
      path = "(root)";
    auto [it, inserted] = byModule.try_emplace(path, 0);
    if (inserted)
      order.push_back(path);
    it->second += bytes;
  });
  for (const std::string &path : order)
    prediction.savedByModule.emplace_back(path, byModule.lookup(path));
  std::stable_sort(
      prediction.savedByModule.begin(), prediction.savedByModule.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  if (prediction.savedByModule.size() > 10)
    prediction.savedByModule.resize(10);
  prediction.peakTensors = describePeakTensors(model, inputNames);
  for (const TimelineEntry &entry : model.getTimeline())
    prediction.timeline.push_back(
        {entry.op ? opName(entry.op) : "",
         entry.op ? getModulePath(entry.op->getLoc()) : "",
         stringifyMemoryPhase(entry.phase).str(), entry.liveBytes});
  if (unknownOps) {
    unknownOps->clear();
    for (Operation *op : model.getUnknownOps())
      unknownOps->push_back({opName(op), describeLocation(op->getLoc())});
  }
  return prediction;
}

static std::string policyName(Attribute policy) {
  if (isa<KeepPolicyAttr>(policy))
    return "keep";
  if (auto compress = dyn_cast<CompressPolicyAttr>(policy))
    return ("compress:" + stringifyCompressionKind(compress.getKind())).str();
  if (auto offload = dyn_cast<OffloadPolicyAttr>(policy))
    return ("offload:" + stringifyOffloadKind(offload.getKind())).str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << policy;
  return text;
}

static int64_t packedBytes(Type type, CompressionKind kind) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape())
    return -1;
  return PackedTensorType::get(type.getContext(), ranked.getShape(),
                               ranked.getElementType(), kind)
      .getPackedBytes();
}

/// Outermost module paths of the ops of a region body, in program order.
static std::vector<std::string> regionModulePaths(CheckpointOp region) {
  std::vector<std::string> paths;
  region.getBodyBlock().walk([&](Operation *op) {
    if (isa<YieldOp>(op))
      return;
    std::string path = getModulePath(op->getLoc());
    if (path.empty() || llvm::is_contained(paths, path))
      return;
    paths.push_back(path);
  });
  auto within = [](llvm::StringRef path, llvm::StringRef ancestor) {
    return path.size() > ancestor.size() && path.starts_with(ancestor) &&
           path[ancestor.size()] == '.';
  };
  std::vector<std::string> outermost;
  for (const std::string &path : paths)
    if (llvm::none_of(paths, [&](const std::string &other) {
          return within(path, other);
        }))
      outermost.push_back(path);
  return outermost;
}

void mlir::memopt::collectPlan(func::FuncOp func, SignatureReport &report) {
  report.planned = predictMemory(func, &report.unknownOps, report.inputNames);
  report.regions.clear();
  report.compressed.clear();
  report.offloaded.clear();
  report.backwardKernels.clear();

  std::optional<double> recompute, step;
  if (auto plan = func->getAttrOfType<PlanSummaryAttr>(kPlanAttrName)) {
    if (plan.getBudgetBytes() > 0)
      report.budgetBytes = plan.getBudgetBytes();
    report.feasible = plan.getFeasible();
    report.minReachablePeakBytes = plan.getMinReachablePeakBytes();
    report.plannerPeakBytes = plan.getPlannedPeakBytes();
    report.preference = stringifyPlanGoal(plan.getPreference()).str();
    recompute = plan.getRecomputeSeconds().convertToDouble();
    step = plan.getStepSeconds().convertToDouble();
  }
  report.prefetch.reset();
  if (auto schedule =
          func->getAttrOfType<PrefetchScheduleAttr>(kPrefetchScheduleAttrName))
    report.prefetch = SignatureReport::PrefetchSchedule{
        schedule.getOffloadedRegions(),
        schedule.getPrefetchedEarly(),
        schedule.getTransferSeconds().convertToDouble(),
        schedule.getStallSeconds().convertToDouble(),
        schedule.getOffloadSeconds().convertToDouble(),
        schedule.getHeldRegions()};

  // Estimates from the cost model when the plan does not carry them.
  CostModel costs(func);
  double ownRecompute = 0, ownStep = 0;
  func.walk([&](Operation *op) {
    if (isa<CheckpointOp>(op)) {
      ownRecompute += costs.getCost(op).seconds;
      return;
    }
    if (isa<TorchOp>(op))
      ownStep += costs.getCost(op).seconds + costs.getBackwardSeconds(op);
  });
  report.recomputeSeconds = recompute.value_or(ownRecompute);
  report.stepSeconds = step.value_or(ownStep + ownRecompute);

  ArrayRef<std::string> names = report.inputNames;
  func.walk([&](Operation *op) {
    if (auto region = dyn_cast<CheckpointOp>(op)) {
      RegionReport info;
      info.label = region.getLabel().str();
      info.modulePaths = regionModulePaths(region);
      if (auto saved =
              region->getAttrOfType<IntegerAttr>(kSavedBytesAvoidedAttrName))
        info.savedBytesAvoided = saved.getValue().getSExtValue();
      if (auto lowered =
              region->getAttrOfType<IntegerAttr>(kLowersPeakByAttrName))
        info.peakBytesLowered = lowered.getValue().getSExtValue();
      if (auto reason =
              region->getAttrOfType<StringAttr>(kRegionReasonAttrName))
        info.reason = reason.str();
      region.getBodyBlock().walk([&](Operation *inner) {
        if (!isa<YieldOp>(inner))
          ++info.numOps;
      });
      for (auto [input, policy] :
           llvm::zip(region.getInputs(), region.getPolicies())) {
        info.inputPolicies.push_back(policyName(policy));
        if (auto compress = dyn_cast<CompressPolicyAttr>(policy))
          report.compressed.push_back(
              {describeValue(input, names), "region " + info.label,
               stringifyCompressionKind(compress.getKind()).str(),
               "checkpoint-input", getDeviceBytes(input.getType()),
               packedBytes(input.getType(), compress.getKind())});
        else if (auto offload = dyn_cast<OffloadPolicyAttr>(policy))
          report.offloaded.push_back(
              {describeValue(input, names), "region " + info.label,
               stringifyOffloadKind(offload.getKind()).str(),
               "checkpoint-input", getDeviceBytes(input.getType()),
               region.getPrefetchTrigger().str()});
      }
      report.regions.push_back(std::move(info));
      return;
    }
    if (auto torchOp = dyn_cast<TorchOp>(op)) {
      if (auto saved = torchOp.getSavedInputAttr();
          saved && torchOp->getNumOperands() > 0) {
        Value input = torchOp->getOperand(0);
        report.compressed.push_back(
            {describeValue(input, names),
             describeValue(op->getResult(0), names),
             stringifyCompressionKind(saved.getKind()).str(), "saved-input",
             getDeviceBytes(input.getType()),
             packedBytes(input.getType(), saved.getKind())});
      }
      if (auto form = torchOp.getSavedFormAttr();
          form && torchOp->getNumOperands() > 0) {
        // A mask keeps a bit per value of the result; a lean max-pool keeps
        // nothing of its input (its indices are kept either way).
        Value input = torchOp->getOperand(0);
        bool mask = form.getForm() == SavedForm::mask;
        report.compressed.push_back(
            {describeValue(input, names),
             describeValue(op->getResult(0), names),
             stringifySavedForm(form.getForm()).str(), "saved-form",
             getDeviceBytes(input.getType()),
             mask ? packedBytes(input.getType(), CompressionKind::bit) : 0});
      }
      if (auto kernel = torchOp.getBackwardAttr();
          kernel && torchOp->getNumOperands() > 0) {
        std::string kind = stringifyBackwardKernel(kernel.getKernel()).str();
        std::string what = describeValue(op->getResult(0), names);
        if (kernel.getKernel() == BackwardKernel::weight_rows) {
          // The whole weight gradient, or nothing beyond `.grad` (written
          // into it).
          RankedTensorType weight = torchOp.getStaticTensorArg(1);
          report.backwardKernels.push_back(
              {what, kind, getDeviceBytes(weight), 0});
        } else {
          // ATen's CPU kernel: one input-sized buffer; by channel: four
          // chunks (BatchNormChunks.h).
          auto type = cast<RankedTensorType>(torchOp->getOperand(0).getType());
          int64_t bytes = getDeviceBytes(type);
          report.backwardKernels.push_back(
              {what, kind, bytes,
               ::memopt::runtime::getBatchNormByChannelTransientBytes(
                   type.getDimSize(1), bytes)});
        }
      }
      return;
    }
    if (auto compress = dyn_cast<CompressOp>(op)) {
      auto packed = cast<PackedTensorType>(compress.getResult().getType());
      report.compressed.push_back(
          {describeValue(compress.getInput(), names), "",
           stringifyCompressionKind(packed.getKind()).str(), "compress-op",
           getDeviceBytes(compress.getInput().getType()),
           packed.getPackedBytes()});
      return;
    }
    if (auto offload = dyn_cast<OffloadOp>(op))
      report.offloaded.push_back(
          {describeValue(offload.getInput(), names), "",
           stringifyOffloadKind(offload.getKind()).str(), "offload-op",
           getDeviceBytes(offload.getInput().getType())});
  });
}

void mlir::memopt::printTimeline(func::FuncOp func, llvm::StringRef title,
                                 llvm::raw_ostream &os) {
  TrainingMemoryOptions options = getStampedMemoryOptions(func);
  options.recordPeakTensors = true;
  TrainingMemoryModel model(func, options);
  const TimelineEntry *peak = model.getPeakEntry();
  os << "timeline (" << title << ", @" << func.getSymName()
     << "): live bytes above resident while each op runs\n";
  unsigned index = 0;
  for (const TimelineEntry &entry : model.getTimeline()) {
    std::string path = entry.op ? getModulePath(entry.op->getLoc()) : "";
    os << llvm::format("  %5u %-9s %14lld  %-26s %s", index++,
                       stringifyMemoryPhase(entry.phase).str().c_str(),
                       static_cast<long long>(entry.liveBytes),
                       entry.op ? opName(entry.op).c_str() : "", path.c_str());
    if (&entry == peak)
      os << "  <- peak";
    os << "\n";
  }
  if (!peak)
    return;
  os << "live at the peak (" << title << ", @" << func.getSymName()
     << "), largest first:\n";
  for (const PeakTensorReport &tensor : describePeakTensors(model, {}))
    os << llvm::format("  %14lld  %-9s %s\n",
                       static_cast<long long>(tensor.bytes),
                       tensor.role.c_str(), tensor.what.c_str());
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

const SignatureReport *CompileReport::primary() const {
  const SignatureReport *best = nullptr;
  for (const SignatureReport &signature : signatures)
    if (!best || signature.count > best->count)
      best = &signature;
  return best;
}

namespace {
/// A JSON string of `value`: op names and module paths come from the model
/// and may hold bytes that are not UTF-8 (replaced by U+FFFD, as JSON
/// requires; llvm::json asserts on them otherwise).
llvm::json::Value text(llvm::StringRef value) {
  if (llvm::json::isUTF8(value))
    return value.str();
  return llvm::json::fixUTF8(value);
}

/// Writes the report with keys in a fixed, readable order (llvm::json::Object
/// would sort them).
class ReportWriter {
public:
  explicit ReportWriter(llvm::raw_ostream &os) : json(os, /*IndentSize=*/2) {}

  void write(const CompileReport &report) {
    this->report = &report;
    json.object([&] {
      json.attribute("version", kCompileReportVersion);
      json.attribute("model", text(report.model));
      nullableString("output", report.output);
      json.attribute("command", text(report.command));
      json.attribute("mode", report.analyzeOnly ? "analyze-only" : "compile");
      json.attributeObject("options", [&] {
        const PlanningOptions &planning = report.planning;
        nullableString("budget", planning.budget ? planning.budget->text : "");
        json.attribute("prefer", text(stringifyPreference(planning.prefer)));
        json.attribute("device",
                       text(stringifyTrainingDevice(planning.device)));
        json.attribute("grad_buffers", text(report.gradBuffers));
        json.attribute("world_size", report.worldSize);
        if (report.intraOpThreads > 0)
          json.attribute("threads", int64_t(report.intraOpThreads));
        else
          json.attribute("threads", nullptr);
        json.attribute("kernel_workspaces",
                       report.kernelWorkspaces.probed ? "probe" : "model");
        strings("checkpoint", planning.checkpoint);
        strings("no_checkpoint", planning.noCheckpoint);
        strings("assume_binary", planning.assumeBinary);
        strings("operator_libraries", report.operatorLibraries);
        json.attribute("allow_over_budget", planning.allowOverBudget);
        json.attribute("strict_signatures", report.strictSignatures);
      });
      if (const SignatureReport *main = report.primary())
        signatureBlocks(*main);
      json.attribute("fallback", text(report.fallback));
      json.attributeArray("signatures", [&] {
        for (const SignatureReport &signature : report.signatures)
          json.object([&] { signatureBlocks(signature); });
      });
      json.attribute("pytorch_version", text(report.torchVersion));
      if (report.kernelWorkspaces.probed)
        json.attributeObject("kernel_probe", [&] {
          json.attribute("measured", int64_t(report.kernelWorkspaces.measured));
          json.attribute("cached", int64_t(report.kernelWorkspaces.cached));
          json.attribute("reused", int64_t(report.kernelWorkspaces.reused));
          json.attribute("skipped", int64_t(report.kernelWorkspaces.skipped));
        });
      else
        json.attribute("kernel_probe", nullptr);
      if (const std::optional<DeviceMarksReport> &marks = report.deviceMarks)
        json.attributeObject("device_kernel_marks", [&] {
          nullableString("file", marks->file);
          nullableString("context", marks->context);
          nullableString("requests_file", marks->requestsFile);
          json.attribute("applied", int64_t(marks->applied));
          json.attribute("requested", int64_t(marks->requested));
          json.attribute("skipped", int64_t(marks->skipped));
        });
      else
        json.attribute("device_kernel_marks", nullptr);
      if (const std::optional<CostModelReport> &fit = report.costModel)
        json.attributeObject("cost_model", [&] {
          json.attribute("file", text(fit->file));
          json.attributeObject("classes", [&] {
            for (const auto &[name, values] : fit->classes)
              json.attributeArray(name, [&] {
                for (double value : values)
                  json.value(value);
              });
          });
        });
      else
        json.attribute("cost_model", nullptr);
      if (report.forwardCheck)
        json.attributeObject("forward_check", [&] {
          json.attribute("compared", int64_t(report.forwardCheck->compared));
          strings("not_compared", report.forwardCheck->notCompared);
        });
      else
        json.attribute("forward_check", nullptr);
      json.attributeObject("timings", [&] {
        real("import_s", report.timings.importSeconds, "%.4f");
        real("probe_s", report.timings.probeSeconds, "%.4f");
        real("plan_s", report.timings.planSeconds, "%.4f");
        real("check_s",
             report.forwardCheck ? report.forwardCheck->seconds : 0.0, "%.4f");
        real("export_s", report.timings.exportSeconds, "%.4f");
        real("total_s", report.timings.totalSeconds, "%.4f");
      });
    });
  }

private:
  /// A number with a sensible number of digits (json::OStream prints 17).
  void real(llvm::StringRef key, double value, const char *format) {
    if (!std::isfinite(value)) {
      json.attribute(key, nullptr);
      return;
    }
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::format(format, value);
    json.attributeBegin(key);
    json.rawValue(text);
    json.attributeEnd();
  }
  void nullableString(llvm::StringRef key, const std::string &value) {
    if (value.empty())
      json.attribute(key, nullptr);
    else
      json.attribute(key, text(value));
  }
  template <typename T>
  void nullable(llvm::StringRef key, const std::optional<T> &value) {
    if (value)
      json.attribute(key, *value);
    else
      json.attribute(key, nullptr);
  }
  void strings(llvm::StringRef key, llvm::ArrayRef<std::string> values) {
    json.attributeArray(key, [&] {
      for (const std::string &value : values)
        json.value(text(value));
    });
  }
  void prediction(llvm::StringRef key, const MemoryPrediction &p) {
    json.attributeObject(key, [&] {
      json.attribute("predicted_peak_bytes", p.peakBytes);
      json.attribute("resident_bytes", p.residentBytes);
      json.attribute("gradient_bucket_bytes", p.gradientBucketBytes);
      json.attribute("end_of_forward_bytes", p.endOfForwardBytes);
      json.attributeObject("peak_at", [&] {
        json.attribute("op", text(p.peakOp));
        json.attribute("module_path", text(p.peakModulePath));
        json.attribute("phase", text(p.peakPhase));
      });
      json.attributeArray("saved_by_module", [&] {
        for (const auto &saved : p.savedByModule)
          json.object([&] {
            json.attribute("module_path", text(saved.first));
            json.attribute("bytes", saved.second);
          });
      });
      json.attributeArray("peak_tensors", [&] {
        for (const PeakTensorReport &tensor : p.peakTensors)
          json.object([&] {
            json.attribute("what", text(tensor.what));
            json.attribute("role", text(tensor.role));
            json.attribute("bytes", tensor.bytes);
          });
      });
      if (!report->timelineInJSON) {
        json.attribute("timeline", nullptr);
        return;
      }
      json.attributeArray("timeline", [&] {
        for (const TimelinePoint &point : p.timeline)
          json.object([&] {
            json.attribute("op", text(point.op));
            json.attribute("module_path", text(point.modulePath));
            json.attribute("phase", text(point.phase));
            json.attribute("live_bytes", point.liveBytes);
          });
      });
    });
  }

  /// The per-signature blocks (also the top level, for the primary one).
  void signatureBlocks(const SignatureReport &s) {
    json.attribute("function", text(s.function));
    json.attribute("signature", text(s.signature));
    json.attribute("count", s.count);
    json.attribute("passthrough", s.passthrough);
    prediction("baseline", s.baseline);
    if (s.planned)
      prediction("planned", *s.planned);
    else
      json.attribute("planned", nullptr);
    nullable("budget_bytes", s.budgetBytes);
    nullable("feasible", s.feasible);
    nullable("min_reachable_peak_bytes", s.minReachablePeakBytes);
    nullable("planner_peak_bytes", s.plannerPeakBytes);
    json.attribute("preference", text(s.preference));
    json.attributeArray("regions", [&] {
      for (const RegionReport &region : s.regions)
        json.object([&] {
          json.attribute("label", text(region.label));
          strings("module_paths", region.modulePaths);
          json.attribute("saved_bytes_avoided", region.savedBytesAvoided);
          nullable("lowers_peak_by_bytes", region.peakBytesLowered);
          json.attribute("reason", text(region.reason));
          strings("input_policies", region.inputPolicies);
          json.attribute("ops", region.numOps);
        });
    });
    json.attributeArray("compressed", [&] {
      for (const CompressedReport &c : s.compressed)
        json.object([&] {
          json.attribute("what", text(c.what));
          json.attribute("used_by", text(c.usedBy));
          json.attribute("kind", text(c.kind));
          json.attribute("via", text(c.via));
          json.attribute("bytes_full", c.bytesFull);
          json.attribute("bytes_packed", c.bytesPacked);
        });
    });
    json.attributeArray("offloaded", [&] {
      for (const OffloadedReport &o : s.offloaded)
        json.object([&] {
          json.attribute("what", text(o.what));
          json.attribute("used_by", text(o.usedBy));
          json.attribute("kind", text(o.kind));
          json.attribute("via", text(o.via));
          json.attribute("bytes", o.bytes);
          if (!o.prefetchAt.empty())
            json.attribute("prefetch_at", text(o.prefetchAt));
        });
    });
    json.attributeArray("backward_kernels", [&] {
      for (const BackwardKernelReport &k : s.backwardKernels)
        json.object([&] {
          json.attribute("what", text(k.what));
          json.attribute("kind", text(k.kind));
          json.attribute("transient_bytes_aten", k.transientBytesAten);
          json.attribute("transient_bytes", k.transientBytes);
        });
    });
    if (s.prefetch)
      json.attributeObject("prefetch_schedule", [&] {
        json.attribute("offloaded_regions", s.prefetch->offloadedRegions);
        json.attribute("prefetched_early", s.prefetch->prefetchedEarly);
        real("transfer_seconds", s.prefetch->transferSeconds, "%.6g");
        real("stall_seconds", s.prefetch->stallSeconds, "%.6g");
        real("offload_seconds", s.prefetch->offloadSeconds, "%.6g");
        json.attribute("held_regions", s.prefetch->heldRegions);
      });
    real("recompute_seconds", s.recomputeSeconds, "%.6g");
    real("step_seconds", s.stepSeconds, "%.6g");
    real("recompute_overhead", s.recomputeOverhead(), "%.4f");
    json.attributeArray("unknown_ops", [&] {
      for (const UnknownOpReport &u : s.unknownOps)
        json.object([&] {
          json.attribute("op", text(u.op));
          json.attribute("where", text(u.where));
        });
    });
    json.attribute("recommendation", text(report->recommend(s)));
  }

  llvm::json::OStream json;
  const CompileReport *report = nullptr;
};
} // namespace

void CompileReport::writeJSON(llvm::raw_ostream &os) const {
  ReportWriter(os).write(*this);
  os << "\n";
}

llvm::json::Value CompileReport::toJSON() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  writeJSON(os);
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
  if (!value) {
    llvm::consumeError(value.takeError());
    return nullptr;
  }
  return std::move(*value);
}
