//===- CompileSummary.cpp - the human summary of a compile ----------------===//
//
// What memopt-compile prints on stderr: predicted baseline and planned peak,
// budget, checkpoint regions by module path, compressed and offloaded
// tensors, the expected recompute overhead and one recommendation line.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/Budget.h"
#include "memopt/Compile/CompileReport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

static std::string percent(double fraction) {
  std::string text;
  llvm::raw_string_ostream os(text);
  double value = fraction * 100;
  if (std::fabs(value) >= 9.95 || value == 0)
    os << llvm::format("%.0f%%", value);
  else
    os << llvm::format("%.1f%%", value);
  return text;
}

static std::string recommend(const CompileReport &report,
                             const SignatureReport &s) {
  int64_t baseline = s.baseline.peakBytes;
  if (s.passthrough)
    return "compiled without planning (--passthrough-spec); its peak is the "
           "baseline";
  if (report.analyzeOnly) {
    if (s.budgetBytes) {
      if (baseline <= *s.budgetBytes)
        return "the unplanned model already fits the budget (" +
               percent(1.0 - double(baseline) / double(*s.budgetBytes)) +
               " headroom); compiling keeps it under";
      return "the baseline is " + formatBytes(baseline - *s.budgetBytes) +
             " over the budget; run without --analyze-only to plan for it";
    }
    return "run without --analyze-only to plan, e.g. --budget 50% (" +
           formatBytes(baseline / 2) + ") or --prefer memory";
  }
  if (s.feasible && !*s.feasible) {
    std::string text = "budget infeasible: smallest reachable peak " +
                       formatBytes(s.minReachablePeakBytes.value_or(
                           s.planned ? s.planned->peakBytes : baseline));
    int64_t reachable = s.minReachablePeakBytes.value_or(
        s.planned ? s.planned->peakBytes : baseline);
    text += "; try --budget " + formatBudgetValue(reachable);
    if (report.planning.device == TrainingDevice::CPU)
      text += " or --device cuda to offload";
    if (report.planning.allowOverBudget)
      text += " (the least-peak plan was written: --allow-over-budget)";
    return text;
  }
  int64_t planned = s.planned ? s.planned->peakBytes : baseline;
  double overhead = s.recomputeOverhead();
  if (s.budgetBytes && *s.budgetBytes > 0) {
    double headroom = 1.0 - double(planned) / double(*s.budgetBytes);
    if (baseline <= *s.budgetBytes && s.regions.empty() &&
        s.compressed.empty() && s.offloaded.empty())
      return "the unplanned model already fits the budget (" +
             percent(1.0 - double(baseline) / double(*s.budgetBytes)) +
             " headroom); nothing needed changing";
    std::string text = "budget met with " + percent(headroom) + " headroom";
    if (report.planning.prefer != Preference::Speed && headroom >= 0.2 &&
        overhead > 0)
      text += "; --prefer speed would spend it on less recomputation (now +" +
              percent(overhead) + " per step)";
    else if (overhead > 0.25)
      text += "; recomputation costs +" + percent(overhead) +
              " per step: a larger budget would cut it";
    return text;
  }
  if (s.regions.empty() && s.compressed.empty() && s.offloaded.empty())
    return "nothing was worth changing for --prefer " +
           stringifyPreference(report.planning.prefer).str() +
           "; give --budget to force a lower peak";
  return "no --budget given: planned for --prefer " +
         stringifyPreference(report.planning.prefer).str() + " (" +
         percent(baseline > 0 ? double(planned) / double(baseline) - 1.0 : 0) +
         " peak for +" + percent(overhead) +
         " time); give --budget to bound the peak";
}

