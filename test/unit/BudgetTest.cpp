//===- BudgetTest.cpp - --budget parsing and the values the summary suggests //
//
// Regression tests for the parser fuzzer's findings (docs/reliability.md):
// every budget the summary suggests (formatBudgetValue) parses back to at
// least as many bytes, up to the largest budget accepted; messages quote
// control characters escaped, on one line.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/Budget.h"

#include "gtest/gtest.h"

#include <cmath>
#include <string>

using namespace mlir::memopt;

namespace {

void expectSuggestionParses(int64_t bytes) {
  std::string suggested = formatBudgetValue(bytes), error;
  llvm::FailureOr<Budget> parsed = parseBudget(suggested, error);
  ASSERT_TRUE(succeeded(parsed))
      << bytes << " -> " << suggested << ": " << error;
  EXPECT_EQ(parsed->kind, Budget::Kind::Bytes);
  EXPECT_GE(parsed->bytes, bytes) << suggested;
  EXPECT_LE(double(parsed->bytes), double(bytes) * 1.011 + 1) << suggested;
}

TEST(Budget, SuggestedValuesParseBackAtEveryMagnitude) {
  // The fuzzer's input: 11111111111111112 bytes was suggested as 9.87PiB,
  // a unit the parser did not know.
  expectSuggestionParses(11111111111111112);
  for (double bytes = 1; bytes < 9.0e18; bytes *= 1.37)
    expectSuggestionParses(static_cast<int64_t>(bytes));
}

TEST(Budget, PetabyteUnits) {
  std::string error;
  EXPECT_EQ(parseBudget("2PB", error)->bytes, int64_t(2e15));
  EXPECT_EQ(parseBudget("1pib", error)->bytes, int64_t(1) << 50);
  EXPECT_TRUE(failed(parseBudget("9000PiB", error))); // over 9e18 bytes
  EXPECT_NE(error.find("too large"), std::string::npos) << error;
}

TEST(Budget, ControlCharactersAreEscapedInOneLine) {
  std::string error;
  ASSERT_TRUE(failed(parseBudget("1\n2MB", error)));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_NE(error.find("'1\\n2MB'"), std::string::npos) << error;
  ASSERT_TRUE(failed(parseBudget("80\x1b[2JMB", error)));
  EXPECT_EQ(error.find('\x1b'), std::string::npos) << error;
}

} // namespace
