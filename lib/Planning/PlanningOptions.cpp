//===- PlanningOptions.cpp - what a plan is asked for ---------------------===//
#include "memopt/Planning/PlanningOptions.h"
#include "memopt/Support/QuotedText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::memopt;

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

/// Module paths travel inside the pass pipeline text: keep them to the
/// characters a module path has (and `first..last` ranges).
static LogicalResult checkModulePaths(StringRef option,
                                      ArrayRef<std::string> paths,
                                      std::string &error) {
  for (const std::string &path : paths) {
    bool ok = !path.empty() && llvm::all_of(path, [](char c) {
      return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
    });
    if (!ok) {
      error = ("invalid module path " + quoted(path) + " in --" + option +
               " (expected dotted module paths such as layer1.0 or "
               "features.3, separated by ',')")
                  .str();
      return failure();
    }
  }
  return success();
}

/// A number as an error message quotes it back.
static std::string formatGiven(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%g", value);
  return text;
}

FailureOr<PlanningOptions> mlir::memopt::parsePlanningOptions(
    StringRef budget, StringRef prefer, StringRef device,
    double offloadBandwidthGBps, bool allowOverBudget,
    ArrayRef<std::string> checkpoint, ArrayRef<std::string> noCheckpoint,
    ArrayRef<std::string> assumeBinary, std::string &error) {
  PlanningOptions options;
  // An empty preference (a pass given none) plans for the default.
  if (!prefer.empty()) {
    std::optional<Preference> parsed = parsePreference(prefer);
    if (!parsed) {
      error = "unknown --prefer " + quoted(prefer) +
              " (expected speed, balanced or memory)";
      return failure();
    }
    options.prefer = *parsed;
  }
  std::optional<TrainingDevice> parsedDevice = parseTrainingDevice(device);
  if (!parsedDevice) {
    error = "unknown --device " + quoted(device) + " (expected cpu or cuda)";
    return failure();
  }
  options.device = *parsedDevice;
  if (!(offloadBandwidthGBps > 0) || !std::isfinite(offloadBandwidthGBps)) {
    error = "--offload-bandwidth must be a positive number of GB/s, got " +
            formatGiven(offloadBandwidthGBps);
    return failure();
  }
  options.offloadBandwidthGBps = offloadBandwidthGBps;
  if (!budget.empty()) {
    FailureOr<Budget> parsed = parseBudget(budget, error);
    if (failed(parsed))
      return failure();
    options.budget = *parsed;
  }
  if (failed(checkModulePaths("checkpoint", checkpoint, error)) ||
      failed(checkModulePaths("no-checkpoint", noCheckpoint, error)) ||
      failed(checkModulePaths("assume-binary", assumeBinary, error)))
    return failure();
  for (const std::string &path : checkpoint)
    if (llvm::is_contained(noCheckpoint, path)) {
      error = "module path " + quoted(path) +
              " is in both --checkpoint and --no-checkpoint";
      return failure();
    }
  options.allowOverBudget = allowOverBudget;
  options.checkpoint.assign(checkpoint.begin(), checkpoint.end());
  options.noCheckpoint.assign(noCheckpoint.begin(), noCheckpoint.end());
  options.assumeBinary.assign(assumeBinary.begin(), assumeBinary.end());
  return options;
}

LogicalResult mlir::memopt::parseOffloadOptions(PlanningOptions &options,
                                                StringRef policy,
                                                double d2hBandwidthGBps,
                                                std::string &error) {
  std::optional<OffloadKind> kind =
      policy.empty() ? OffloadKind::host : symbolizeOffloadKind(policy);
  if (!kind) {
    error = "unknown --offload-policy " + quoted(policy) +
            " (expected host or unified)";
    return failure();
  }
  options.offloadKind = *kind;
  if (d2hBandwidthGBps < 0 || !std::isfinite(d2hBandwidthGBps)) {
    error = "--offload-d2h-bandwidth must be a positive number of GB/s (0: "
            "that of --offload-bandwidth), got " +
            formatGiven(d2hBandwidthGBps);
    return failure();
  }
  options.offloadD2HBandwidthGBps = d2hBandwidthGBps;
  return success();
}

std::string mlir::memopt::printPassOptions(const PlanningOptions &options,
                                           bool withCompress) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (options.budget) {
    std::string budget = options.budget->text;
    llvm::erase_if(budget, [](char c) { return llvm::isSpace(c); });
    os << "budget=" << budget << " ";
  }
  os << "prefer=" << stringifyPreference(options.prefer)
     << " device=" << stringifyTrainingDevice(options.device);
  // Every digit: the pass reads back the value parsed here.
  if (options.allowsOffload()) {
    os << " offload-bandwidth="
       << llvm::format("%.17g", options.offloadBandwidthGBps);
    if (options.offloadD2HBandwidthGBps > 0)
      os << " offload-d2h-bandwidth="
         << llvm::format("%.17g", options.offloadD2HBandwidthGBps);
    if (options.offloadKind != OffloadKind::host)
      os << " offload-policy=" << stringifyOffloadKind(options.offloadKind);
  }
  auto list = [&](StringRef name, ArrayRef<std::string> values) {
    if (values.empty())
      return;
    os << " " << name << "=";
    llvm::interleave(values, os, ",");
  };
  list("checkpoint", options.checkpoint);
  list("no-checkpoint", options.noCheckpoint);
  list("assume-binary", options.assumeBinary);
  os << " allow-over-budget=" << (options.allowOverBudget ? "true" : "false");
  if (withCompress && !options.compress)
    os << " compress=false";
  return text;
}
