//===- Checkpoint.h - Checkpoint regions --------------------------*- C++
//-*-===//
//
// A checkpoint region runs a TorchScript graph without keeping its internals
// for backward. Only its inputs are saved, each by a policy (keep, compress,
// offload); backward restores them, replays the forward's RNG and autocast
// state, reruns the graph with grad and returns the input gradients.
// This is what the memopt::checkpoint operator calls.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_CHECKPOINT_H
#define MEMOPT_RUNTIME_CHECKPOINT_H

#include "memopt/Runtime/Compression.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

namespace memopt::runtime {

enum class SaveKind { Keep, Compress, OffloadHost, OffloadUnified };

/// How one region input is saved for backward. Text forms: "keep",
/// "compress:<bit|bool|uint8|sparse>[:check]", "offload:host[@<region>]",
/// "offload:unified[@<region>]".
struct SavePolicy {
  SaveKind kind = SaveKind::Keep;
  CompressionKind compression = CompressionKind::Bit;
  bool check = false; // compress: report non-representable values
  /// offload: the region whose backward prefetches the input (a compiled
  /// schedule); empty: this region's, plus the configured prefetch depth.
  std::string prefetchAt;

  /// Throws a c10::Error that quotes `text` and lists the accepted forms.
  static SavePolicy parse(const std::string &text);
  std::string str() const;
};

/// Runs region `name` given as TorchScript IR text `graph`, whose inputs are
/// the tensors `inputs` then the int/float/bool `scalars`, and whose outputs
/// are tensors (or one tuple of tensors). `policies` has one entry per tensor
/// input, or is empty for "keep" everywhere. When grad mode is on and an input
/// requires grad, the result is differentiable through a checkpoint.
std::vector<at::Tensor> checkpoint(const std::string &graph,
                                   at::TensorList inputs,
                                   c10::ArrayRef<c10::Scalar> scalars,
                                   const std::vector<std::string> &policies,
                                   const std::string &name);

/// The same, with the scalar graph inputs taken in graph order from `ints`
/// (int and bool inputs) and `floats` (float inputs).
std::vector<at::Tensor>
checkpoint(const std::string &graph, at::TensorList inputs,
           c10::ArrayRef<int64_t> ints, c10::ArrayRef<double> floats,
           const std::vector<std::string> &policies, const std::string &name);

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_CHECKPOINT_H
