//===- ForwardCheck.h - Run a compiled module once --------------*- C++ -*-===//
//
// A compiled module that fails on its first call is the worst bug memopt can
// ship, and saving and reloading it proves only that its code compiles: a
// region graph the runtime cannot parse, or a plan whose ops do not fit
// together, shows when it runs. So the exporter runs each compiled method
// once on inputs of its signature's shapes (random floats and zero integers,
// as the importer's examples) and compares its outputs, bit for bit, with
// the source model's forward on the same inputs and random seed. Only code
// that links LibTorch includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_FORWARDCHECK_H
#define MEMOPT_CONVERSION_FORWARDCHECK_H

#include <c10/core/ScalarType.h>
#include <torch/csrc/jit/api/module.h>

#include <string>
#include <vector>

namespace mlir::memopt {

/// One tensor input of a call: its static sizes and dtype.
struct ForwardCheckInput {
  std::vector<int64_t> sizes;
  c10::ScalarType dtype = c10::kFloat;
};

/// One method of the compiled module, called with one signature's inputs.
struct ForwardCheckCall {
  /// How messages name it: "inputs 2x3x64x64:f32", "signature ...", "the
  /// generic fallback on signature ...".
  std::string label;
  /// The compiled module's method ("forward", "forward_generic").
  std::string method = "forward";
  std::vector<ForwardCheckInput> inputs;
};

struct ForwardCheckOutcome {
  /// Empty when every call ran (and matched where compared); otherwise the
  /// one-line reason, naming the call (and the region, where the runtime's
  /// message names one).
  std::string error;
  /// Calls that ran and matched the source's outputs.
  unsigned compared = 0;
  /// Calls that ran but could not be compared, each with why ("the source
  /// model's forward fails on these inputs: ...").
  std::vector<std::string> notCompared;
};

/// Runs `calls` on `compiled` and the source's `forward`, each from the same
/// state: every buffer the forward writes (batch norm's running statistics)
/// is put back after each run. Never throws.
ForwardCheckOutcome
checkCompiledForward(const torch::jit::Module &compiled,
                     const torch::jit::Module &source,
                     const std::vector<ForwardCheckCall> &calls);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_FORWARDCHECK_H
