//===- CompressionCUDA.cpp - CUDA backend of the compression API ----------===//
//
// Calls the extern "C" launchers of cuda/CompressionKernels.cu on the current
// stream. Only checks and the sparse payload size need the host to wait.
// Without MEMOPT_WITH_CUDA every entry point reports that CUDA is missing.
//
//===----------------------------------------------------------------------===//

#include "CompressionBackends.h"

#ifdef MEMOPT_WITH_CUDA
#include "memopt/Runtime/CompressionLaunchers.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <type_traits>
#endif

namespace memopt::runtime::detail {

#ifdef MEMOPT_WITH_CUDA
namespace {

/// The launchers of one element type; `Stored` is the raw pointer type.
template <class S> struct Launchers {
  using Stored = S;
  int (*bitPack)(const S *, uint8_t *, int64_t, void *);
  int (*bitUnpack)(const uint8_t *, S *, int64_t, void *);
  int (*boolPack)(const S *, uint8_t *, int64_t, void *);
  int (*boolUnpack)(const uint8_t *, S *, int64_t, void *);
  int (*uint8Pack)(const S *, uint8_t *, int64_t, void *);
  int (*uint8Unpack)(const uint8_t *, S *, int64_t, void *);
  int (*findNonBinary)(const S *, int64_t, int64_t *, void *);
  int (*findNonUInt8)(const S *, int64_t, int64_t *, void *);
  int (*sparseCount)(const S *, int64_t, int64_t *, int64_t *, void *);
  int (*sparseWrite)(const S *, int64_t, const int64_t *, void *, int, void *);
  int (*sparseScatter)(const void *, int, int64_t, S *, int64_t, void *);
};

#define MEMOPT_LAUNCHERS(S, SUFFIX)                                            \
  Launchers<S> {                                                               \
    &memopt_launch_bit_pack_##SUFFIX, &memopt_launch_bit_unpack_##SUFFIX,      \
        &memopt_launch_bool_pack_##SUFFIX,                                     \
        &memopt_launch_bool_unpack_##SUFFIX,                                   \
        &memopt_launch_uint8_pack_##SUFFIX,                                    \
        &memopt_launch_uint8_unpack_##SUFFIX,                                  \
        &memopt_launch_find_nonbinary_##SUFFIX,                                \
        &memopt_launch_find_non_uint8_##SUFFIX,                                \
        &memopt_launch_sparse_count_##SUFFIX,                                  \
        &memopt_launch_sparse_write_##SUFFIX,                                  \
        &memopt_launch_sparse_scatter_##SUFFIX                                 \
  }

template <class Fn> void withLaunchers(at::ScalarType dtype, Fn &&fn) {
  static const auto f32 = MEMOPT_LAUNCHERS(float, f32);
  static const auto f16 = MEMOPT_LAUNCHERS(uint16_t, f16);
  static const auto bf16 = MEMOPT_LAUNCHERS(uint16_t, bf16);
  if (dtype == at::kFloat)
    fn(f32);
  else if (dtype == at::kHalf)
    fn(f16);
  else
    fn(bf16);
}
#undef MEMOPT_LAUNCHERS

void checkLaunch(int err, const char *what) {
  TORCH_CHECK(err == 0, "memopt: CUDA ", what,
              " failed: ", cudaGetErrorString(static_cast<cudaError_t>(err)));
}

void *currentStream() { return c10::cuda::getCurrentCUDAStream().stream(); }

/// First invalid index of the contiguous `x`, or -1; waits for the result.
template <class L>
int64_t findInvalid(const L &launchers, const at::Tensor &x,
                    CompressionKind kind) {
  using S = typename L::Stored;
  const auto *in = static_cast<const S *>(x.data_ptr());
  at::Tensor first = at::empty({1}, x.options().dtype(at::kLong));
  auto *firstPtr = first.data_ptr<int64_t>();
  checkLaunch(
      kind == CompressionKind::UInt8
          ? launchers.findNonUInt8(in, x.numel(), firstPtr, currentStream())
          : launchers.findNonBinary(in, x.numel(), firstPtr, currentStream()),
      "value check");
  const int64_t index = first.item<int64_t>();
  return index < x.numel() ? index : -1;
}

template <class L>
at::Tensor packSparse(const L &launchers, const at::Tensor &x) {
  using S = typename L::Stored;
  const int64_t n = x.numel();
  const int64_t slots = memopt_sparse_workspace_elems(n);
  at::Tensor work = at::empty({slots + 1}, x.options().dtype(at::kLong));
  int64_t *w = work.data_ptr<int64_t>();
  const auto *in = static_cast<const S *>(x.data_ptr());
  checkLaunch(launchers.sparseCount(in, n, w, w + slots, currentStream()),
              "sparse count");
  const int64_t count = work[slots].item<int64_t>();
  at::Tensor out = at::empty(
      {count}, x.options().dtype(packedScalarType(CompressionKind::Sparse, n)));
  checkLaunch(launchers.sparseWrite(in, n, w, out.data_ptr(),
                                    static_cast<int>(out.element_size()),
                                    currentStream()),
              "sparse write");
  return out;
}

} // namespace

at::Tensor compressCUDA(const at::Tensor &input, CompressionKind kind,
                        bool check, int64_t &firstInvalid) {
  const c10::cuda::CUDAGuard guard(input.device());
  const at::Tensor x = input.contiguous(); // logical order == memory order
  const int64_t n = x.numel();
  firstInvalid = -1;
  at::Tensor out;
  withLaunchers(x.scalar_type(), [&](const auto &launchers) {
    using S = typename std::decay_t<decltype(launchers)>::Stored;
    if (check && n > 0) {
      firstInvalid = findInvalid(launchers, x, kind);
      if (firstInvalid >= 0)
        return;
    }
    const auto *in = static_cast<const S *>(x.data_ptr());
    const auto bytes = x.options().dtype(packedScalarType(kind, n));
    switch (kind) {
    case CompressionKind::Bit:
      out = at::empty({(n + 7) / 8}, bytes);
      checkLaunch(
          launchers.bitPack(in, out.data_ptr<uint8_t>(), n, currentStream()),
          "bit pack");
      break;
    case CompressionKind::Bool:
    case CompressionKind::UInt8:
      out = at::empty({n}, bytes);
      checkLaunch(
          (kind == CompressionKind::Bool ? launchers.boolPack
                                         : launchers.uint8Pack)(
              in, static_cast<uint8_t *>(out.data_ptr()), n, currentStream()),
          "byte pack");
      break;
    case CompressionKind::Sparse:
      out = packSparse(launchers, x);
      break;
    }
  });
  return out;
}

void decompressCUDA(const at::Tensor &payload, CompressionKind kind,
                    at::Tensor &out) {
  const c10::cuda::CUDAGuard guard(out.device());
  const int64_t n = out.numel();
  withLaunchers(out.scalar_type(), [&](const auto &launchers) {
    using S = typename std::decay_t<decltype(launchers)>::Stored;
    auto *dst = static_cast<S *>(out.data_ptr());
    const auto *bytes = static_cast<const uint8_t *>(payload.data_ptr());
    int err = 0;
    switch (kind) {
    case CompressionKind::Bit:
      err = launchers.bitUnpack(bytes, dst, n, currentStream());
      break;
    case CompressionKind::Bool:
      err = launchers.boolUnpack(bytes, dst, n, currentStream());
      break;
    case CompressionKind::UInt8:
      err = launchers.uint8Unpack(bytes, dst, n, currentStream());
      break;
    case CompressionKind::Sparse:
      err = launchers.sparseScatter(payload.data_ptr(),
                                    static_cast<int>(payload.element_size()),
                                    payload.numel(), dst, n, currentStream());
      break;
    }
    checkLaunch(err, "unpack");
  });
}

int64_t findFirstInvalidCUDA(const at::Tensor &input, CompressionKind kind) {
  const c10::cuda::CUDAGuard guard(input.device());
  const at::Tensor x = input.contiguous();
  int64_t first = -1;
  withLaunchers(x.scalar_type(), [&](const auto &launchers) {
    first = findInvalid(launchers, x, kind);
  });
  return first;
}

#else // !MEMOPT_WITH_CUDA

namespace {
[[noreturn]] void noCUDA(const char *op, CompressionKind kind) {
  TORCH_CHECK(false, "memopt: ", op, "(", compressionKindName(kind),
              "): got a CUDA tensor but libmemopt_runtime was built without "
              "CUDA");
}
} // namespace

at::Tensor compressCUDA(const at::Tensor &, CompressionKind kind, bool,
                        int64_t &) {
  noCUDA("compress", kind);
}
void decompressCUDA(const at::Tensor &, CompressionKind kind, at::Tensor &) {
  noCUDA("decompress", kind);
}
int64_t findFirstInvalidCUDA(const at::Tensor &, CompressionKind kind) {
  noCUDA("check", kind);
}

#endif // MEMOPT_WITH_CUDA

} // namespace memopt::runtime::detail
