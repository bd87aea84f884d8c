//===- Budget.h - memory budgets and byte counts for humans -----*- C++ -*-===//
//
// `--budget` accepts bytes (`123456`, `800MB`, `1.5GiB`: B, KB, MB, GB, TB,
// PB are powers of 1000, KiB, MiB, GiB, TiB, PiB powers of 1024;
// case-insensitive)
// or a percentage of the predicted baseline peak (`40%`).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_BUDGET_H
#define MEMOPT_PLANNING_BUDGET_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>
#include <string>

namespace mlir::memopt {

struct Budget {
  enum class Kind { Bytes, Percent };
  Kind kind = Kind::Bytes;
  int64_t bytes = 0;    // Kind::Bytes
  double percent = 0;   // Kind::Percent, in (0, 1000]
  std::string text;     // as the user wrote it

  /// The budget in bytes for a model whose unplanned peak is `baselinePeak`.
  int64_t resolve(int64_t baselinePeak) const;
};

/// Parses a `--budget` value; on failure sets `error` to a one-line message.
llvm::FailureOr<Budget> parseBudget(llvm::StringRef text, std::string &error);

/// A `--budget` value of at least `bytes` that reads well: `14.6KiB`,
/// `613MiB`, `1.51GiB` (rounded up to three significant digits).
std::string formatBudgetValue(int64_t bytes);

/// `512 B`, `12.3 KiB`, `612 MiB`, `1.50 GiB` (three significant digits).
std::string formatBytes(int64_t bytes);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_BUDGET_H
