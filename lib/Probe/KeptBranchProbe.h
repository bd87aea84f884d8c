//===- KeptBranchProbe.h - what a kept prim::If keeps for backward -*- C++
//-*-===//
#ifndef MEMOPT_LIB_PROBE_KEPTBRANCHPROBE_H
#define MEMOPT_LIB_PROBE_KEPTBRANCHPROBE_H

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::memopt {

/// For a `prim::If` (or `prim::Loop` starting from a boolean condition)
/// the importer kept whole (its `script`), whose operands besides the
/// condition are statically shaped tensors: runs each branch (the loop,
/// once) with autograd recording on `threads` intra-op threads and sets
/// the op's `measured_saves` to the most any branch keeps for backward;
/// `grads` holds the values that will require grad in training. False
/// (nothing set) when the op is not such an If or no branch runs.
bool probeKeptBranches(TorchOp op, const DenseSet<Value> &grads, int threads);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PROBE_KEPTBRANCHPROBE_H
