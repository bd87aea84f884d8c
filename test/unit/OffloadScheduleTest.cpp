//===- OffloadScheduleTest.cpp - the side stream's copies of offload ------===//
//
// Four regions a..d in a chain, each recomputing a sigmoid of a 64x1024xf32
// input (256 KiB) that it offloads to the host, then two more sigmoids.
// The schedule (lib/Planning/OffloadSchedule.cpp) models the runtime's one
// side stream as a first-in, first-out queue: which inputs stay on the
// device while their copy runs, and how long backward waits for the copies
// back for a given choice of triggers.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/OffloadSchedule.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace mlir::memopt;

namespace {

constexpr int kRegions = 4;
constexpr int64_t kInputBytes = 64 * 1024 * 4;

std::string makeRegionChain() {
  const std::string type = "tensor<64x1024xf32>";
  std::string text = "func.func @f(%x: " + type + ") -> " + type + " {\n";
  std::string last = "%x";
  for (int i = 0; i < kRegions; ++i) {
    std::string next = "%r" + std::to_string(i);
    text += "  " + next + " = memopt.checkpoint \"" +
            std::string(1, char('a' + i)) + "\" (" + last +
            ") policies [#memopt.offload<host>] : (" + type + ") -> " + type +
            " {\n  ^bb0(%i: " + type +
            "):\n    %s = memopt.op "
            "\"aten::sigmoid\"(%i) [#memopt.arg<0>] : (" +
            type + ") -> " + type + "\n    memopt.yield %s : " + type +
            "\n  }\n";
    last = next;
  }
  for (int i = 0; i < 2; ++i) {
    std::string next = "%t" + std::to_string(i);
    text += "  " + next + " = memopt.op \"aten::sigmoid\"(" + last +
            ") [#memopt.arg<0>] : (" + type + ") -> " + type + "\n";
    last = next;
  }
  return text + "  return " + last + " : " + type + "\n}\n";
}

class OffloadScheduleTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<MemoptDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(makeRegionChain(), &context);
    ASSERT_TRUE(module);
    func = *module->getOps<func::FuncOp>().begin();
  }
  SmallVector<int64_t> heldFor() {
    SmallVector<int64_t> held;
    for (auto region : func.getBody().front().getOps<CheckpointOp>())
      held.push_back(region.getOffloadHeldFor().value_or(0));
    return held;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  const CostModel cost;
};

// A link fast enough that each copy is done while the next op runs: every
// input is held through one op, and nothing is left for backward.
TEST_F(OffloadScheduleTest, FastCopiesHoldThroughTheNextOp) {
  OffloadLink link{1e15, 1e15};
  ForwardCopies copies = annotateOffloadHolds(func, link, cost);
  EXPECT_EQ(copies.offloadingRegions, unsigned(kRegions));
  EXPECT_EQ(copies.heldPastNextOp, 0u);
  EXPECT_EQ(heldFor(), SmallVector<int64_t>({1, 1, 1, 1}));
  EXPECT_NEAR(copies.copySeconds,
              kRegions * CostModel::getTransferSeconds(kInputBytes, 1e15),
              1e-12);
}

// A slow link: the copies queue behind each other, so each input stays on
// the device to the end of the block, and the queue's work outlasts forward.
TEST_F(OffloadScheduleTest, SlowCopiesQueueAndHoldToTheEnd) {
  OffloadLink link{1e7, 1e7}; // 26 ms per copy, far above any op here
  ForwardCopies copies = annotateOffloadHolds(func, link, cost);
  // After region k come kRegions - 1 - k regions and two sigmoids.
  EXPECT_EQ(heldFor(), SmallVector<int64_t>({5, 4, 3, 2}));
  EXPECT_EQ(copies.heldPastNextOp, unsigned(kRegions));
  EXPECT_GT(copies.busyAfterForward, 0.9 * copies.copySeconds);
  EXPECT_LE(copies.busyAfterForward, copies.copySeconds);
  // Setting them again gives the same counts; a faster link lowers them.
  annotateOffloadHolds(func, link, cost);
  EXPECT_EQ(heldFor(), SmallVector<int64_t>({5, 4, 3, 2}));
  annotateOffloadHolds(func, OffloadLink{1e15, 1e15}, cost);
  EXPECT_EQ(heldFor(), SmallVector<int64_t>({1, 1, 1, 1}));
}

// Backward: a prefetch triggered one region early hides behind that
// region's backward; at its own region it is waited for in full.
TEST_F(OffloadScheduleTest, EarlyTriggersHideFastCopies) {
  OffloadLink link{1e15, 1e11}; // 100 GB/s back: 12.6 us per copy
  PrefetchTimeline timeline(func, link, cost, /*busyAtStart=*/0);
  ASSERT_EQ(timeline.getRegions().size(), size_t(kRegions));
  double transfer = timeline.getTransferSeconds(0);
  EXPECT_NEAR(transfer, CostModel::getTransferSeconds(kInputBytes, 1e11),
              1e-15);
  double own = timeline.getStallSeconds({0, 1, 2, 3});
  EXPECT_NEAR(own, kRegions * transfer, 1e-12);
  // Each at the next region: only d (first in backward) waits.
  double next = timeline.getStallSeconds({1, 2, 3, 3});
  EXPECT_NEAR(next, transfer, 1e-12);
  // Copies left over from forward delay the first prefetch, less the
  // backward of the two sigmoids after d, which runs meanwhile.
  PrefetchTimeline busy(func, link, cost, /*busyAtStart=*/1e-3);
  double delayed = busy.getStallSeconds({1, 2, 3, 3});
  EXPECT_GT(delayed, next + 1e-4);
  EXPECT_LT(delayed, next + 1e-3);
}

// On one stream, copies issued together run one after another: with a
// link too slow for any backward to hide a copy, triggering everything at
// d gains nothing over the next region, and the trigger's own copy goes
// first (d waits for one copy, not four).
TEST_F(OffloadScheduleTest, OneStreamSerializesCopies) {
  OffloadLink link{1e15, 1e7};
  PrefetchTimeline timeline(func, link, cost, /*busyAtStart=*/0);
  double transfer = timeline.getTransferSeconds(0);
  double allAtD = timeline.getStallSeconds({3, 3, 3, 3});
  double next = timeline.getStallSeconds({1, 2, 3, 3});
  EXPECT_NEAR(allAtD, next, 1e-3 * transfer);
  EXPECT_GT(allAtD, 0.99 * kRegions * transfer - 1e-3);
  EXPECT_LE(allAtD, kRegions * transfer);
}

} // namespace
