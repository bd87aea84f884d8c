//===- SingleOpGraph.h - memopt.ops as a TorchScript graph ------*- C++ -*-===//
//
// The kernel probe measures operators the saved-tensor table does not know
// by running them alone. This builds the TorchScript graph of a few
// `memopt.op`s, the way the exporter writes them in a whole forward: their
// constant arguments as constants, the values they read from outside as
// the graph's inputs, the values asked for as its outputs. LibTorch side.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_SINGLEOPGRAPH_H
#define MEMOPT_CONVERSION_SINGLEOPGRAPH_H

#include "memopt/Dialect/MemoptOps.h"

#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <optional>
#include <vector>

namespace mlir::memopt {

struct OpGraph {
  std::shared_ptr<torch::jit::Graph> graph;
  /// The IR value each graph input stands for, in input order.
  std::vector<Value> inputs;
};

/// The graph running `ops` in order (each reads values from outside or
/// results of earlier ones) and returning `outputs`, or std::nullopt when
/// the exporter could not write it (no TorchScript type for an input, no
/// schema accepting the arguments, plan attributes...). Emits no
/// diagnostic.
std::optional<OpGraph> buildOpGraph(ArrayRef<TorchOp> ops,
                                    ArrayRef<Value> outputs);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_SINGLEOPGRAPH_H
