//===- CheckpointRegion.h - A parsed, validated region graph ----*- C++ -*-===//
//
// Private to the runtime. A Region is the TorchScript graph of one checkpoint
// region, parsed once per distinct IR text, checked for side effects the
// recompute would repeat, analysed for the inputs it writes in place and for
// random number draws, and compiled for the JIT interpreter.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_CHECKPOINTREGION_H
#define MEMOPT_LIB_RUNTIME_CHECKPOINTREGION_H

#include "memopt/Runtime/Checkpoint.h"

#include <ATen/ATen.h>
#include <torch/csrc/jit/ir/ir.h>

#include <memory>
#include <string>
#include <vector>

namespace torch::jit {
struct Code;
} // namespace torch::jit

namespace memopt::runtime {

/// What a region graph does that the checkpoint must account for.
struct RegionEffects {
  /// Per tensor input: some node writes it in place (possibly via a view).
  std::vector<bool> writtenInputs;
  /// Some node draws random numbers (dropout, rand, bernoulli, ...).
  bool nondeterministic = false;
};

/// Throws a c10::Error naming `regionName` if the graph has a side effect
/// other than raising an exception or warning, or a node no operator matches.
void checkRegionSideEffects(const torch::jit::Graph &graph,
                            const std::string &regionName);

/// Alias analysis over the graph: which of the first `numTensorInputs`
/// inputs are written in place, and whether any node is nondeterministic.
RegionEffects analyzeRegionEffects(const torch::jit::Graph &graph,
                                   size_t numTensorInputs);

class Region {
public:
  /// Returns the cached Region for `ir`, parsing and validating it on first
  /// use. Errors name `regionName`.
  static std::shared_ptr<const Region> get(const std::string &ir,
                                           const std::string &regionName);

  Region(std::shared_ptr<torch::jit::Graph> graph,
         const std::string &regionName);
  ~Region();

  size_t numTensorInputs() const { return numTensorInputs_; }
  size_t numScalarInputs() const { return scalarKinds_.size(); }
  /// Int, Float, Bool or Number, per scalar input.
  const std::vector<c10::TypeKind> &scalarKinds() const { return scalarKinds_; }
  const RegionEffects &effects() const { return effects_; }

  /// Throws unless the call supplies what the graph takes.
  void checkCall(at::TensorList tensors, c10::ArrayRef<c10::Scalar> scalars,
                 const std::string &regionName) const;

  /// Runs the graph with the interpreter in the current grad mode.
  std::vector<at::Tensor> run(at::TensorList tensors,
                              c10::ArrayRef<c10::Scalar> scalars) const;

private:
  std::shared_ptr<torch::jit::Graph> graph_;
  std::unique_ptr<torch::jit::Code> code_;
  size_t numTensorInputs_ = 0;
  std::vector<c10::TypeKind> scalarKinds_;
  bool tupleOutput_ = false; // one Tuple[Tensor, ...] output, unpacked
  RegionEffects effects_;
};

/// Runs a checkpointed call of `region` (CheckpointFunction.cpp): directly
/// when nothing needs grad, else through the checkpoint's autograd function.
std::vector<at::Tensor> runCheckpoint(std::shared_ptr<const Region> region,
                                      at::TensorList inputs,
                                      c10::ArrayRef<c10::Scalar> scalars,
                                      const std::vector<SavePolicy> &policies,
                                      const std::string &name);

} // namespace memopt::runtime

#endif // MEMOPT_LIB_RUNTIME_CHECKPOINTREGION_H
