//===- CompressionKernels.cu - CUDA kernels for spike compression ---------===//
//
// Plain CUDA C++ (no LibTorch) behind the extern "C" launchers declared in
// CompressionLaunchers.h: bit, bool and uint8 packing and the value checks.
// Values are handled as raw bit patterns so that 0/1 tests and the restored
// values are exact for every element type. Sparse: CompressionSparseKernels.cu.
//
//===----------------------------------------------------------------------===//

#include "CompressionCommon.cuh"

#include "memopt/Runtime/CompressionLaunchers.h"

using namespace memopt_cuda;

namespace {

// One warp packs 32 consecutive values per step with a ballot; lanes 0..3
// write its four bytes (little endian: lane k is bit k % 8 of byte k / 8).
template <class T>
__global__ void bitPack(const typename T::Stored *in, uint8_t *out, int64_t n) {
  const int lane = threadIdx.x & 31;
  const int64_t warps = gridThreads() >> 5;
  const int64_t nbytes = (n + 7) / 8;
  for (int64_t base = (globalThread() >> 5) * 32; base < n;
       base += warps * 32) {
    const int64_t i = base + lane;
    const bool bit = i < n && isNonZero<T>(T::bits(in[i]));
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, bit);
    const int64_t byte = base / 8 + lane;
    if (lane < 4 && byte < nbytes)
      out[byte] = static_cast<uint8_t>(mask >> (8 * lane));
  }
}

template <class T>
__global__ void bitUnpack(const uint8_t *in, typename T::Stored *out,
                          int64_t n) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    out[i] = T::fromBits(((in[i >> 3] >> (i & 7)) & 1) ? T::kOne : 0);
}

// The bulk of a bit pack or unpack moves 16-byte vectors, so that it runs at
// the device's memory bandwidth (element-wise loads and byte stores reach
// about two thirds of a copy's on an H100). A lane holds kValues values of
// one vector; kLanesPerWord lanes hold the 32 values of one packed word.
template <class T> struct VectorOf {
  static constexpr int kValues = 16 / sizeof(typename T::Stored);
  static constexpr int kLanesPerWord = 32 / kValues;
  union Values {
    uint4 vector;
    typename T::U value[kValues];
  };
};
constexpr int kVectorsInFlight = 4; // loads per lane before the first use

// `vectors` is a multiple of 32: each step of a warp is whole.
template <class T>
__global__ void bitPackVectors(const uint4 *in, uint32_t *out,
                               int64_t vectors) {
  using V = VectorOf<T>;
  const int lane = threadIdx.x & 31;
  const int64_t stride = (gridThreads() >> 5) * 32 * kVectorsInFlight;
  for (int64_t first = (globalThread() >> 5) * 32 * kVectorsInFlight;
       first < vectors; first += stride) {
    typename V::Values loaded[kVectorsInFlight];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u)
      if (first + u * 32 < vectors) // the same for the whole warp
        loaded[u].vector = in[first + u * 32 + lane];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {
      if (first + u * 32 >= vectors)
        break;
      uint32_t bits = 0;
#pragma unroll
      for (int j = 0; j < V::kValues; ++j)
        bits |= static_cast<uint32_t>(isNonZero<T>(loaded[u].value[j])) << j;
      bits <<= V::kValues * (lane % V::kLanesPerWord);
#pragma unroll
      for (int offset = 1; offset < V::kLanesPerWord; offset <<= 1)
        bits |= __shfl_xor_sync(0xFFFFFFFFu, bits, offset);
      if (lane % V::kLanesPerWord == 0)
        out[(first + u * 32 + lane) / V::kLanesPerWord] = bits;
    }
  }
}

template <class T>
__global__ void bitUnpackVectors(const uint32_t *in, uint4 *out,
                                 int64_t vectors) {
  using V = VectorOf<T>;
  const int64_t threads = gridThreads();
  for (int64_t first = globalThread(); first < vectors;
       first += threads * kVectorsInFlight) {
    uint32_t words[kVectorsInFlight];
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {
      const int64_t v = first + u * threads;
      words[u] = v < vectors ? in[v / V::kLanesPerWord] : 0;
    }
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {
      const int64_t v = first + u * threads;
      if (v >= vectors)
        break;
      const uint32_t bits = words[u] >> (V::kValues * (v % V::kLanesPerWord));
      typename V::Values values;
#pragma unroll
      for (int j = 0; j < V::kValues; ++j)
        values.value[j] = ((bits >> j) & 1) ? T::kOne : 0;
      out[v] = values.vector;
    }
  }
}

// How many leading values the vector kernels take: whole warps of vectors,
// when both buffers are aligned for them (a view may start anywhere).
template <class T>
int64_t vectorBulk(const void *values, const void *packed, int64_t n) {
  constexpr int64_t step = 32 * VectorOf<T>::kValues;
  if (reinterpret_cast<uintptr_t>(values) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(packed) % 4 != 0)
    return 0;
  return n / step * step;
}

template <class T>
int launchBitPack(const typename T::Stored *in, uint8_t *out, int64_t n,
                  void *stream) {
  const int64_t bulk = vectorBulk<T>(in, out, n);
  const int64_t vectors = bulk / VectorOf<T>::kValues;
  if (bulk > 0)
    bitPackVectors<T><<<blocksFor(vectors / kVectorsInFlight), kThreads, 0,
                        asStream(stream)>>>(reinterpret_cast<const uint4 *>(in),
                                            reinterpret_cast<uint32_t *>(out),
                                            vectors);
  // The rest starts on a byte boundary: bulk is a multiple of 128 values.
  if (n > bulk)
    bitPack<T><<<blocksFor((n - bulk + 31) / 32 * 32), kThreads, 0,
                 asStream(stream)>>>(in + bulk, out + bulk / 8, n - bulk);
  return cudaGetLastError();
}

