//===- WeightGradChunks.h - Weight gradients into .grad ---------*- C++ -*-===//
//
// Which linear layers' weight gradients memopt::linear_weight_rows writes
// straight into `.grad` instead of autograd's weight-sized temporary
// (passes/ChunkWeightGradients.cpp marks them). Plain C++: neither LibTorch
// nor MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H
#define MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H

#include <algorithm>
#include <cstdint>

namespace memopt::runtime {

/// The threshold is that of the row blocks the runtime once added into
/// `.grad` (about 4 MiB each, worth it beyond four of them): the gradient of
/// a weight of more than four 4 MiB blocks of rows. Below it, the saving is
/// small next to the input and output gradients the same backward holds.
constexpr int64_t kWeightGradBlockBytes = int64_t(4) << 20;
constexpr int64_t kWeightGradMinBlocks = 4;

/// Whether a `rows` x `rowBytes` weight gradient is worth writing into
/// `.grad` (a VGG classifier's 25088 x 4096 floats: 392 MiB).
inline bool isWeightGradWorthWritingIntoGrad(int64_t rows, int64_t rowBytes) {
  if (rows <= 0 || rowBytes <= 0)
    return false;
  int64_t step = std::max<int64_t>(kWeightGradBlockBytes / rowBytes, 1);
  return kWeightGradMinBlocks * step < rows;
}

} // namespace memopt::runtime

#endif // MEMOPT_RUNTIME_WEIGHTGRADCHUNKS_H
