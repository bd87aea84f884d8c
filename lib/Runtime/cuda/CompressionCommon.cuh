//===- CompressionCommon.cuh - Shared by compression kernels -*- CUDA -*-===//
//
// Element types as raw bit patterns, the per-value encoders and the launch
// geometry shared by CompressionKernels.cu and CompressionSparseKernels.cu.
// Private to the runtime; plain CUDA C++, no LibTorch.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_RUNTIME_CUDA_COMPRESSIONCOMMON_CUH
#define MEMOPT_LIB_RUNTIME_CUDA_COMPRESSIONCOMMON_CUH

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdint.h>

namespace memopt_cuda {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 16; // grid-stride loops cover the rest

// Element types: `Stored` is what the launcher receives, `U` the bit pattern.
struct F32 {
  using Stored = float;
  using U = uint32_t;
  static constexpr U kOne = 0x3F800000u;
  static constexpr U kMagnitude = 0x7FFFFFFFu;
  __device__ static U bits(float v) { return __float_as_uint(v); }
  __device__ static float fromBits(U b) { return __uint_as_float(b); }
  __device__ static float toFloat(U b) { return __uint_as_float(b); }
  __device__ static U fromSmallInt(uint8_t c) {
    return __float_as_uint(static_cast<float>(c));
  }
};

struct F16 {
  using Stored = uint16_t;
  using U = uint16_t;
  static constexpr U kOne = 0x3C00;
  static constexpr U kMagnitude = 0x7FFF;
  __device__ static U bits(uint16_t v) { return v; }
  __device__ static uint16_t fromBits(U b) { return b; }
  __device__ static float toFloat(U b) {
    return __half2float(__ushort_as_half(b));
  }
  // Integers up to 255 are exact in half precision.
  __device__ static U fromSmallInt(uint8_t c) {
    return __half_as_ushort(__float2half_rn(static_cast<float>(c)));
  }
};

struct BF16 {
  using Stored = uint16_t;
  using U = uint16_t;
  static constexpr U kOne = 0x3F80;
  static constexpr U kMagnitude = 0x7FFF;
  __device__ static U bits(uint16_t v) { return v; }
  __device__ static uint16_t fromBits(U b) { return b; }
  __device__ static float toFloat(U b) {
    return __uint_as_float(static_cast<uint32_t>(b) << 16);
  }
  // Integers up to 255 have at most 8 significant bits: truncation is exact.
  __device__ static U fromSmallInt(uint8_t c) {
    return static_cast<U>(__float_as_uint(static_cast<float>(c)) >> 16);
  }
};

template <class T> __device__ bool isNonZero(typename T::U b) {
  return (b & T::kMagnitude) != 0;
}
template <class T> __device__ bool isBinary(typename T::U b) {
  return (b & T::kMagnitude) == 0 || b == T::kOne;
}
// Clamps to [0, 255] (NaN -> 0) and truncates toward zero.
template <class T> __device__ uint8_t toUInt8(typename T::U b, bool *exact) {
  float f = T::toFloat(b);
  float c = fminf(fmaxf(f, 0.0f), 255.0f);
  uint8_t q = static_cast<uint8_t>(static_cast<int>(c));
  *exact = static_cast<float>(q) == f;
  return q;
}

inline __device__ int64_t globalThread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
inline __device__ int64_t gridThreads() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

inline unsigned blocksFor(int64_t work) {
  int64_t blocks = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

inline cudaStream_t asStream(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

// Internal linkage: each .cu gets its own copy of this tiny kernel.
static __global__ void setScalar(int64_t *p, int64_t value) { *p = value; }

} // namespace memopt_cuda

#endif // MEMOPT_LIB_RUNTIME_CUDA_COMPRESSIONCOMMON_CUH
