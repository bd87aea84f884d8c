//===- TorchCompat.h - The one place that knows LibTorch versions -*- C++
//-*-===//
//
// The runtime builds against PyTorch 1.13 (Debian, CI) and 2.x (users' GPU
// machines, 2.11 at the time of writing). Every API difference the runtime
// touches is absorbed here, so no other file tests TORCH_VERSION_*.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_TORCHCOMPAT_H
#define MEMOPT_RUNTIME_TORCHCOMPAT_H

#include <ATen/Tensor.h>
#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <utility>

#define MEMOPT_TORCH_VERSION_AT_LEAST(MAJOR, MINOR)                            \
  (TORCH_VERSION_MAJOR > (MAJOR) ||                                            \
   (TORCH_VERSION_MAJOR == (MAJOR) && TORCH_VERSION_MINOR >= (MINOR)))

/// Declares the entry points of a c10::Allocator subclass whose logic lives
/// in `DataPtr allocateBytes(size_t) const` and
/// `void copyBytes(void *, const void *, size_t) const`.
///
/// - `allocate` is `const` in PyTorch 1.x and lost the `const` in 2.x.
///   Declaring both overloads (without `override`) makes exactly one of them
///   the override on any version; the other is a never-called overload.
/// - `copy_data` became pure virtual in PyTorch 2.3; on older versions the
///   declaration is a harmless extra member.
#define MEMOPT_ALLOCATOR_ENTRY_POINTS                                          \
  c10::DataPtr allocate(size_t n) const { return allocateBytes(n); }           \
  c10::DataPtr allocate(size_t n) { return allocateBytes(n); }                 \
  void copy_data(void *dest, const void *src, std::size_t count) const {       \
    copyBytes(dest, src, count);                                               \
  }

namespace memopt::runtime::compat {

/// Address a DataPtr points at (its `get()` became const-qualified data in
/// newer versions; the runtime needs the writable address it allocated).
inline void *dataPtrAddress(const c10::DataPtr &ptr) {
  return const_cast<void *>(static_cast<const void *>(ptr.get()));
}

/// Autocast state of one device type, saved in forward and replayed around
/// the recompute so casts match the forward's exactly.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kFloat;
};

inline AutocastState getAutocastState(c10::DeviceType type) {
  AutocastState s;
#if MEMOPT_TORCH_VERSION_AT_LEAST(2, 4)
  s.enabled = at::autocast::is_autocast_enabled(type);
  s.dtype = at::autocast::get_autocast_dtype(type);
#else
  if (type == c10::DeviceType::CUDA) {
    s.enabled = at::autocast::is_enabled();
    s.dtype = at::autocast::get_autocast_gpu_dtype();
  } else {
    s.enabled = at::autocast::is_cpu_enabled();
    s.dtype = at::autocast::get_autocast_cpu_dtype();
  }
#endif
  return s;
}

inline void setAutocastState(c10::DeviceType type, const AutocastState &s) {
#if MEMOPT_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(type, s.enabled);
  at::autocast::set_autocast_dtype(type, s.dtype);
#else
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(s.enabled);
    at::autocast::set_autocast_gpu_dtype(s.dtype);
  } else {
    at::autocast::set_cpu_enabled(s.enabled);
    at::autocast::set_autocast_cpu_dtype(s.dtype);
  }
#endif
}

namespace detail {
template <typename S>
auto nativeHandle(const S &s, int) -> decltype(s.native_handle()) {
  return s.native_handle();
}
template <typename S> void *nativeHandle(const S &, long) { return nullptr; }
} // namespace detail

/// The backend's native stream (a cudaStream_t for CUDA) where c10::Stream
/// exposes it (PyTorch 2.x); nullptr on versions without
/// `Stream::native_handle`, where callers must synchronize instead.
inline void *nativeStreamHandle(const c10::Stream &stream) {
  return detail::nativeHandle(stream, 0);
}