template <class T>
int launchBitUnpack(const uint8_t *in, typename T::Stored *out, int64_t n,
                    void *stream) {
  const int64_t bulk = vectorBulk<T>(out, in, n);
  const int64_t vectors = bulk / VectorOf<T>::kValues;
  if (bulk > 0)
    bitUnpackVectors<T>
        <<<blocksFor(vectors / kVectorsInFlight), kThreads, 0,
           asStream(stream)>>>(reinterpret_cast<const uint32_t *>(in),
                               reinterpret_cast<uint4 *>(out), vectors);
  if (n > bulk)
    bitUnpack<T><<<blocksFor(n - bulk), kThreads, 0, asStream(stream)>>>(
        in + bulk / 8, out + bulk, n - bulk);
  return cudaGetLastError();
}

template <class T>
__global__ void boolPack(const typename T::Stored *in, uint8_t *out,
                         int64_t n) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    out[i] = isNonZero<T>(T::bits(in[i])) ? 1 : 0;
}

template <class T>
__global__ void boolUnpack(const uint8_t *in, typename T::Stored *out,
                           int64_t n) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    out[i] = T::fromBits(in[i] ? T::kOne : 0);
}

template <class T>
__global__ void uint8Pack(const typename T::Stored *in, uint8_t *out,
                          int64_t n) {
  bool exact;
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    out[i] = toUInt8<T>(T::bits(in[i]), &exact);
}

template <class T>
__global__ void uint8Unpack(const uint8_t *in, typename T::Stored *out,
                            int64_t n) {
  for (int64_t i = globalThread(); i < n; i += gridThreads())
    out[i] = T::fromBits(T::fromSmallInt(in[i]));
}

// Each thread stops at its first invalid index; atomicMin keeps the smallest.
template <class T, bool Binary>
__global__ void findInvalid(const typename T::Stored *in, int64_t n,
                            int64_t *first) {
  for (int64_t i = globalThread(); i < n; i += gridThreads()) {
    const typename T::U b = T::bits(in[i]);
    bool ok;
    if (Binary) {
      ok = isBinary<T>(b);
    } else {
      toUInt8<T>(b, &ok);
    }
    if (!ok) {
      atomicMin(reinterpret_cast<unsigned long long *>(first),
                static_cast<unsigned long long>(i));
      return;
    }
  }
}

template <class Kernel, class In, class Out>
int launchElementwise(Kernel kernel, In in, Out out, int64_t n, void *stream) {
  if (n == 0)
    return cudaSuccess;
  kernel<<<blocksFor(n), kThreads, 0, asStream(stream)>>>(in, out, n);
  return cudaGetLastError();
}

template <class T, bool Binary>
int launchFind(const typename T::Stored *in, int64_t n, int64_t *first,
               void *stream) {
  setScalar<<<1, 1, 0, asStream(stream)>>>(first, n);
  if (n > 0)
    findInvalid<T, Binary>
        <<<blocksFor(n), kThreads, 0, asStream(stream)>>>(in, n, first);
  return cudaGetLastError();
}

} // namespace

// The launchers of one element type (SUFFIX in f32 / f16 / bf16).
#define MEMOPT_DEFINE_LAUNCHERS(SUFFIX, T)                                     \
  extern "C" int memopt_launch_bit_pack_##SUFFIX(                              \
      const T::Stored *in, uint8_t *out, int64_t n, void *stream) {            \
    return launchBitPack<T>(in, out, n, stream);                               \
  }                                                                            \
  extern "C" int memopt_launch_bit_unpack_##SUFFIX(                            \
      const uint8_t *in, T::Stored *out, int64_t n, void *stream) {            \
    return launchBitUnpack<T>(in, out, n, stream);                             \
  }                                                                            \
  extern "C" int memopt_launch_bool_pack_##SUFFIX(                             \
      const T::Stored *in, uint8_t *out, int64_t n, void *stream) {            \
    return launchElementwise(boolPack<T>, in, out, n, stream);                 \
  }                                                                            \
  extern "C" int memopt_launch_bool_unpack_##SUFFIX(                           \
      const uint8_t *in, T::Stored *out, int64_t n, void *stream) {            \
    return launchElementwise(boolUnpack<T>, in, out, n, stream);               \
  }                                                                            \
  extern "C" int memopt_launch_uint8_pack_##SUFFIX(                            \
      const T::Stored *in, uint8_t *out, int64_t n, void *stream) {            \
    return launchElementwise(uint8Pack<T>, in, out, n, stream);                \
  }                                                                            \
  extern "C" int memopt_launch_uint8_unpack_##SUFFIX(                          \
      const uint8_t *in, T::Stored *out, int64_t n, void *stream) {            \
    return launchElementwise(uint8Unpack<T>, in, out, n, stream);              \
  }                                                                            \
  extern "C" int memopt_launch_find_nonbinary_##SUFFIX(                        \
      const T::Stored *in, int64_t n, int64_t *first, void *stream) {          \
    return launchFind<T, true>(in, n, first, stream);                          \
  }                                                                            \
  extern "C" int memopt_launch_find_non_uint8_##SUFFIX(                        \
      const T::Stored *in, int64_t n, int64_t *first, void *stream) {          \
    return launchFind<T, false>(in, n, first, stream);                         \
  }

MEMOPT_DEFINE_LAUNCHERS(f32, F32)
MEMOPT_DEFINE_LAUNCHERS(f16, F16)
MEMOPT_DEFINE_LAUNCHERS(bf16, BF16)
