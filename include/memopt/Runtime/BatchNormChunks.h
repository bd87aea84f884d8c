//===- BatchNormChunks.h - Channel chunks of a batch-norm backward -*- C++
//-*-===//
//
// How many channels memopt::batch_norm_by_channel hands to ATen's batch-norm
// backward at a time. Shared by the runtime, which runs it, and the memory
// model (lib/Analysis/KernelWorkspace.cpp), which counts the transient
// buffers of one chunk. Plain C++: neither LibTorch nor MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_BATCHNORMCHUNKS_H
#define MEMOPT_RUNTIME_BATCHNORMCHUNKS_H

#include <algorithm>
#include <cstdint>

namespace memopt::runtime {

/// At most this many bytes of input per chunk: small next to the
/// activations worth chunking, large enough that per-call overhead stays
/// negligible, and one channel of a ResNet stem (16x112x112 floats,
/// 784 KiB) fits.
constexpr int64_t kBatchNormChunkBytes = int64_t(1) << 20;
/// A smaller input is cut into about this many chunks (so that a 1 MiB
/// batch-norm of a small network, which is its whole backward peak, can be
/// chunked too), each of at least kBatchNormMinChunkBytes.
constexpr int64_t kBatchNormChunksPerInput = 16;
constexpr int64_t kBatchNormMinChunkBytes = int64_t(64) << 10;

/// Channels per chunk for an input of `channels` channels of `planeBytes`
/// bytes each (all of the input but dimension 1), or `channels` for one call
/// on the whole input, as eager makes. A chunk holds four transients (the
/// input's and output gradient's copies, the chunk's input gradient and the
/// kernel's buffer), so chunking pays only below a quarter of the channels.
inline int64_t getBatchNormChunkChannels(int64_t channels, int64_t planeBytes) {
  if (planeBytes <= 0 || channels <= 0)
    return channels;
  int64_t chunkBytes =
      std::min(kBatchNormChunkBytes,
               std::max(kBatchNormMinChunkBytes,
                        channels * planeBytes / kBatchNormChunksPerInput));
  int64_t step = std::max<int64_t>(chunkBytes / planeBytes, 1);
  return 4 * step < channels ? step : channels;
}

/// Transient bytes a training-mode batch-norm backward holds next to the
/// input gradient, for an input of `inputBytes` in `channels` channels, run
/// by channel: four chunks, or the CPU kernel's input-sized buffer when one
/// call takes the whole input.
inline int64_t getBatchNormByChannelTransientBytes(int64_t channels,
                                                   int64_t inputBytes) {
  if (channels <= 0 || inputBytes <= 0)
    return inputBytes;
  int64_t planeBytes = inputBytes / channels;
  int64_t step = getBatchNormChunkChannels(channels, planeBytes);
  return step < channels ? 4 * step * planeBytes : inputBytes;
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_BATCHNORMCHUNKS_H
