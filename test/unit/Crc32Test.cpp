//===- Crc32Test.cpp - the folded CRC-32 is zlib's, for every input -------===//
#include "memopt/Conversion/Crc32.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace mlir::memopt;

namespace {

std::vector<uint8_t> randomBytes(size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::vector<uint8_t> bytes(size);
  for (uint8_t &byte : bytes)
    byte = static_cast<uint8_t>(generator());
  return bytes;
}

// Every length around the folding's steps (64-byte lanes, 16-byte blocks,
// the tail), from every alignment, from a zero and a running CRC.
TEST(Crc32, MatchesZlibForEveryLengthAndAlignment) {
  std::vector<uint8_t> bytes = randomBytes(1024 + 16, 1);
  for (size_t offset = 0; offset < 16; ++offset)
    for (size_t size = 0; size <= 1024; ++size)
      for (uint32_t crc : {0u, 0xFFFFFFFFu, 0x1234ABCDu}) {
        const uint8_t *data = bytes.data() + offset;
        ASSERT_EQ(updateCrc32(crc, data, size),
                  updateCrc32WithZlib(crc, data, size))
            << "offset " << offset << " size " << size << " crc " << crc;
      }
}

TEST(Crc32, MatchesZlibOnLargeAndUniformData) {
  std::vector<uint8_t> random = randomBytes(3 << 20, 2);
  EXPECT_EQ(updateCrc32(0, random.data(), random.size()),
            updateCrc32WithZlib(0, random.data(), random.size()));
  for (uint8_t value : {0x00, 0xFF, 0x5A}) {
    std::vector<uint8_t> uniform((1 << 20) + 37, value);
    EXPECT_EQ(updateCrc32(0, uniform.data(), uniform.size()),
              updateCrc32WithZlib(0, uniform.data(), uniform.size()));
  }
}

// zip's check value: CRC-32 of "123456789" is 0xCBF43926.
TEST(Crc32, CheckValue) {
  const uint8_t digits[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  EXPECT_EQ(updateCrc32(0, digits, sizeof(digits)), 0xCBF43926u);
  std::vector<uint8_t> repeated;
  for (int i = 0; i < 20; ++i)
    repeated.insert(repeated.end(), digits, digits + sizeof(digits));
  EXPECT_EQ(updateCrc32(0, repeated.data(), repeated.size()),
            updateCrc32WithZlib(0, repeated.data(), repeated.size()));
}

// Split anywhere, a running CRC continues where the first part stopped.
TEST(Crc32, ContinuesAcrossSplits) {
  std::vector<uint8_t> bytes = randomBytes(4096 + 5, 3);
  uint32_t whole = updateCrc32(0, bytes.data(), bytes.size());
  for (size_t split : {size_t(1), size_t(63), size_t(64), size_t(65),
                       size_t(1000), size_t(4096)}) {
    uint32_t first = updateCrc32(0, bytes.data(), split);
    EXPECT_EQ(updateCrc32(first, bytes.data() + split, bytes.size() - split),
              whole)
        << "split at " << split;
  }
}

} // namespace
