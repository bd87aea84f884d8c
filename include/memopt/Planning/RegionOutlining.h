//===- RegionOutlining.h - move ops into a checkpoint region ----*- C++ -*-===//
#ifndef MEMOPT_PLANNING_REGIONOUTLINING_H
#define MEMOPT_PLANNING_REGIONOUTLINING_H

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::memopt {

/// Whether `op` reads module state (a parameter, buffer or attribute).
bool isStateRead(Operation *op);

/// Moves `ops` (consecutive top-level ops of one block, in order) into a new
/// `memopt.checkpoint` labelled `label`, placed where the first one was.
/// Values from outside become region inputs, with the save policy
/// `policyFor(value)` returns; free values (parameters, buffers, attributes
/// and what is computed from them alone) are cloned into the body instead,
/// and free ops among `ops` stay outside for their other users. Inside
/// another region's body, parameter, buffer and attribute reads enter as
/// inputs instead (the body has no module to read them from). Values used
/// after the region become its results. Fails with a diagnostic when a
/// non-tensor value would have to leave the region. `isFree` decides free
/// values (default: isFreeValue; a caller outlining many regions of one
/// function passes a memoized one).
FailureOr<CheckpointOp>
outlineCheckpointRegion(ArrayRef<Operation *> ops, StringRef label,
                        llvm::function_ref<Attribute(Value)> policyFor,
                        llvm::function_ref<bool(Value)> isFree = nullptr);

/// Adds to `uses`, by path, how many operands of the ops in `root` read a
/// trainable parameter (directly, or as the input of a region whose body it
/// enters as an argument; a region call's own operands are not counted).
void countParameterUses(Operation *root,
                        llvm::DenseMap<StringAttr, unsigned> &uses);

/// A parameter whose gradient `region` would sum in another order than
/// eager autograd: two or more of its `functionUses` uses are inside, not
/// all (the region returns the sum of its own at once); null when none.
StringAttr
findSplitParameterSum(CheckpointOp region,
                      const llvm::DenseMap<StringAttr, unsigned> &functionUses);

} // namespace mlir::memopt

#endif // MEMOPT_PLANNING_REGIONOUTLINING_H