/// Which ATen ops `at::linear(input, weight, bias)` records for autograd on
/// this LibTorch version (memopt::linear_packed reproduces their backward
/// formulas; see lib/Runtime/PackedLinear.cpp).
///
/// - `Addmm`: `at::addmm(bias, input2d, weight.t())`, where `input2d` is the
///   2-D input itself or the `[-1, in]` view of the contiguous N-D input (or
///   of `input.contiguous()` when TORCH_LINEAR_FLATTEN_3D=1 forces it).
/// - `Matmul`: `at::matmul(input, weight.t())`, then `add_(bias)` if any.
/// Taken from ATen's Linear.cpp of each release; only 1.13 is tested here.
enum class LinearDecomposition { Addmm, Matmul };

namespace detail {
inline bool linearFlatten3dForced() {
  static const bool forced = [] {
    const char *env = std::getenv("TORCH_LINEAR_FLATTEN_3D");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return forced;
}
} // namespace detail

inline LinearDecomposition linearDecomposition(const at::Tensor &input,
                                               const at::Tensor &weight,
                                               const at::Tensor &bias) {
  const int64_t dim = input.dim();
  if (!bias.defined())
    return LinearDecomposition::Matmul;
  if (dim == 2)
    return LinearDecomposition::Addmm;
#if MEMOPT_TORCH_VERSION_AT_LEAST(2, 10)
  // "is_bias_likely_fusable" (pytorch#166071).
  const bool fusable =
      (bias.dim() == 1 || bias.squeeze().dim() == 1) && bias.is_contiguous();
  if (fusable && (input.is_contiguous() || detail::linearFlatten3dForced()))
    return LinearDecomposition::Addmm;
#elif MEMOPT_TORCH_VERSION_AT_LEAST(2, 1)
  // Contiguous N-D inputs flatten (pytorch#106911); TORCH_LINEAR_FLATTEN_3D
  // (pytorch#96761) forces it for 3-D ones.
  if (input.is_contiguous() &&
      (dim == 3 || (input.layout() == c10::kStrided &&
                    weight.layout() == c10::kStrided && bias.dim() == 1)))
    return LinearDecomposition::Addmm;
  if (dim == 3 && detail::linearFlatten3dForced())
    return LinearDecomposition::Addmm;
#else
  (void)weight;
  if (dim == 3 && input.is_contiguous())
    return LinearDecomposition::Addmm;
#endif
  return LinearDecomposition::Matmul;
}

/// Whether `at::matmul(t1, t2)` with a t1 of 3 or more dimensions and a 2-D
/// t2 folds t1 into a matrix (`t1.reshape({-1, k}).mm(t2)`) rather than
/// expanding both to a `bmm` (ATen's `should_fold`).
inline bool matmulFoldsBatch(const at::Tensor &t1, const at::Tensor &t2) {
#if MEMOPT_TORCH_VERSION_AT_LEAST(2, 0)
  if (t2.requires_grad())
    return true; // avoids a [b, n, k] gradient in the backward of the bmm
  if (t1.numel() == 0)
    return true;
  const auto sizes = t1.sizes();
  const auto strides = t1.strides();
  for (int64_t i = 0; i + 2 < t1.dim(); ++i)
    if (strides[i] != strides[i + 1] * sizes[i + 1])
      return false;
  return true;
#else
  (void)t2;
  const auto sizes = t1.sizes();
  const auto strides = t1.strides();
  // A [b, m, k] tensor whose last two dims are transposed goes to bmm.
  return !(t1.dim() == 3 && strides.back() != 1 &&
           strides.front() == sizes[1] * sizes[2]);
#endif
}

/// Whether anything observes what reaches the leaf `leaf` through its grad
/// accumulator `accumulator`: node hooks, and tensor hooks (kept on the
/// variable in 1.x, on the accumulator in 2.x, plus 2.x's post-accumulate
/// hooks).
inline bool leafHasGradientHooks(const at::Tensor &leaf,
                                 torch::autograd::Node &accumulator) {
  if (!accumulator.pre_hooks().empty() || !accumulator.post_hooks().empty())
    return true;
#if MEMOPT_TORCH_VERSION_AT_LEAST(2, 0)
  return !accumulator.tensor_pre_hooks().empty() ||
         !accumulator.retains_grad_hooks().empty() ||
         torch::autograd::impl::post_acc_grad_hooks(leaf) != nullptr;
#else
  return !torch::autograd::impl::hooks(leaf).empty();
#endif
}

} // namespace memopt::runtime::compat

#endif // MEMOPT_RUNTIME_TORCHCOMPAT_H
