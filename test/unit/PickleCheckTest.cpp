//===- PickleCheckTest.cpp - pickles LibTorch would allocate wildly for ---===//
//
// findPickleDamage on pickles as Python's pickle writes them (protocol 2,
// the one LibTorch writes) and on the same bytes with a memo index or a
// length that no pickle of their size holds.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/PickleCheck.h"

#include <gtest/gtest.h>

using namespace mlir::memopt;

namespace {

// pickle.dumps(("a", [1, 2], {"k": 1.5}), protocol=2)
// (Literals split where a letter would extend a hex escape.)
const std::string kTuple("\x80\x02X\x01\x00\x00\x00"
                         "aq\x00]q\x01(K\x01K\x02"
                         "e}q\x02X\x01\x00\x00\x00"
                         "kq\x03G?\xf8\x00\x00\x00\x00\x00\x00s\x87q\x04.",
                         44);

TEST(PickleCheck, PicklesAsWrittenPass) {
  EXPECT_EQ(findPickleDamage(kTuple), std::nullopt);
  // Protocol 0: text memo indices.
  EXPECT_EQ(findPickleDamage("(lp0\nI1\naI2\na."), std::nullopt);
  // An opcode the walk does not know ends it without a verdict.
  EXPECT_EQ(findPickleDamage("\x80\x02\xff"), std::nullopt);
}

TEST(PickleCheck, MemoIndexNoPickleOfItsSizeReaches) {
  std::string damaged = kTuple;
  // q\x00 (BINPUT 0) -> r + 4 bytes (LONG_BINPUT 175465829): the fuzzer's
  // finding grew LibTorch's memo table to 2.8 GB.
  size_t at = damaged.find("q\x00", 0, 2);
  damaged.replace(at, 2, std::string("r\x65\x65\x75\x0a", 5));
  std::optional<std::string> damage = findPickleDamage(damaged);
  ASSERT_TRUE(damage);
  EXPECT_NE(damage->find("memo index 175465829"), std::string::npos) << *damage;
  EXPECT_TRUE(findPickleDamage("(lp99\nI1\na."));
}

TEST(PickleCheck, LengthsAndArgumentsPastTheEnd) {
  std::string damaged = kTuple;
  damaged[3] = '\x7f'; // BINUNICODE "a" claims 127 bytes
  std::optional<std::string> damage = findPickleDamage(damaged);
  ASSERT_TRUE(damage);
  EXPECT_NE(damage->find("a length of 127"), std::string::npos) << *damage;
  EXPECT_TRUE(findPickleDamage(kTuple.substr(0, 10))); // cut inside
  EXPECT_TRUE(findPickleDamage("\x80\x02J\x01"));      // BININT's 4 bytes
  EXPECT_TRUE(findPickleDamage("\x80\x02N"));          // no STOP
}

} // namespace
