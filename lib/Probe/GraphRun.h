//===- GraphRun.h - what a TorchScript graph keeps for backward -*- C++ -*-===//
//
// Kept control flow (a branch's script) and operators the saved-tensor
// table does not know (the op alone, SingleOpGraph.h) are measured the same
// way: run the graph on tensors of the operands' static shapes with
// autograd recording, then its backward, under the counting allocator.
// LibTorch side.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_GRAPHRUN_H
#define MEMOPT_LIB_PROBE_GRAPHRUN_H

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/ADT/DenseSet.h"

#include <ATen/core/ivalue.h>
#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <optional>
#include <set>
#include <vector>

namespace mlir::memopt {

/// What one run kept: new bytes beyond its results, and which operands (by
/// index); and the peaks of its forward and of its backward above what was
/// live before each (the backward's counting the gradients it makes), with
/// the incoming gradient freed by the first backward node (`backward`) or
/// held throughout (`backwardHeld`).
struct GraphRunMarks {
  int64_t bytes = 0;
  std::set<unsigned> operands;
  std::set<std::pair<unsigned, unsigned>> elements; // (list operand, index)
  std::set<unsigned> results;
  int64_t forward = 0;
  int64_t backward = 0;
  int64_t backwardHeld = 0;
  /// Of an op run alone: the dims that permute its first result into a
  /// contiguous tensor (TorchOp's `dense_order`); empty when unknown.
  SmallVector<int64_t, 4> denseOrder;

  /// The most of each mark of this run and `other`.
  void takeMost(const GraphRunMarks &other);
};

/// The value of an integer the IR computes from static shapes: a size, a
/// rank or an element count of a statically shaped tensor, an integer
/// module attribute (inside a ModuleIntegersScope), or integer arithmetic
/// on such values and constants (`h.size(1) // 2`).
std::optional<int64_t> getStaticInt(Value value);

/// The value of a float module attribute the IR reads: the one the function
/// assumes (memopt.assumes: dropout's `p`, recorded by the import), else the
/// model's (inside a ModuleIntegersScope).
std::optional<double> getStaticFloat(Value value);

struct TorchScriptSource;

/// While alive, an integer module attribute the IR reads (`memopt.get_attr`)
/// has its value in `source`'s model (none when `source` is null).
class ModuleIntegersScope {
public:
  explicit ModuleIntegersScope(const TorchScriptSource *source);
  ~ModuleIntegersScope();
  ModuleIntegersScope(const ModuleIntegersScope &) = delete;
  ModuleIntegersScope &operator=(const ModuleIntegersScope &) = delete;

private:
  const TorchScriptSource *saved;
};

/// Whether the probe can make `operand`'s value: a statically shaped
/// tensor of a LibTorch dtype (`floatingOnly`: floating or complex, whose
/// made-up values cannot index anything), an integer computed from static
/// shapes, or a list prim::ListConstruct builds of either.
bool canMakeOperand(Value operand, bool floatingOnly);

/// Writes how the probe lays `value` out when it is a view in the IR (the
/// view ops from its root, their arguments and integer operands, the
/// root's type); nothing for a value it makes contiguous. Part of what
/// identifies a call: the same types as a slice or as a whole tensor keep
/// different bytes.
void describeLayout(Value value, llvm::raw_ostream &os);

/// Runs `graph`, whose inputs after `leading` stand for the values
/// `inputs` (each an operand of `op` or an element of a list operand, one
/// that canMakeOperand accepts), forward and backward, twice: the incoming
/// gradient freed, then held. Inputs in `grads` require grad, as
/// non-leaves; an input that is a view in the IR is made as that view of a
/// bigger tensor (a slice is saved with all of its storage, and strided
/// operands make some kernels copy). std::nullopt when the graph raises;
/// with `opAlone`, also when a result is a view of an input or its shape
/// differs from the IR's (a run at made-up values does not describe such
/// an op).
std::optional<GraphRunMarks>
measureGraphRun(const std::shared_ptr<torch::jit::Graph> &graph, TorchOp op,
                const std::vector<Value> &inputs,
                const llvm::DenseSet<Value> &grads,
                const std::vector<c10::IValue> &leading, bool opAlone);

/// Records `marks` on `op`: `measured_saves`, and a `high_water` with one
/// backward mark whichever operands get gradients (the run's backward makes
/// them all at once).
void setGraphRunMarks(TorchOp op, const GraphRunMarks &marks);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_PROBE_GRAPHRUN_H
