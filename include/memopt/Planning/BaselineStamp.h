//===- BaselineStamp.h - the peak and budget a plan refers to ---*- C++ -*-===//
//
// Budgets in percent, the planner and the report refer to one number per
// function: its predicted peak before any memopt transformation. One step
// (memopt-stamp-baseline, first in the pipeline; the planner runs it when
// nothing ran it before) stamps that peak and the budget resolved against
// it; everything after reads the stamps.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_PLANNING_BASELINESTAMP_H
#define MEMOPT_PLANNING_BASELINESTAMP_H

#include "memopt/Planning/Budget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::memopt {

/// Stamps `func` with its predicted peak (memopt.unplanned_peak_bytes) and,
/// when a budget applies (the function's own memopt.budget, else `budget`),
/// that budget in bytes (memopt.budget_bytes). Stamps already there stay.
/// `predictedPeak`: the training-memory model's peak of `func` as it is, when
/// the caller has just computed it (the model is not run again). Fails with
/// a diagnostic on a malformed memopt.budget.
LogicalResult stampBaseline(func::FuncOp func,
                            const std::optional<Budget> &budget,
                            std::optional<int64_t> predictedPeak = {});

/// The stamped peak (stampBaseline has run).
int64_t getStampedBaselineBytes(func::FuncOp func);
/// The stamped budget in bytes; nullopt when none applies.
std::optional<int64_t> getStampedBudgetBytes(func::FuncOp func);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_BASELINESTAMP_H
