//===- BackwardKernelMarks.h - the lean backwards a plan needs -*- C++ -*-===//
#ifndef MEMOPT_PLANNING_BACKWARDKERNELMARKS_H
#define MEMOPT_PLANNING_BACKWARDKERNELMARKS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace mlir::memopt {

/// Removes the `backward` kernel attributes (batch-norm by channel, weight
/// gradients by row block) that `func`'s modelled peak can do without while
/// staying within `limitBytes`, and returns that peak; nullopt when every
/// one stays. All of them at once first (one model run; a plan whose peak
/// sits at one marked op keeps them all), then one kind at a time.
std::optional<int64_t> dropUnneededBackwardKernels(func::FuncOp func,
                                                   int64_t limitBytes);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_BACKWARDKERNELMARKS_H
