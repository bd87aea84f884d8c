//===- BinaryValueAnalysis.h - tensors that hold only 0 and 1 ---*- C++ -*-===//
//
// A sound forward dataflow over a function: a tensor is binary when every
// element is exactly 0 or 1 on every run. Sources are comparisons, logical
// operators, heaviside with a binary fill, bernoulli and 0/1 constants;
// casts, views, slicing, cat/stack, max-pooling, products and 1 - x keep
// binariness; `hard + (soft - soft.detach())` is exactly `hard` in forward.
// Anything else (sigmoid, x * 0.5, dropout, sums of binaries) is not binary.
// Users may assert the outputs of a module path binary (`assume-binary`
// option, or `memopt.assume_binary = ["features.3"]` on the function or
// module); such values are reported as assumed so that compression can be
// checked at run time.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_BINARYVALUEANALYSIS_H
#define MEMOPT_ANALYSIS_BINARYVALUEANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

#include <string>

namespace mlir::memopt {

class BinaryValueAnalysis {
public:
  /// For getAnalysis<>: assumptions come from `memopt.assume_binary`.
  explicit BinaryValueAnalysis(Operation *op);
  BinaryValueAnalysis(Operation *op, ArrayRef<std::string> assumedPaths);

  /// Proven or assumed binary.
  bool isBinary(Value value) const {
    return proven.contains(value) || assumed.contains(value);
  }
  bool isProven(Value value) const { return proven.contains(value); }
  /// Binary only because a module path was asserted binary.
  bool isAssumed(Value value) const {
    return assumed.contains(value) && !proven.contains(value);
  }

private:
  void analyze(Operation *op, ArrayRef<std::string> assumedPaths);
  void visit(Operation *op);
  llvm::DenseSet<Value> proven, assumed;
};

/// True when `loc` names module path `path` or a module below it.
bool locationInModule(Location loc, StringRef path);

/// Every path the user names must name an op of `func` (its regions
/// included), or it is a typo: fails with "module path 'p' names no
/// operation of @f (<option>)".
LogicalResult verifyModulePaths(func::FuncOp func, ArrayRef<std::string> paths,
                                StringRef option);

/// The binary values of `func` with the user's assertions
/// (`--assume-binary` paths, verified as above).
FailureOr<BinaryValueAnalysis>
analyzeBinaryValues(func::FuncOp func, ArrayRef<std::string> assumeBinary);

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_BINARYVALUEANALYSIS_H
