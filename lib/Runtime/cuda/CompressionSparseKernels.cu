//===- CompressionSparseKernels.cu - Sparse (index list) compression ------===//
//
// Flat indices of the non-zero elements, in ascending order, in three passes:
// count per chunk, one-block exclusive scan of the counts, ordered compaction
// of each chunk (warp ballots) at its offset. Decompression zero-fills and
// scatters ones. Plain CUDA C++ behind the launchers of
// CompressionLaunchers.h.
//
//===----------------------------------------------------------------------===//

#include "CompressionCommon.cuh"

#include "memopt/Runtime/CompressionLaunchers.h"

using namespace memopt_cuda;

namespace {

constexpr int64_t kSparseChunk = 4096; // elements per block in sparse passes
constexpr int kScanThreads = 1024;

// Sparse pass 1: non-zeros per chunk of kSparseChunk elements.
template <class T>
__global__ void sparseCount(const typename T::Stored *in, int64_t n,
                            int64_t *chunkCounts) {
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSparseChunk;
  int64_t count = 0;
  for (int64_t off = 0; off < kSparseChunk; off += blockDim.x) {
    const int64_t i = begin + off + threadIdx.x;
    count += __syncthreads_count(i < n && isNonZero<T>(T::bits(in[i])));
  }
  if (threadIdx.x == 0)
    chunkCounts[blockIdx.x] = count;
}

// Sparse pass 2 (one block): exclusive scan of the chunk counts, in place.
__global__ void scanChunkCounts(int64_t *counts, int64_t chunks,
                                int64_t *total) {
  __shared__ int64_t sums[kScanThreads];
  const int t = threadIdx.x;
  const int64_t per = (chunks + kScanThreads - 1) / kScanThreads;
  const int64_t lo = min(t * per, chunks), hi = min(lo + per, chunks);
  int64_t own = 0;
  for (int64_t c = lo; c < hi; ++c)
    own += counts[c];
  sums[t] = own;
  __syncthreads();
  for (int off = 1; off < kScanThreads; off <<= 1) {
    const int64_t add = t >= off ? sums[t - off] : 0;
    __syncthreads();
    sums[t] += add;
    __syncthreads();
  }
  int64_t run = sums[t] - own;
  for (int64_t c = lo; c < hi; ++c) {
    const int64_t v = counts[c];
    counts[c] = run;
    run += v;
  }
  if (t == kScanThreads - 1)
    *total = sums[t];
}

// Sparse pass 3: ordered compaction of each chunk at its scanned offset.
template <class T, typename I>
__global__ void sparseWrite(const typename T::Stored *in, int64_t n,
                            const int64_t *chunkOffsets, I *indices) {
  __shared__ int warpCounts[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t begin = static_cast<int64_t>(blockIdx.x) * kSparseChunk;
  int64_t base = chunkOffsets[blockIdx.x];
  for (int64_t off = 0; off < kSparseChunk; off += kThreads) {
    const int64_t i = begin + off + threadIdx.x;
    const bool one = i < n && isNonZero<T>(T::bits(in[i]));
    const unsigned mask = __ballot_sync(0xFFFFFFFFu, one);
    if (lane == 0)
      warpCounts[warp] = __popc(mask);
    __syncthreads();
    int before = 0, total = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      before += w < warp ? warpCounts[w] : 0;
      total += warpCounts[w];
    }
    if (one)
      indices[base + before + __popc(mask & ((1u << lane) - 1u))] =
          static_cast<I>(i);
    base += total;
    __syncthreads(); // warpCounts is rewritten by the next step
  }
}

template <class T, typename I>
__global__ void sparseScatter(const I *indices, int64_t count,
                              typename T::Stored *out, int64_t n) {
  for (int64_t k = globalThread(); k < count; k += gridThreads()) {
    const int64_t i = static_cast<int64_t>(indices[k]);
    if (i >= 0 && i < n)
      out[i] = T::fromBits(T::kOne);
  }
}

int64_t sparseChunks(int64_t n) {
  return (n + kSparseChunk - 1) / kSparseChunk;
}

template <class T>
int launchSparseCount(const typename T::Stored *in, int64_t n,
                      int64_t *workspace, int64_t *count, void *stream) {
  const int64_t chunks = sparseChunks(n);
  if (chunks == 0) {
    setScalar<<<1, 1, 0, asStream(stream)>>>(count, 0);
    return cudaGetLastError();
  }
  sparseCount<T>
      <<<static_cast<unsigned>(chunks), kThreads, 0, asStream(stream)>>>(
          in, n, workspace);
  scanChunkCounts<<<1, kScanThreads, 0, asStream(stream)>>>(workspace, chunks,
                                                            count);
  return cudaGetLastError();
}

template <class T>
int launchSparseWrite(const typename T::Stored *in, int64_t n,
                      const int64_t *workspace, void *indices, int indexBytes,
                      void *stream) {
  const int64_t chunks = sparseChunks(n);
  if (indexBytes != 4 && indexBytes != 8)
    return cudaErrorInvalidValue;
  if (chunks == 0)
    return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(chunks);
  if (indexBytes == 4)
    sparseWrite<T, int32_t><<<grid, kThreads, 0, asStream(stream)>>>(
        in, n, workspace, static_cast<int32_t *>(indices));
  else
    sparseWrite<T, int64_t><<<grid, kThreads, 0, asStream(stream)>>>(
        in, n, workspace, static_cast<int64_t *>(indices));
  return cudaGetLastError();
}

template <class T>
int launchSparseScatter(const void *indices, int indexBytes, int64_t count,
                        typename T::Stored *out, int64_t n, void *stream) {
  if (indexBytes != 4 && indexBytes != 8)
    return cudaErrorInvalidValue;
  if (n == 0)
    return cudaSuccess;
  cudaError_t err =
      cudaMemsetAsync(out, 0, n * sizeof(typename T::Stored), asStream(stream));
  if (err != cudaSuccess || count == 0)
    return err;
  if (indexBytes == 4)
    sparseScatter<T, int32_t>
        <<<blocksFor(count), kThreads, 0, asStream(stream)>>>(
            static_cast<const int32_t *>(indices), count, out, n);
  else
    sparseScatter<T, int64_t>
        <<<blocksFor(count), kThreads, 0, asStream(stream)>>>(
            static_cast<const int64_t *>(indices), count, out, n);
  return cudaGetLastError();
}

} // namespace

