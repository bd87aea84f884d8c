//===- ConvolutionCall.h - one convolution as the probe runs it -*- C++ -*-===//
//
// What the kernel probe needs to run a convolution exactly as the model
// calls it: the ATen operator, static shapes and constant arguments. Plain
// C++ (neither MLIR nor LibTorch), so the side that reads the IR and the
// side that runs the kernels share it without seeing each other's headers.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_PROBE_CONVOLUTIONCALL_H
#define MEMOPT_LIB_PROBE_CONVOLUTIONCALL_H

#include "KernelMarks.h"

#include <cstdint>
#include <string>
#include <vector>

namespace memopt::probe {

enum class ConvolutionForm {
  Convolution,           // conv1d / conv2d / conv3d
  TransposedConvolution, // conv_transpose1d / 2d / 3d
  General,               // convolution / _convolution
};

struct ConvolutionCall {
  ConvolutionForm form = ConvolutionForm::Convolution;
  ElementKind element = ElementKind::F32;
  std::vector<int64_t> input, weight;
  bool bias = false;
  std::vector<int64_t> stride, padding, dilation, outputPadding;
  std::string paddingMode; // conv*d's "same" / "valid"; empty: `padding`
  bool transposed = false;
  int64_t groups = 1;
  bool channelsLastInput = false; // the input has channels-last strides
  int threads = 1;                // intra-op threads the kernels run with

  /// Everything above, as a key for reusing a measurement.
  std::string key() const;
};

/// Runs the call's forward once (unless `forward` is false), and its
/// backward for each gradient mask m whose bit (1 << m) is set in `masks`,
/// under the counting CPU allocator; what is not run stays -1. Throws what
/// PyTorch throws.
KernelMarks measureConvolution(const ConvolutionCall &call, bool forward,
                               unsigned masks);

} // namespace memopt::probe

#endif // MEMOPT_LIB_PROBE_CONVOLUTIONCALL_H
