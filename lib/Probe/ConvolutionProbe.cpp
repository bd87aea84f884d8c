//===- ConvolutionProbe.cpp - run a convolution, count its memory ---------===//
//
// Which kernel a CPU convolution takes, and which buffers that kernel
// allocates, depends on the PyTorch release, its oneDNN, the instruction
// set oneDNN picks on this CPU (ONEDNN_MAX_CPU_ISA) and the thread count.
// Rather than a formula per combination, the probe runs the convolution the
// way training does (the same ATen entry point forward; autograd for the
// backward) and reads the counting allocator's high-water mark: the number
// the tests and benchmarks measure.
//
//===----------------------------------------------------------------------===//
#include "ConvolutionCall.h"
#include "ProbeSupport.h"

#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

using namespace ::memopt::probe;

/// The ATen entry point TorchScript calls for this form.
static at::Tensor run(const ConvolutionCall &call, const at::Tensor &input,
                      const at::Tensor &weight,
                      const c10::optional<at::Tensor> &bias) {
  size_t spatial = call.weight.size() - 2;
  switch (call.form) {
  case ConvolutionForm::Convolution: {
    // conv*d take `padding` as integers or as "same" / "valid".
    auto convolve = [&](auto padding) {
      if (spatial == 1)
        return at::conv1d(input, weight, bias, call.stride, padding,
                          call.dilation, call.groups);
      if (spatial == 2)
        return at::conv2d(input, weight, bias, call.stride, padding,
                          call.dilation, call.groups);
      return at::conv3d(input, weight, bias, call.stride, padding,
                        call.dilation, call.groups);
    };
    if (call.paddingMode.empty())
      return convolve(at::IntArrayRef(call.padding));
    return convolve(c10::string_view(call.paddingMode));
  }
  case ConvolutionForm::TransposedConvolution:
    if (spatial == 1)
      return at::conv_transpose1d(input, weight, bias, call.stride,
                                  call.padding, call.outputPadding, call.groups,
                                  call.dilation);
    if (spatial == 2)
      return at::conv_transpose2d(input, weight, bias, call.stride,
                                  call.padding, call.outputPadding, call.groups,
                                  call.dilation);
    return at::conv_transpose3d(input, weight, bias, call.stride, call.padding,
                                call.outputPadding, call.groups, call.dilation);
  case ConvolutionForm::General:
    return at::convolution(input, weight, bias, call.stride, call.padding,
                           call.dilation, call.transposed, call.outputPadding,
                           call.groups);
  }
  TORCH_CHECK(false, "memopt: unknown convolution form");
}

namespace memopt::probe {
KernelMarks measureConvolution(const ConvolutionCall &call, bool forward,
                               unsigned masks) {
  ::memopt::runtime::enableMemoryStats();
  ThreadCountScope threads(call.threads);
  at::TensorOptions options =
      at::TensorOptions().dtype(getScalarType(call.element));
  // Values do not choose kernels; ones keep every kernel on its normal path
  // (no denormals, no zero shortcuts).
  at::Tensor input = at::ones(call.input, options);
  if (call.channelsLastInput)
    input = input.contiguous(call.input.size() == 5
                                 ? at::MemoryFormat::ChannelsLast3d
                                 : at::MemoryFormat::ChannelsLast);
  at::Tensor weight = at::ones(call.weight, options);
  c10::optional<at::Tensor> bias;
  if (call.bias) {
    bool transposed =
        call.transposed || call.form == ConvolutionForm::TransposedConvolution;
    int64_t outChannels =
        transposed ? call.weight[1] * call.groups : call.weight[0];
    bias = at::ones({outChannels}, options);
  }

  KernelMarks result;
  if (forward) {
    c10::AutoGradMode noGrad(false);
    at::Tensor output;
    result.forward =
        measurePeak([&] { output = run(call, input, weight, bias); });
  }
  for (unsigned mask = 1; mask < result.backward.size(); ++mask) {
    if (!(masks & (1u << mask)))
      continue;
    bool inputGrad = mask & 1, weightGrad = mask & 2;
    input.requires_grad_(inputGrad);
    weight.requires_grad_(weightGrad);
    if (bias)
      bias->requires_grad_(weightGrad);
    std::vector<at::Tensor> wrt;
    if (inputGrad)
      wrt.push_back(input);
    if (weightGrad) {
      wrt.push_back(weight);
      if (bias)
        wrt.push_back(*bias);
    }
    at::Tensor output = run(call, input, weight, bias);
    at::Tensor outputGrad = at::ones_like(output);
    std::vector<at::Tensor> grads;
    result.backward[mask] = measurePeak(
        [&] { grads = torch::autograd::grad({output}, wrt, {outputGrad}); });
  }
  return result;
}
} // namespace memopt::probe
