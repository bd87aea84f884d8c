//===- BatchNormChunksTest.cpp - channels per batch-norm backward call ----===//
//
// The rule the runtime and the memory model share: chunk only where four
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
  EXPECT_EQ(getBatchNormChunkChannels(16, kBatchNormChunkBytes / 2), 2);
  EXPECT_EQ(getBatchNormChunkChannels(256, kBatchNormChunkBytes / 10), 10);
}

TEST(BatchNormChunks, WholeInputWhenFourChunksWouldNotBeSmaller) {
  // 4 chunks of 2 channels = 8 = all channels: no gain.
  EXPECT_EQ(getBatchNormChunkChannels(8, kBatchNormChunkBytes / 2), 8);
  // 4 x 10 = 40 >= 32.
  EXPECT_EQ(getBatchNormChunkChannels(32, kBatchNormChunkBytes / 10), 32);
  // Small planes: one chunk holds every channel.
  EXPECT_EQ(getBatchNormChunkChannels(512, 16 * 7 * 7 * 4), 512);
}

TEST(BatchNormChunks, DegenerateShapesRunWhole) {
  EXPECT_EQ(getBatchNormChunkChannels(16, 0), 16);
  EXPECT_EQ(getBatchNormChunkChannels(0, 1024), 0);
}

} // namespace