extern "C" int64_t memopt_sparse_workspace_elems(int64_t n) {
  const int64_t chunks = sparseChunks(n);
  return chunks > 0 ? chunks : 1;
}

// The sparse launchers of one element type (SUFFIX in f32 / f16 / bf16).
#define MEMOPT_DEFINE_SPARSE_LAUNCHERS(SUFFIX, T)                              \
  extern "C" int memopt_launch_sparse_count_##SUFFIX(                          \
      const T::Stored *in, int64_t n, int64_t *workspace, int64_t *count,      \
      void *stream) {                                                          \
    return launchSparseCount<T>(in, n, workspace, count, stream);              \
  }                                                                            \
  extern "C" int memopt_launch_sparse_write_##SUFFIX(                          \
      const T::Stored *in, int64_t n, const int64_t *workspace, void *indices, \
      int index_bytes, void *stream) {                                         \
    return launchSparseWrite<T>(in, n, workspace, indices, index_bytes,        \
                                stream);                                       \
  }                                                                            \
  extern "C" int memopt_launch_sparse_scatter_##SUFFIX(                        \
      const void *indices, int index_bytes, int64_t count, T::Stored *out,     \
      int64_t n, void *stream) {                                               \
    return launchSparseScatter<T>(indices, index_bytes, count, out, n,         \
                                  stream);                                     \
  }

MEMOPT_DEFINE_SPARSE_LAUNCHERS(f32, F32)
MEMOPT_DEFINE_SPARSE_LAUNCHERS(f16, F16)
MEMOPT_DEFINE_SPARSE_LAUNCHERS(bf16, BF16)
