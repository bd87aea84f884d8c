//===- ConstantFolding.h - TorchScript constants as op arguments -*- C++
//-*-===//
//
// Decides which TorchScript values become constant entries of a memopt.op's
// `args` (numbers, strings, None, devices, and lists/tuples of those that
// nothing mutates) and materializes the rest as `memopt.op "prim::Constant"`.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_CONSTANTFOLDING_H
#define MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_CONSTANTFOLDING_H

#include "ImportInternal.h"

namespace mlir::memopt::detail {

class ConstantFolder {
public:
  ConstantFolder(const SpecializedGraph &graph, MLIRContext *context)
      : graph(graph), context(context) {}

  /// The constant argument `value` folds to, or null when it stays SSA.
  Attribute foldedArgument(const torch::jit::Value *value);
  /// True for list/tuple constructions every user folds: emit nothing.
  bool isFoldedAway(const torch::jit::Node *node);
  /// `memopt.op "prim::Constant"() [value]` for a constant used as SSA value.
  Value materialize(const torch::jit::Value *value, OpBuilder &builder,
                    Type type);

private:
  Attribute contents(const torch::jit::Value *value);
  bool everyUseFolds(const torch::jit::Value *value);

  const SpecializedGraph &graph;
  MLIRContext *context;
  std::unordered_map<const torch::jit::Value *, Attribute> cache;
};

} // namespace mlir::memopt::detail

#endif // MEMOPT_LIB_CONVERSION_TORCHSCRIPTIMPORT_CONSTANTFOLDING_H
