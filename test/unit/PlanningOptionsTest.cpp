//===- PlanningOptionsTest.cpp - planning options parsed once, printed once
//===//
//
// memopt-compile's flags, memopt-pipeline and memopt-insert-checkpoints share
// one parser and one printer: what a compile prints into its pipeline must
// build a pipeline whose planner gets the same options back.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/PlanningOptions.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::memopt;

namespace {

struct Text {
  std::string budget, prefer = "balanced", device = "cpu";
  double bandwidth = kDefaultOffloadBandwidthGBps;
  bool allowOverBudget = false;
  std::vector<std::string> checkpoint, noCheckpoint, assumeBinary;
};

FailureOr<PlanningOptions> parse(const Text &text, std::string &error) {
  return parsePlanningOptions(text.budget, text.prefer, text.device,
                              text.bandwidth, text.allowOverBudget,
                              text.checkpoint, text.noCheckpoint,
                              text.assumeBinary, error);
}

/// The planner's options as memopt-pipeline hands them on: the textual form
/// of the nested memopt-insert-checkpoints pass in the built pipeline.
std::string insertCheckpointsText(const std::string &pipelineOptions) {
  registerAllMemoptPasses();
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  FailureOr<OpPassManager> pm = parsePassPipeline(
      "builtin.module(memopt-pipeline{" + pipelineOptions + "})", errorStream);
  EXPECT_TRUE(succeeded(pm)) << errors;
  if (failed(pm))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  pm->printAsTextualPipeline(os);
  size_t at = text.find("memopt-insert-checkpoints{");
  EXPECT_NE(at, std::string::npos) << text;
  return text.substr(at, text.find('}', at) - at + 1);
}

TEST(PlanningOptions, PrintedOptionsReachThePlannerUnchanged) {
  std::vector<Text> cases(4);
  cases[0].budget = "40%";
  cases[1].budget = "1.5GiB";
  cases[1].prefer = "memory";
  cases[1].checkpoint = {"layer1.0", "features.3..features.5"};
  cases[1].noCheckpoint = {"head"};
  cases[2].device = "cuda";
  cases[2].bandwidth = 0.004; // every digit travels (not formatv's two)
  cases[2].assumeBinary = {"lif.1", "lif_2"};
  cases[3].prefer = "speed";
  cases[3].allowOverBudget = true;
  for (const Text &text : cases) {
    std::string error;
    FailureOr<PlanningOptions> options = parse(text, error);
    ASSERT_TRUE(succeeded(options)) << error;
    std::string printed = printPassOptions(*options);
    // The planner's pass, built by the pipeline, carries each value.
    std::string planner = insertCheckpointsText(printed);
    EXPECT_NE(planner.find("prefer=" + text.prefer), std::string::npos)
        << planner;
    EXPECT_NE(planner.find("device=" + text.device), std::string::npos)
        << planner;
    if (!text.budget.empty()) {
      EXPECT_NE(planner.find("budget=" + text.budget), std::string::npos)
          << planner;
    }
    EXPECT_NE(planner.find(std::string("allow-over-budget=") +
                           (text.allowOverBudget ? "true" : "false")),
              std::string::npos)
        << planner;
    auto listed = [&](StringRef name, ArrayRef<std::string> values) {
      if (!values.empty()) {
        EXPECT_NE(planner.find((name + "=" + llvm::join(values, ",")).str()),
                  std::string::npos)
            << planner;
      }
    };
    listed("checkpoint", text.checkpoint);
    listed("no-checkpoint", text.noCheckpoint);
    listed("assume-binary", text.assumeBinary);
    if (text.device == "cuda") {
      EXPECT_NE(planner.find("offload-bandwidth=4.000000e-03"),
                std::string::npos)
          << planner;
    }
  }
}

TEST(PlanningOptions, CompressTravelsOnlyToThePipeline) {
  std::string error;
  FailureOr<PlanningOptions> options = parse(Text(), error);
  ASSERT_TRUE(succeeded(options)) << error;
  EXPECT_EQ(printPassOptions(*options, true).find("compress"),
            std::string::npos);
  options->compress = false;
  EXPECT_NE(printPassOptions(*options, true).find("compress=false"),
            std::string::npos);
  EXPECT_EQ(printPassOptions(*options).find("compress"), std::string::npos);
}

TEST(PlanningOptions, EachMistakeIsOneLineNamingTheFlag) {
  struct Bad {
    Text text;
    const char *message;
  };
  std::vector<Bad> bad(7);
  bad[0].text.prefer = "fast";
  bad[0].message = "unknown --prefer 'fast' (expected speed, balanced or "
                   "memory)";
  bad[1].text.device = "tpu";
  bad[1].message = "unknown --device 'tpu' (expected cpu or cuda)";
  bad[2].text.bandwidth = 0;
  bad[2].message = "--offload-bandwidth must be a positive number of GB/s, "
                   "got 0";
  bad[3].text.budget = "lots";
  bad[3].message = "invalid --budget 'lots'";
  bad[4].text.checkpoint = {"layer 1"};
  bad[4].message = "invalid module path 'layer 1' in --checkpoint";
  bad[5].text.checkpoint = {"head"};
  bad[5].text.noCheckpoint = {"head"};
  bad[5].message = "module path 'head' is in both --checkpoint and "
                   "--no-checkpoint";
  bad[6].text.assumeBinary = {"a\nb"};
  bad[6].message = "invalid module path 'a\\nb' in --assume-binary";
  for (const Bad &b : bad) {
    std::string error;
    EXPECT_TRUE(failed(parse(b.text, error)));
    EXPECT_EQ(error.rfind(b.message, 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(PlanningOptions, ThePipelineRefusesWhatTheParserRefuses) {
  registerAllMemoptPasses();
  std::string errors;
  llvm::raw_string_ostream errorStream(errors);
  EXPECT_TRUE(failed(parsePassPipeline(
      "builtin.module(memopt-pipeline{prefer=fast})", errorStream)));
}

} // namespace

namespace {

// The offload settings: a policy and a device-to-host bandwidth of their
// own travel through the pipeline text to the planner, and each mistake is
// one line naming its flag.
TEST(PlanningOptions, OffloadSettingsReachThePlanner) {
  std::string error;
  Text text;
  text.device = "cuda";
  text.bandwidth = 25;
  FailureOr<PlanningOptions> options = parse(text, error);
  ASSERT_TRUE(succeeded(options)) << error;
  ASSERT_TRUE(succeeded(parseOffloadOptions(*options, "unified", 12.5, error)))
      << error;
  EXPECT_EQ(options->offloadKind, OffloadKind::unified);
  EXPECT_EQ(options->getOffloadD2HBandwidthGBps(), 12.5);
  EXPECT_EQ(options->getOffloadBytesPerSecond(), 25e9);
  std::string planner = insertCheckpointsText(printPassOptions(*options));
  EXPECT_NE(planner.find("offload-d2h-bandwidth=1.250000e+01"),
            std::string::npos)
      << planner;
  EXPECT_NE(planner.find("offload-policy=unified"), std::string::npos)
      << planner;

  // Unset: host buffers, the same bandwidth both ways, nothing printed.
  ASSERT_TRUE(succeeded(parseOffloadOptions(*options, "", 0, error)));
  EXPECT_EQ(options->offloadKind, OffloadKind::host);
  EXPECT_EQ(options->getOffloadD2HBandwidthGBps(), 25);
  std::string printed = printPassOptions(*options);
  EXPECT_EQ(printed.find("offload-d2h"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("offload-policy"), std::string::npos) << printed;

  EXPECT_TRUE(failed(parseOffloadOptions(*options, "disk", 0, error)));
  EXPECT_EQ(error,
            "unknown --offload-policy 'disk' (expected host or unified)");
  EXPECT_TRUE(failed(parseOffloadOptions(*options, "host", -3, error)));
  EXPECT_EQ(error, "--offload-d2h-bandwidth must be a positive number of "
                   "GB/s (0: that of --offload-bandwidth), got -3");
}

} // namespace
