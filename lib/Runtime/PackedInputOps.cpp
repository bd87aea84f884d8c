//===- PackedInputOps.cpp - memopt::conv_packed / linear_packed -----------===//
//
//   memopt::conv_packed(Tensor input, Tensor weight, Tensor? bias,
//                       int[] stride, int[] padding, int[] dilation,
//                       int groups, str kind) -> Tensor
//       aten::conv1d / conv2d / conv3d (by the weight's rank) whose input is
//       kept for backward packed by `kind` ("bit" or "bool").
//   memopt::linear_packed(Tensor input, Tensor weight, Tensor? bias,
//                         str kind) -> Tensor
//       aten::linear, likewise.
//   memopt::linear_weight_rows(Tensor input, Tensor weight, Tensor? bias,
//                              str saved_input) -> Tensor
//       aten::linear whose input is kept as is ("keep") or packed, and whose
//       weight gradient goes into an allocated `.grad` a block of rows at a
//       time (PackedLinear.cpp).
//   memopt::set_packed_input_check(bool enabled) -> ()
//   memopt::packed_input_check_enabled() -> bool
//       Whether packed inputs are verified to be binary (default on).
//
// Kernels: CPU and (with MEMOPT_WITH_CUDA) CUDA compute the plain ATen op;
// Autograd wraps it in an autograd::Function that packs the input;
// AutocastCPU / AutocastCUDA cast the arguments as ATen's autocast does for
// conv*d and linear (to the autocast dtype) and call the op again.
//
//===----------------------------------------------------------------------===//

#include "PackedInputOps.h"
#include "memopt/Runtime/OpSchemas.h"

#include "memopt/Runtime/PackedInput.h"
#include "memopt/Runtime/TorchCompat.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

namespace memopt::runtime::packedops {

const c10::TypedOperatorHandle<ConvSignature> &convPackedHandle() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("memopt::conv_packed", "")
                                 .typed<ConvSignature>();
  return handle;
}

const c10::TypedOperatorHandle<LinearSignature> &linearPackedHandle() {
  static const auto handle = c10::Dispatcher::singleton()
                                 .findSchemaOrThrow("memopt::linear_packed", "")
                                 .typed<LinearSignature>();
  return handle;
}

const c10::TypedOperatorHandle<LinearSignature> &linearWeightRowsHandle() {
  static const auto handle =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("memopt::linear_weight_rows", "")
          .typed<LinearSignature>();
  return handle;
}

namespace {

/// ATen's lower-precision autocast policy: floating-point arguments on the
/// autocast device become the autocast dtype (weights through the autocast
/// cache, as for aten::conv2d).
template <c10::DeviceType Device> struct Autocast {
  static constexpr c10::DispatchKey key() {
    return Device == c10::DeviceType::CUDA ? c10::DispatchKey::AutocastCUDA
                                           : c10::DispatchKey::AutocastCPU;
  }
  static at::ScalarType dtype() {
    return compat::getAutocastState(Device).dtype;
  }
  static at::Tensor cast(const at::Tensor &t) {
    return at::autocast::cached_cast(dtype(), t, Device);
  }
  static c10::optional<at::Tensor> cast(const c10::optional<at::Tensor> &t) {
    if (!t.has_value())
      return c10::nullopt;
    return cast(*t);
  }

  static at::Tensor conv(const at::Tensor &input, const at::Tensor &weight,
                         const c10::optional<at::Tensor> &bias,
                         at::IntArrayRef stride, at::IntArrayRef padding,
                         at::IntArrayRef dilation, int64_t groups,
                         c10::string_view kind) {
    c10::impl::ExcludeDispatchKeyGuard noAutocast(key());
    return convPackedHandle().call(cast(input), cast(weight), cast(bias),
                                   stride, padding, dilation, groups, kind);
  }

  static at::Tensor linear(const at::Tensor &input, const at::Tensor &weight,
                           const c10::optional<at::Tensor> &bias,
                           c10::string_view kind) {
    c10::impl::ExcludeDispatchKeyGuard noAutocast(key());
    return linearPackedHandle().call(cast(input), cast(weight), cast(bias),
                                     kind);
  }

  static at::Tensor linearWeightRows(const at::Tensor &input,
                                     const at::Tensor &weight,
                                     const c10::optional<at::Tensor> &bias,
                                     c10::string_view savedInput) {
    c10::impl::ExcludeDispatchKeyGuard noAutocast(key());
    return linearWeightRowsHandle().call(cast(input), cast(weight), cast(bias),
                                         savedInput);
  }
};

} // namespace
} // namespace memopt::runtime::packedops

TORCH_LIBRARY_FRAGMENT(memopt, m) {
  m.def(memopt::schemas::kConvPacked);
  m.def(memopt::schemas::kLinearPacked);
  m.def(memopt::schemas::kLinearWeightRows);
  // No tensor argument: catch-all kernels.
  m.def("set_packed_input_check(bool enabled) -> ()",
        &memopt::runtime::setPackedInputCheck);
  m.def("packed_input_check_enabled() -> bool",
        &memopt::runtime::packedInputCheckEnabled);
}

TORCH_LIBRARY_IMPL(memopt, CPU, m) {
  m.impl("conv_packed", &memopt::runtime::packedops::convForward);
  m.impl("linear_packed", &memopt::runtime::packedops::linearForward);
  m.impl("linear_weight_rows",
         &memopt::runtime::packedops::linearWeightRowsForward);
}

TORCH_LIBRARY_IMPL(memopt, Autograd, m) {
  m.impl("conv_packed", &memopt::runtime::packedops::convAutograd);
  m.impl("linear_packed", &memopt::runtime::packedops::linearAutograd);
  m.impl("linear_weight_rows",
         &memopt::runtime::packedops::linearWeightRowsAutograd);
}

TORCH_LIBRARY_IMPL(memopt, AutocastCPU, m) {
  using CPUCast = memopt::runtime::packedops::Autocast<c10::DeviceType::CPU>;
  m.impl("conv_packed", &CPUCast::conv);
  m.impl("linear_packed", &CPUCast::linear);
  m.impl("linear_weight_rows", &CPUCast::linearWeightRows);
}

#ifdef MEMOPT_WITH_CUDA
TORCH_LIBRARY_IMPL(memopt, CUDA, m) {
  m.impl("conv_packed", &memopt::runtime::packedops::convForward);
  m.impl("linear_packed", &memopt::runtime::packedops::linearForward);
  m.impl("linear_weight_rows",
         &memopt::runtime::packedops::linearWeightRowsForward);
}

TORCH_LIBRARY_IMPL(memopt, AutocastCUDA, m) {
  using CUDACast = memopt::runtime::packedops::Autocast<c10::DeviceType::CUDA>;
  m.impl("conv_packed", &CUDACast::conv);
  m.impl("linear_packed", &CUDACast::linear);
  m.impl("linear_weight_rows", &CUDACast::linearWeightRows);
}
#endif