static void printSignature(const CompileReport &report,
                           const SignatureReport &s, llvm::raw_ostream &os) {
  auto line = [&](llvm::StringRef label) -> llvm::raw_ostream & {
    return os << "  " << llvm::left_justify(label, 20);
  };
  const MemoryPrediction &b = s.baseline;
  line("baseline peak") << formatBytes(b.peakBytes);
  if (!b.peakOp.empty()) {
    os << "  (" << b.peakPhase << " " << b.peakOp;
    if (!b.peakModulePath.empty())
      os << " in " << b.peakModulePath;
    os << ")";
  }
  os << "\n";
  bool allocated = report.gradBuffers == "allocated";
  line("resident") << formatBytes(b.residentBytes)
                   << (allocated ? "  (parameters, buffers, inputs"
                                 : "  (parameters, buffers, inputs, .grad")
                   << (b.gradientBucketBytes ? ", DDP gradient buckets" : "")
                   << (allocated ? ": not counted; .grad allocated in the "
                                   "step)\n"
                                 : ": not counted)\n");
  if (s.planned && !s.passthrough) {
    line("planned peak") << formatBytes(s.planned->peakBytes);
    if (b.peakBytes > 0)
      os << "  ("
         << percent(double(s.planned->peakBytes) / double(b.peakBytes) - 1.0)
         << ")";
    os << "\n";
  }
  if (s.budgetBytes) {
    line("budget") << formatBytes(*s.budgetBytes);
    if (report.planning.budget &&
        report.planning.budget->kind == Budget::Kind::Percent)
      os << " (" << report.planning.budget->text << " of the baseline)";
    int64_t peak = s.planned ? s.planned->peakBytes : b.peakBytes;
    if (s.feasible && !*s.feasible)
      os << "  NOT met";
    else if (peak <= *s.budgetBytes)
      os << "  met";
    else
      os << "  exceeded by " << formatBytes(peak - *s.budgetBytes);
    os << "\n";
  }

  if (report.analyzeOnly || s.passthrough) {
    if (!b.savedByModule.empty()) {
      line("saved for backward") << "by module (largest first):\n";
      size_t shown = std::min<size_t>(b.savedByModule.size(), 5);
      for (size_t i = 0; i < shown; ++i)
        os << "    " << llvm::left_justify(b.savedByModule[i].first, 30) << " "
           << formatBytes(b.savedByModule[i].second) << "\n";
    }
    line("end of forward") << formatBytes(b.endOfForwardBytes) << "\n";
  } else {
    line("checkpoint regions") << s.regions.size() << "\n";
    for (const RegionReport &region : s.regions) {
      std::string paths;
      for (const std::string &path : region.modulePaths)
        paths += (paths.empty() ? "" : ",") + path;
      os << "    " << llvm::left_justify(region.label, 24) << " avoids "
         << llvm::left_justify(formatBytes(region.savedBytesAvoided), 10);
      if (region.peakBytesLowered)
        os << " peak -"
           << llvm::left_justify(formatBytes(*region.peakBytesLowered), 10);
      if (!paths.empty() && paths != region.label)
        os << " [" << paths << "]";
      if (!region.reason.empty())
        os << " " << region.reason;
      os << "\n";
    }
    int64_t full = 0, packed = 0;
    for (const CompressedReport &c : s.compressed) {
      full += c.bytesFull;
      packed += c.bytesPacked;
    }
    line("compressed") << s.compressed.size() << " tensor(s)";
    if (!s.compressed.empty())
      os << ", " << formatBytes(full) << " -> " << formatBytes(packed)
         << " (saves " << formatBytes(full - packed) << ")";
    os << "\n";
    for (const CompressedReport &c : s.compressed)
      os << "    " << c.what << (c.usedBy.empty() ? "" : " -> " + c.usedBy)
         << "  " << c.kind << "  "
         << formatBytes(c.bytesFull) << " -> " << formatBytes(c.bytesPacked)
         << "\n";
    int64_t moved = 0;
    for (const OffloadedReport &o : s.offloaded)
      moved += o.bytes;
    line("offloaded") << s.offloaded.size() << " tensor(s)";
    if (!s.offloaded.empty())
      os << ", " << formatBytes(moved) << " off the device";
    os << "\n";
    for (const OffloadedReport &o : s.offloaded)
      os << "    " << o.what << (o.usedBy.empty() ? "" : " -> " + o.usedBy)
         << "  " << o.kind << "  " << formatBytes(o.bytes)
         << (o.prefetchAt.empty() || o.usedBy == "region " + o.prefetchAt
                 ? ""
                 : "  (prefetched as " + o.prefetchAt + " starts backward)")
         << "\n";
    if (!s.backwardKernels.empty()) {
      int64_t aten = 0, now = 0, byChannel = 0;
      for (const BackwardKernelReport &k : s.backwardKernels) {
        aten += k.transientBytesAten;
        now += k.transientBytes;
        byChannel += k.kind == "by_channel";
      }
      llvm::raw_ostream &kernels = line("lean backward");
      if (byChannel)
        kernels << byChannel << " batch-norm(s) by channel, ";
      if (s.backwardKernels.size() > size_t(byChannel))
        kernels << s.backwardKernels.size() - byChannel
                << " weight gradient(s) by row block, ";
      kernels << "backward buffers " << formatBytes(aten) << " -> "
              << formatBytes(now) << "\n";
      for (const BackwardKernelReport &k : s.backwardKernels)
        os << "    " << k.what << "  " << k.kind << "  "
           << formatBytes(k.transientBytesAten) << " -> "
           << formatBytes(k.transientBytes) << "\n";
    }
    if (s.prefetch)
      line("prefetch schedule")
          << s.prefetch->prefetchedEarly << " of "
          << s.prefetch->offloadedRegions
          << " region(s) prefetched while later regions run backward; "
          << llvm::format("copies %.3g ms to the host, %.3g ms back, %.3g ms "
                          "of waiting",
                          s.prefetch->offloadSeconds * 1e3,
                          s.prefetch->transferSeconds * 1e3,
                          s.prefetch->stallSeconds * 1e3)
          << " (predicted)\n";
    line("recompute overhead")
        << "+" << percent(s.recomputeOverhead()) << " of a step"
        << llvm::format(" (%.3g s of %.3g s, predicted)", s.recomputeSeconds,
                        s.stepSeconds)
        << "\n";
  }
  if (!s.unknownOps.empty()) {
    line("unknown ops") << s.unknownOps.size()
                        << " (modelled as saving every tensor): ";
    for (size_t i = 0; i < s.unknownOps.size() && i < 3; ++i)
      os << (i ? ", " : "") << s.unknownOps[i].op;
    if (s.unknownOps.size() > 3)
      os << ", ...";
    os << "\n";
  }
  line("recommendation") << report.recommend(s) << "\n";
}

