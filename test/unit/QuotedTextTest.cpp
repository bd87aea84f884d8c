//===- QuotedTextTest.cpp - quoted() is memopt's wherever std::quoted is --===//
//
// With <iomanip> visible (LibTorch's headers bring it), argument-dependent
// lookup finds std::quoted for a std::string argument; memopt's quoted()
// must still be the one called, for every kind of string argument.
//
//===----------------------------------------------------------------------===//
#include "memopt/Support/QuotedText.h"

#include "gtest/gtest.h"

#include <iomanip>
#include <string>

namespace {

using mlir::memopt::quoted;

TEST(QuotedText, EscapesControlCharactersInSingleQuotes) {
  EXPECT_EQ(quoted(llvm::StringRef("a\nb\"c")), "'a\\nb\\\"c'");
}

TEST(QuotedText, EveryStringKindGetsMemoptsQuotingNotStdQuoted) {
  std::string mutableText = "x\ty";
  const std::string constText = "x\ty";
  const char *pointer = "x\ty";
  const std::string expected = "'x\\ty'";
  EXPECT_EQ(quoted(mutableText), expected);
  EXPECT_EQ(quoted(constText), expected);
  EXPECT_EQ(quoted(std::string("x\ty")), expected);
  EXPECT_EQ(quoted(pointer), expected);
  EXPECT_EQ(quoted("x\ty"), expected);
  EXPECT_EQ("at " + quoted(constText), "at " + expected);
}

} // namespace
