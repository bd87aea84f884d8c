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

#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <c10/core/Stream.h>
#include <torch/version.h>

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

} // namespace memopt::runtime::compat

#endif // MEMOPT_RUNTIME_TORCHCOMPAT_H