std::string CompileReport::recommend(const SignatureReport &signature) const {
  return ::recommend(*this, signature);
}

void CompileReport::printSummary(llvm::raw_ostream &os) const {
  os << "memopt-compile: " << llvm::sys::path::filename(model);
  if (!output.empty())
    os << " -> " << (output == "-" ? "<stdout>"
                                   : llvm::sys::path::filename(output).str());
  if (analyzeOnly)
    os << " (analyze only)";
  os << "\n";
  const SignatureReport *main = primary();
  for (const SignatureReport &s : signatures) {
    os << "signature " << (s.signature.empty() ? "(none)" : s.signature)
       << " (@" << s.function;
    if (signatures.size() > 1)
      os << ", count " << s.count;
    if (&s == main && signatures.size() > 1)
      os << ", most frequent";
    os << ")\n";
    printSignature(*this, s, os);
  }
  if (deviceMarks) {
    // The GPU's workspaces are part of its peak; say what is not priced.
    os << "kernel marks: ";
    if (deviceMarks->file.empty())
      os << "none given";
    else
      os << deviceMarks->applied << " convolution"
         << (deviceMarks->applied == 1 ? "" : "s") << " priced from "
         << llvm::sys::path::filename(deviceMarks->file);
    os << "; " << deviceMarks->requested << " call"
       << (deviceMarks->requested == 1 ? "" : "s") << " without marks"
       << (deviceMarks->requestsFile.empty()
               ? std::string()
               : (" (requested in " +
                  llvm::sys::path::filename(deviceMarks->requestsFile) + ")")
                     .str())
       << "\n";
  }
  os << llvm::format("time: import %.2f s, ", timings.importSeconds);
  if (kernelWorkspaces.probed)
    os << llvm::format("kernel probe %.2f s, ", timings.probeSeconds);
  os << llvm::format("plan %.2f s, ", timings.planSeconds);
  if (forwardCheck)
    os << llvm::format("forward check %.2f s, ", forwardCheck->seconds);
  os << llvm::format("export %.2f s, total %.2f s\n", timings.exportSeconds,
                     timings.totalSeconds);
  if (forwardCheck) {
    os << "forward check: ";
    if (forwardCheck->compared)
      os << forwardCheck->compared << " call"
         << (forwardCheck->compared == 1 ? "" : "s")
         << " of the compiled module matched the source's outputs bit for "
            "bit";
    for (auto [index, why] : llvm::enumerate(forwardCheck->notCompared))
      os << (index || forwardCheck->compared ? "; " : "")
         << "not compared: " << why;
    os << "\n";
  }
  os << "planned for PyTorch " << torchVersion << " on "
     << stringifyTrainingDevice(planning.device);
  if (intraOpThreads > 0)
    os << " with " << intraOpThreads << " intra-op thread"
       << (intraOpThreads == 1 ? "" : "s");
  os << ", .grad "
     << (gradBuffers == "allocated" ? "set to None between steps (allocated "
                                      "in backward)"
                                    : "zeroed in place between steps");
  if (worldSize > 1)
    os << "; per process of " << worldSize
       << " data-parallel ones (budget, plan and peak per process)";
  if (!operatorLibraries.empty()) {
    os << "; operators of";
    for (const std::string &library : operatorLibraries)
      os << ' ' << llvm::sys::path::filename(library);
    os << " loaded";
  }
  os << "\n";
}
