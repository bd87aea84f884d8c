//===- DeviceModelTest.cpp - the device stamps of the memory model --------===//
#include "memopt/Analysis/TrainingMemoryModel.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::memopt;

namespace {

TEST(DeviceModel, CudaBlocksAreMultiplesOf512Bytes) {
  EXPECT_EQ(getAllocatedBytes(1, TrainingDevice::CUDA), 512);
  EXPECT_EQ(getAllocatedBytes(512, TrainingDevice::CUDA), 512);
  EXPECT_EQ(getAllocatedBytes(513, TrainingDevice::CUDA), 1024);
  EXPECT_EQ(getAllocatedBytes(4000, TrainingDevice::CUDA), 4096);
  // 1 GiB + 1 byte: the rounding does not overflow or saturate.
  EXPECT_EQ(getAllocatedBytes((int64_t(1) << 30) + 1, TrainingDevice::CUDA),
            (int64_t(1) << 30) + 512);
  // Nothing is allocated for an empty tensor; unknown sizes stay unknown.
  EXPECT_EQ(getAllocatedBytes(0, TrainingDevice::CUDA), 0);
  EXPECT_EQ(getAllocatedBytes(-1, TrainingDevice::CUDA), -1);
}

TEST(DeviceModel, CpuBytesAreExact) {
  for (int64_t bytes : {int64_t(0), int64_t(1), int64_t(513), int64_t(4000)})
    EXPECT_EQ(getAllocatedBytes(bytes, TrainingDevice::CPU), bytes);
}

TEST(DeviceModel, StampsParseAndInherit) {
  EXPECT_EQ(parseTrainingDevice("cuda"), TrainingDevice::CUDA);
  EXPECT_EQ(parseTrainingDevice("cpu"), TrainingDevice::CPU);
  EXPECT_EQ(parseTrainingDevice("CUDA"), std::nullopt);

  MLIRContext context;
  OpBuilder builder(&context);
  auto original = ModuleOp::create(builder.getUnknownLoc());
  auto copy = ModuleOp::create(builder.getUnknownLoc());
  EXPECT_EQ(getTrainingDevice(original), TrainingDevice::CPU);
  original->setAttr(kTrainingDeviceAttrName, builder.getStringAttr("cuda"));
  EXPECT_EQ(getTrainingDevice(original), TrainingDevice::CUDA);
  inheritModelStamps(original, copy);
  EXPECT_EQ(getTrainingDevice(copy), TrainingDevice::CUDA);
  original->erase();
  copy->erase();
}

} // namespace
