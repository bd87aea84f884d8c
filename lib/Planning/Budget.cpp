//===- Budget.cpp - parse --budget, print byte counts ---------------------===//
#include "memopt/Planning/Budget.h"
#include "memopt/Support/QuotedText.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>

using namespace mlir::memopt;

int64_t Budget::resolve(int64_t baselinePeak) const {
  if (kind == Kind::Bytes)
    return bytes;
  return static_cast<int64_t>(
      std::floor(static_cast<double>(baselinePeak) * percent / 100.0));
}

/// A non-negative decimal number (`1`, `1.5`, `.5`) with nothing after it.
static bool parseNumber(llvm::StringRef text, double &value) {
  if (text.empty() || text.size() > 32)
    return false;
  bool digits = false, dot = false;
  for (char c : text) {
    if (llvm::isDigit(c))
      digits = true;
    else if (c == '.' && !dot)
      dot = true;
    else
      return false;
  }
  if (!digits)
    return false;
  value = std::strtod(text.str().c_str(), nullptr);
  return std::isfinite(value);
}

llvm::FailureOr<Budget> mlir::memopt::parseBudget(llvm::StringRef text,
                                                  std::string &error) {
  auto fail = [&](const llvm::Twine &why) {
    error = ("invalid --budget " + quoted(text) + ": " + why +
             " (expected bytes such as 123456, 800MB or 1.5GiB, or a "
             "percentage of the baseline peak such as 40%)")
                .str();
    return llvm::failure();
  };
  Budget budget;
  budget.text = text.str();
  llvm::StringRef body = text.trim();
  if (body.empty())
    return fail("the value is empty");

  if (body.consume_back("%")) {
    double percent;
    if (!parseNumber(body.trim(), percent))
      return fail(quoted(body.trim()) + " is not a number");
    if (percent <= 0 || percent > 1000)
      return fail("a percentage must be in (0, 1000]");
    budget.kind = Budget::Kind::Percent;
    budget.percent = percent;
    return budget;
  }

  size_t split = body.find_if([](char c) { return llvm::isAlpha(c); });
  llvm::StringRef number = body.substr(0, split).trim();
  llvm::StringRef unit = split == llvm::StringRef::npos ? "" : body.substr(split);
  double scale = llvm::StringSwitch<double>(unit.lower())
                     .Cases("", "b", 1.0)
                     .Cases("k", "kb", 1e3)
                     .Cases("m", "mb", 1e6)
                     .Cases("g", "gb", 1e9)
                     .Cases("t", "tb", 1e12)
                     .Cases("p", "pb", 1e15)
                     .Case("kib", 1024.0)
                     .Case("mib", 1024.0 * 1024)
                     .Case("gib", 1024.0 * 1024 * 1024)
                     .Case("tib", 1024.0 * 1024 * 1024 * 1024)
                     // formatBudgetValue suggests PiB above 1024 TiB.
                     .Case("pib", 1024.0 * 1024 * 1024 * 1024 * 1024)
                     .Default(-1);
  if (scale < 0)
    return fail("unknown unit " + quoted(unit) +
                " (B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)");
  double value;
  if (!parseNumber(number, value))
    return fail(quoted(number) + " is not a number");
  double bytes = std::floor(value * scale);
  if (bytes < 1)
    return fail("the budget must be at least one byte");
  if (bytes > 9.0e18)
    return fail("the budget is too large");
  budget.kind = Budget::Kind::Bytes;
  budget.bytes = static_cast<int64_t>(bytes);
  return budget;
}

std::string mlir::memopt::formatBytes(int64_t bytes) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = std::abs(static_cast<double>(bytes));
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  if (bytes < 0)
    os << "-";
  if (unit == 0)
    os << static_cast<int64_t>(value) << " B";
  else if (value >= 99.95)
    os << llvm::format("%.0f", value) << " " << units[unit];
  else if (value >= 9.995)
    os << llvm::format("%.1f", value) << " " << units[unit];
  else
    os << llvm::format("%.2f", value) << " " << units[unit];
  return text;
}

std::string mlir::memopt::formatBudgetValue(int64_t bytes) {
  if (bytes < 1024)
    return std::to_string(std::max<int64_t>(bytes, 1));
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  int decimals = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  double scale = std::pow(10.0, decimals);
  double rounded = std::ceil(value * scale) / scale;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format(decimals == 0 ? "%.0f" : decimals == 1 ? "%.1f" : "%.2f",
                     rounded)
     << units[unit];
  return text;
}
