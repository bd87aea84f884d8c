//===- StorageTimelineTest.cpp - the memory model's storage counting ------===//
//
// StorageTimeline is the bottom layer of the training-memory model: it counts
// reference-counted storages and records the timeline, knowing nothing of
// operators. These tests drive it directly.
//
//===----------------------------------------------------------------------===//
#include "StorageTimeline.h"
#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::memopt;

namespace {

/// An empty function whose arguments serve as values to hold storages, and
/// the (empty) model of it that a timeline writes into.
struct Fixture {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  std::optional<TrainingMemoryModel> model;

  explicit Fixture(unsigned numValues) {
    context.loadDialect<func::FuncDialect, MemoptDialect>();
    OpBuilder builder(&context);
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    SmallVector<Type> types(numValues,
                            RankedTensorType::get({4}, builder.getF32Type()));
    func = builder.create<func::FuncOp>(builder.getUnknownLoc(), "f",
                                        builder.getFunctionType(types, {}));
    Block *entry = func.addEntryBlock();
    builder.setInsertionPointToEnd(entry);
    builder.create<func::ReturnOp>(builder.getUnknownLoc());
    model.emplace(func);
  }
  Value value(unsigned i) { return func.getArgument(i); }
};

TEST(StorageTimeline, CountsHeldStoragesUntilTheLastReleaseButNotResident) {
  Fixture f(2);
  StorageTimeline storage(*f.model, TrainingDevice::CPU);
  unsigned resident = storage.newStorage(1000, /*resident=*/true);
  unsigned activation = storage.newStorage(300);
  EXPECT_EQ(storage.getLiveBytes(), 300); // allocated, not yet held
  storage.define(f.value(0), {resident, activation});
  storage.define(f.value(1), {activation});
  EXPECT_EQ(storage.getRefs(activation), 2);
  storage.drop(f.value(0));
  EXPECT_EQ(storage.getLiveBytes(), 300); // value 1 still holds it
  EXPECT_FALSE(storage.isHeld(f.value(0)));
  EXPECT_EQ(storage.definedWith(f.value(0)).size(), 2u);
  storage.drop(f.value(1));
  EXPECT_EQ(storage.getLiveBytes(), 0);
  EXPECT_TRUE(storage.isResident(resident));
  storage.drop(f.value(1)); // dropping twice releases nothing twice
  EXPECT_EQ(storage.getRefs(activation), 0);
}

TEST(StorageTimeline, ListsHoldTheirElementsAndSharedBytesCountOnce) {
  Fixture f(2);
  StorageTimeline storage(*f.model, TrainingDevice::CPU);
  unsigned a = storage.newStorage(100), b = storage.newStorage(50);
  storage.define(f.value(0), {a});
  storage.holdAlso(f.value(1), {a, b}); // a list built by appends
  EXPECT_EQ(storage.heldBy(f.value(1)).size(), 2u);
  EXPECT_EQ(storage.getRefs(a), 2);
  EXPECT_EQ(storage.getUniqueBytes({a, b, a}), 150);
  storage.drop(f.value(0));
  EXPECT_EQ(storage.getLiveBytes(), 150);
  storage.drop(f.value(1));
  EXPECT_EQ(storage.getLiveBytes(), 0);
}

TEST(StorageTimeline, RoundsAsTheDeviceAllocatorDoes) {
  Fixture f(1);
  StorageTimeline cuda(*f.model, TrainingDevice::CUDA);
  EXPECT_EQ(cuda.getBytes(cuda.newStorage(513)), 1024);
  EXPECT_EQ(cuda.getBytes(cuda.newStorage(-1)), 0); // unknown size: nothing
  StorageTimeline cpu(*f.model, TrainingDevice::CPU);
  EXPECT_EQ(cpu.getBytes(cpu.newStorage(513)), 513);
}

TEST(StorageTimeline, RecordsThePeakAndWhatIsLiveThere) {
  Fixture f(3);
  Operation *op = f.func.getBody().front().getTerminator();
  // Replay: the peak's tensors are listed when entry 2 is recorded.
  StorageTimeline storage(*f.model, TrainingDevice::CPU);
  storage.recordPeakTensorsAt(2);
  unsigned input = storage.newStorage(64, /*resident=*/true);
  unsigned out = storage.newStorage(100), grad = storage.newStorage(40);
  unsigned scratch = storage.newStorage(8);
  storage.define(f.value(0), {input});
  storage.define(f.value(1), {out});
  storage.define(f.value(2), {grad});
  storage.noteGradOf(f.value(1), grad);
  storage.retain(scratch);                  // held by no value: "other"
  storage.record(op, MemoryPhase::Forward); // 148
  storage.recordHigh(op, MemoryPhase::Backward, 120); // a measured high
  storage.record(op, MemoryPhase::Backward, /*transient=*/12); // 160: peak
  storage.record(op, MemoryPhase::Backward, 12); // ties keep the first
  EXPECT_EQ(f.model->predictPeak(), 160);
  ASSERT_EQ(f.model->getTimeline().size(), 4u);
  EXPECT_EQ(f.model->getPeakEntry(), &f.model->getTimeline()[2]);
  EXPECT_EQ(f.model->getTimeline()[1].liveBytes, 120);

  ArrayRef<PeakTensor> tensors = f.model->getPeakTensors();
  ASSERT_EQ(tensors.size(), 4u); // largest first; the input is resident
  EXPECT_EQ(tensors[0].role, PeakTensor::Role::Value);
  EXPECT_EQ(tensors[0].value, f.value(1));
  EXPECT_EQ(tensors[1].role, PeakTensor::Role::Gradient); // owner: value 1
  EXPECT_EQ(tensors[1].value, f.value(1));
  EXPECT_EQ(tensors[1].bytes, 40);
  EXPECT_EQ(tensors[2].role, PeakTensor::Role::Workspace);
  EXPECT_EQ(tensors[2].bytes, 12);
  EXPECT_EQ(tensors[3].role, PeakTensor::Role::Other);
  EXPECT_EQ(tensors[3].bytes, 8);
}

} // namespace
