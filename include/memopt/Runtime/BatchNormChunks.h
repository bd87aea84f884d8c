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

/// About this many bytes of input per chunk: small next to the activations
/// worth chunking, large enough that per-call overhead stays negligible, and
/// one channel of a ResNet stem (16x112x112 floats, 784 KiB) fits.
constexpr int64_t kBatchNormChunkBytes = int64_t(1) << 20;

/// Channels per chunk for an input of `channels` channels of `planeBytes`
/// bytes each (all of the input but dimension 1), or `channels` for one call
/// on the whole input, as eager makes. A chunk holds four transients (the
/// input's and output gradient's copies, the chunk's input gradient and the
/// kernel's buffer), so chunking pays only below a quarter of the channels.
inline int64_t getBatchNormChunkChannels(int64_t channels, int64_t planeBytes) {
  if (planeBytes <= 0 || channels <= 0)
    return channels;
  int64_t step = std::max<int64_t>(kBatchNormChunkBytes / planeBytes, 1);
  return 4 * step < channels ? step : channels;
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_BATCHNORMCHUNKS_H
