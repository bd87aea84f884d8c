//===- PackedInput.h - Convolution / linear with a packed input -*- C++ -*-===//
//
// In spiking networks the input of a convolution or linear layer is often a
// binary (0/1) spike tensor stored as float. Autograd keeps that input for
// the weight gradient at full width. These functions compute exactly what
// at::conv1d/2d/3d and at::linear compute, keep the input for backward packed
// ("bit": 1 bit per value, "bool": 1 byte per value) instead, and in backward
// unpack it and call the ATen ops eager autograd calls, so that the input,
// weight and bias gradients equal eager's bit for bit. Nothing is
// recomputed. They are what the memopt::conv_packed and memopt::linear_packed
// operators call.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_PACKEDINPUT_H
#define MEMOPT_RUNTIME_PACKEDINPUT_H

#include "memopt/Runtime/Compression.h"

#include <ATen/ATen.h>

namespace memopt::runtime {

/// at::conv1d / conv2d / conv3d (chosen by the weight's rank: 3, 4 or 5) with
/// int[] padding; `input` may be batched or unbatched. `kind` is Bit or Bool.
/// When grad mode is on and the weight requires grad, `input` is saved packed
/// (checked to be binary first, see setPackedInputCheck).
at::Tensor convPacked(const at::Tensor &input, const at::Tensor &weight,
                      const c10::optional<at::Tensor> &bias,
                      at::IntArrayRef stride, at::IntArrayRef padding,
                      at::IntArrayRef dilation, int64_t groups,
                      CompressionKind kind);

/// at::linear, with `input` saved packed as in convPacked.
at::Tensor linearPacked(const at::Tensor &input, const at::Tensor &weight,
                        const c10::optional<at::Tensor> &bias,
                        CompressionKind kind);

/// Whether convPacked / linearPacked verify that an input they pack holds
/// only 0 and 1 (process-wide, default on). With the check off a non-binary
/// input is packed as 1 wherever it is non-zero and its weight gradient is
/// silently wrong. On CPU the check is fused into the packing pass; on CUDA
/// it costs one extra kernel and a device synchronization per packed input.
void setPackedInputCheck(bool enabled);
bool packedInputCheckEnabled();

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_PACKEDINPUT_H
