//===- WeightGradChunks.h - Row blocks of a linear weight gradient -*- C++ -*-//
//
// How many output rows of a linear layer's weight gradient
// memopt::linear_weight_rows computes at a time before adding them into
// `.grad`. Shared by the runtime, which runs it, and the memory model, which
// counts one block's bytes instead of the weight's. Plain C++: neither
// LibTorch nor MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H
#define MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H

#include <algorithm>
#include <cstdint>

namespace memopt::runtime {

/// About this many bytes of gradient per block: small next to the weights
/// worth blocking (a VGG classifier's 25088 x 4096 floats: 392 MiB), large
/// enough that each block's matrix product stays efficient.
constexpr int64_t kWeightGradBlockBytes = int64_t(4) << 20;

/// A weight is worth blocking when its gradient spans more than this many
/// blocks: below, the saving is small next to the input and output
/// gradients the same backward holds.
constexpr int64_t kWeightGradMinBlocks = 4;

/// Output rows per block for a `rows` x `rowBytes` weight gradient, or `rows`
/// (one product, as eager computes it) when blocking does not pay.
inline int64_t getWeightGradBlockRows(int64_t rows, int64_t rowBytes) {
  if (rows <= 0 || rowBytes <= 0)
    return rows;
  int64_t step = std::max<int64_t>(kWeightGradBlockBytes / rowBytes, 1);
  return kWeightGradMinBlocks * step < rows ? step : rows;
}

/// Bytes of gradient one block holds (the whole gradient unblocked).
inline int64_t getWeightGradBlockBytes(int64_t rows, int64_t rowBytes) {
  return getWeightGradBlockRows(rows, rowBytes) *
         std::max<int64_t>(rowBytes, 0);
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H
