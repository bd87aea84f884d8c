//===- LaunchStubDevice.cuh - Device code of CUDA launch stubs -*- CUDA -*-===//
//
// Header-only CUDA C++, no LibTorch: what one thread block of a generated
// fused kernel does for its tile of one tensor. A generated kernel gives
// each tensor of its site ceil(numel / kStubTile) blocks (grid size fixed
// at compile time) and calls one of these with the tensor's element count
// as a template argument. Same formats and value rules as LaunchStubHost.h.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_LAUNCHSTUBDEVICE_CUH
#define MEMOPT_RUNTIME_LAUNCHSTUBDEVICE_CUH

#include "memopt/Runtime/LaunchStubHost.h"
#include "memopt/Runtime/LaunchStubs.h"

#include <cuda_runtime.h>

namespace memopt_stubs {

constexpr int kStubThreads = MEMOPT_STUB_THREADS;
/// Elements per block: 32 steps of one element per thread.
constexpr int64_t kStubTile = MEMOPT_STUB_TILE;
static_assert(kStubTile == 32 * kStubThreads, "one value per thread and step");

/// Kernel arguments of a site of `Count` tensors (passed by value).
template <int Count> struct StubArgs {
  const void *in[Count];
  void *out[Count];
  long long *firstInvalid; // one slot per tensor, or null: no check
};

template <class T> __device__ inline bool stubNonZero(typename T::U v) {
  return (v & T::kMagnitude) != 0;
}

/// Lowers `*slot` to the smallest invalid index the block saw.
__device__ inline void stubReportInvalid(long long *slot, long long index) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const long long other = __shfl_down_sync(0xFFFFFFFFu, index, offset);
    index = other < index ? other : index;
  }
  if ((threadIdx.x & 31) == 0 && index != 0x7FFFFFFFFFFFFFFFLL)
    atomicMin(slot, index);
}

/// bit: each warp step packs 32 consecutive values into 4 bytes.
template <class T, long long N>
__device__ void stubBitPackTile(const void *data, void *payload, long long tile,
                                long long *first) {
  const auto *in = static_cast<const typename T::U *>(data);
  auto *out = static_cast<uint8_t *>(payload);
  const int lane = threadIdx.x & 31;
  long long invalid = 0x7FFFFFFFFFFFFFFFLL;
  for (int step = 0; step < 32; ++step) {
    const long long base =
        tile * kStubTile + step * kStubThreads + (threadIdx.x & ~31);
    if (base >= N)
      break; // the same for the whole warp
    const long long i = base + lane;
    const typename T::U v = i < N ? in[i] : 0;
    const bool bit = stubNonZero<T>(v);
    if (first && bit && v != T::kOne && i < invalid)
      invalid = i;
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, bit);
    const long long byte = base / 8 + lane;
    if (lane < 4 && byte < (N + 7) / 8)
      out[byte] = static_cast<uint8_t>(mask >> (8 * lane));
  }
  if (first)
    stubReportInvalid(first, invalid);
}

/// Writes value i of the tile as 1 when `isOne(i)`, else 0.
template <class T, long long N, class IsOne>
__device__ void stubUnpackTile(void *data, long long tile, IsOne isOne) {
  auto *out = static_cast<typename T::U *>(data);
  for (int step = 0; step < 32; ++step) {
    const long long i = tile * kStubTile + step * kStubThreads + threadIdx.x;
    if (i < N)
      out[i] = isOne(i) ? T::kOne : 0;
  }
}

template <class T, long long N>
__device__ void stubBitUnpackTile(const void *payload, void *data,
                                  long long tile) {
  const auto *in = static_cast<const uint8_t *>(payload);
  stubUnpackTile<T, N>(data, tile, [in](long long i) {
    return ((in[i >> 3] >> (i & 7)) & 1) != 0;
  });
}

/// bool: one byte per value.
template <class T, long long N>
__device__ void stubBoolPackTile(const void *data, void *payload,
                                 long long tile, long long *first) {
  const auto *in = static_cast<const typename T::U *>(data);
  auto *out = static_cast<uint8_t *>(payload);
  long long invalid = 0x7FFFFFFFFFFFFFFFLL;
  for (int step = 0; step < 32; ++step) {
    const long long i = tile * kStubTile + step * kStubThreads + threadIdx.x;
    if (i >= N)
      break;
    const typename T::U v = in[i];
    const bool nonZero = stubNonZero<T>(v);
    if (nonZero && v != T::kOne && i < invalid)
      invalid = i;
    out[i] = nonZero;
  }
  if (first)
    stubReportInvalid(first, invalid);
}

template <class T, long long N>
__device__ void stubBoolUnpackTile(const void *payload, void *data,
                                   long long tile) {
  const auto *in = static_cast<const uint8_t *>(payload);
  stubUnpackTile<T, N>(data, tile, [in](long long i) { return in[i] != 0; });
}

} // namespace memopt_stubs

#endif // MEMOPT_RUNTIME_LAUNCHSTUBDEVICE_CUH
