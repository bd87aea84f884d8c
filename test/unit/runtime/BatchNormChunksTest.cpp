//===- BatchNormChunksTest.cpp - channels per batch-norm backward call ----===//
//
// The rule the runtime and the memory model share: chunks of at most 1 MiB,
// a sixteenth of a smaller input but not under 64 KiB, and only where four
// chunks are less than the input (otherwise the transients would outgrow
// the one input-sized buffer they replace).
//
//===----------------------------------------------------------------------===//

#include "memopt/Runtime/BatchNormChunks.h"

#include <gtest/gtest.h>

using memopt::runtime::getBatchNormChunkChannels;
using memopt::runtime::kBatchNormChunkBytes;

namespace {

TEST(BatchNormChunks, OneChannelWhenAChannelFillsAChunk) {
  // A ResNet stem at 16x224: 64 channels of 16x112x112 floats (784 KiB).
  EXPECT_EQ(getBatchNormChunkChannels(64, 16 * 112 * 112 * 4), 1);
  // Larger than a chunk: still one channel at a time.
  EXPECT_EQ(getBatchNormChunkChannels(16, 4 * kBatchNormChunkBytes), 1);
}

TEST(BatchNormChunks, SeveralChannelsPerChunk) {
  // 25.6 MiB: chunks of at most 1 MiB.
  EXPECT_EQ(getBatchNormChunkChannels(256, kBatchNormChunkBytes / 10), 10);
  // 1.5 MiB of small planes: a sixteenth of it, 98 KiB, is 32 channels.
  EXPECT_EQ(getBatchNormChunkChannels(512, 16 * 7 * 7 * 4), 32);
}

TEST(BatchNormChunks, SmallInputsInSixteenths) {
  // A small spiking net's widest batch-norm: 32 channels of 8x32x32 floats,
  // 1 MiB, its whole backward peak: chunks of 64 KiB (2 channels).
  EXPECT_EQ(getBatchNormChunkChannels(32, 8 * 32 * 32 * 4), 2);
  // 4 MiB: a sixteenth (256 KiB) is less than one 512 KiB channel.
  EXPECT_EQ(getBatchNormChunkChannels(8, kBatchNormChunkBytes / 2), 1);
}

TEST(BatchNormChunks, WholeInputWhenFourChunksWouldNotBeSmaller) {
  // 128 KiB: chunks of at least 64 KiB, 4 channels; 4 x 4 = 16 >= 8.
  EXPECT_EQ(getBatchNormChunkChannels(8, 16 << 10), 8);
  // 16 KiB: one chunk holds every channel.
  EXPECT_EQ(getBatchNormChunkChannels(16, 1024), 16);
}

TEST(BatchNormChunks, DegenerateShapesRunWhole) {
  EXPECT_EQ(getBatchNormChunkChannels(16, 0), 16);
  EXPECT_EQ(getBatchNormChunkChannels(0, 1024), 0);
}

} // namespace
