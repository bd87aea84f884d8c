//===- PackedInputOps.h - conv_packed / linear_packed kernels -*- C++ -*-===//
//
// Private to the runtime. Each op has a forward kernel (CPU, and CUDA with
// MEMOPT_WITH_CUDA: the plain ATen op, nothing saved), an Autograd kernel
// (an autograd::Function that saves the input packed and calls the forward
// kernel below autograd), and Autocast kernels (cast like the ATen op's
// autocast kernel, then call the op again). PackedInputOps.cpp registers
// them.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_PACKEDINPUTOPS_H
#define MEMOPT_LIB_RUNTIME_PACKEDINPUTOPS_H

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/string_view.h>

namespace memopt::runtime::packedops {

using ConvSignature = at::Tensor(const at::Tensor &, const at::Tensor &,
                                 const c10::optional<at::Tensor> &,
                                 at::IntArrayRef, at::IntArrayRef,
                                 at::IntArrayRef, int64_t, c10::string_view);
using LinearSignature = at::Tensor(const at::Tensor &, const at::Tensor &,
                                   const c10::optional<at::Tensor> &,
                                   c10::string_view);

/// memopt::conv_packed / memopt::linear_packed through the dispatcher.
const c10::TypedOperatorHandle<ConvSignature> &convPackedHandle();
const c10::TypedOperatorHandle<LinearSignature> &linearPackedHandle();
/// memopt::linear_weight_rows (same signature: the last string is how the
/// input is saved, "keep", "bit" or "bool").
const c10::TypedOperatorHandle<LinearSignature> &linearWeightRowsHandle();

/// Forward kernels: at::convNd / at::linear (the kind is only validated).
at::Tensor convForward(const at::Tensor &input, const at::Tensor &weight,
                       const c10::optional<at::Tensor> &bias,
                       at::IntArrayRef stride, at::IntArrayRef padding,
                       at::IntArrayRef dilation, int64_t groups,
                       c10::string_view kind);
at::Tensor linearForward(const at::Tensor &input, const at::Tensor &weight,
                         const c10::optional<at::Tensor> &bias,
                         c10::string_view kind);
at::Tensor linearWeightRowsForward(const at::Tensor &input,
                                   const at::Tensor &weight,
                                   const c10::optional<at::Tensor> &bias,
                                   c10::string_view savedInput);

/// Autograd kernels.
at::Tensor convAutograd(const at::Tensor &input, const at::Tensor &weight,
                        const c10::optional<at::Tensor> &bias,
                        at::IntArrayRef stride, at::IntArrayRef padding,
                        at::IntArrayRef dilation, int64_t groups,
                        c10::string_view kind);
at::Tensor linearAutograd(const at::Tensor &input, const at::Tensor &weight,
                          const c10::optional<at::Tensor> &bias,
                          c10::string_view kind);
at::Tensor linearWeightRowsAutograd(const at::Tensor &input,
                                    const at::Tensor &weight,
                                    const c10::optional<at::Tensor> &bias,
                                    c10::string_view savedInput);

} // namespace memopt::runtime::packedops

#endif // MEMOPT_LIB_RUNTIME_PACKEDINPUTOPS_H
