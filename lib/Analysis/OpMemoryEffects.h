//===- OpMemoryEffects.h - one op's effect on training memory ---*- C++ -*-===//
//
// Turns a memopt.op and the saved-tensor table row that matches it into what
// the simulator needs: which results are new allocations, which values and
// new tensors autograd saves, and how input gradients are produced.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_ANALYSIS_OPMEMORYEFFECTS_H
#define MEMOPT_LIB_ANALYSIS_OPMEMORYEFFECTS_H

#include "memopt/Dialect/MemoptOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::memopt {

struct OpMemoryEffects {
  /// Per result: the operand it aliases, or null for a new allocation.
  SmallVector<Value> resultAliases;
  /// Operands and results whose storages autograd keeps.
  SmallVector<Value> savedValues;
  /// Bytes of tensors allocated by the op only to be saved.
  SmallVector<int64_t> savedNewBytes;
  /// Tensor values (operands, or elements of list operands) that receive a
  /// gradient, and whether it is a new buffer (else it is the gradient of
  /// result 0 passed through).
  SmallVector<std::pair<Value, bool>> grads;
  /// Of those new gradients, the ones that are the passed-through output
  /// gradient summed to a broadcast operand's shape (`x + b`): autograd
  /// allocates only the reduced buffer, never one of the result's shape.
  SmallVector<Value> reducedPassThrough;
  /// Of the new gradients, those seen through a view (GradRule::View).
  SmallVector<Value> viewGrads;
  /// Of the new gradients, those computed at a bigger shape first and then
  /// summed to the operand's (a batched product's broadcast operand), with
  /// the bytes of that bigger gradient, live while the backward runs.
  SmallVector<std::pair<Value, int64_t>> unreducedGrads;
  /// The op records an autograd node (some input requires grad and the op is
  /// differentiable there).
  bool differentiable = false;
  /// The table knew the op; otherwise the effects are a safe guess.
  bool known = true;
  /// What its backward allocates at its highest, counting the new
  /// gradients (the table's backward rule), or -1 where that is just them.
  int64_t backwardHighWater = -1;
  /// What its backward allocates beside the new gradients (a `+` rule), or
  /// -1.
  int64_t backwardAboveGradients = -1;
};

/// Effects of `op`; `requiresGrad` answers for tensor values.
/// `foldCopies` says whether reshaping a value's leading dims into one (as
/// matmul does) copies it. `fusedDropoutAttention`: attention with dropout
/// runs a fused kernel that keeps no scores (CUDA's flash and
/// memory-efficient attention), not the CPU's math decomposition.
OpMemoryEffects getOpMemoryEffects(TorchOp op,
                                   function_ref<bool(Value)> requiresGrad,
                                   function_ref<bool(Value)> isContiguous,
                                   function_ref<bool(Value)> foldCopies,
                                   bool fusedDropoutAttention = false);

/// Elements of a list value built by prim::ListConstruct (else the value),
/// followed by those `aten::append` added to it (before `at`, when given).
SmallVector<Value> getListElements(Value value, Operation *at = nullptr);

/// The value at `position` of a list or tuple built by prim::ListConstruct /
/// prim::TupleConstruct (and `aten::append` before `at`), counting constant
/// entries; null when it is not an SSA value or the list was not built here.
Value getListElementAt(Value list, int64_t position, Operation *at);

/// A random operator that draws from the generator (not a dropout with a
/// constant p of 0 or training off, which returns its input): as the
/// runtime decides whether a checkpoint region keeps the generator's state.
bool drawsRandomNumbers(TorchOp op);

/// TorchScript's generic operations on lists of tensors (`aten::add.t`,
/// `aten::slice.t`, `aten::list.t`, `aten::extend.t`, ...): they make no
/// tensor; what they return or extend holds their list operands' elements.
bool isTensorListOperation(TorchOp op);

/// Follows `position` of `list` back through concatenations, copies and
/// constant slices to the list it came from: {that list, its position}
/// (`list` itself and `position` where it cannot be followed).
std::pair<Value, int64_t> traceListPosition(Value list, int64_t position);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_ANALYSIS_OPMEMORYEFFECTS_H
