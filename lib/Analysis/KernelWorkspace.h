//===- KernelWorkspace.h - transient buffers of CPU kernels -----*- C++ -*-===//
//
// Bytes a kernel allocates for itself while it runs and frees before it
// returns: invisible in the graph, but part of the high-water mark. On
// PyTorch 1.13's CPU backend the one that matters is the oneDNN (mkldnn)
// convolution: it reorders its input, weight and output into blocked
// layouts (16 channels per block, padded) around the computation, in
// forward and in both halves of backward; then batch-norm's backward, which
// allocates an input-sized buffer (or a chunk's, run by channel). Measured
// on this machine with the profiler's allocation events; see
// docs/analyses.md.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_ANALYSIS_KERNELWORKSPACE_H
#define MEMOPT_LIB_ANALYSIS_KERNELWORKSPACE_H

#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Dialect/MemoptOps.h"

namespace mlir::memopt {

/// The high-water mark of an op's forward above the bytes live before it,
/// counting its results (which stay) and its workspace (which does not);
/// or -1 when the op has no workspace model (then: its results).
int64_t getForwardHighWater(TorchOp op, const TrainingMemoryOptions &options);

/// The high-water mark of an op's backward above the bytes live before it
/// (its saved tensors and output gradient are already live), counting the
/// gradients it returns for the input / weight / bias; -1 when the op has no
/// workspace model (then: the gradients it returns).
int64_t getBackwardHighWater(TorchOp op, bool inputGrad, bool weightGrad,
                             bool biasGrad,
                             const TrainingMemoryOptions &options);

/// A convolution PyTorch runs as a plain matrix product (`_slow_conv2d` with
/// a 1x1 kernel: no oneDNN, no im2col) with `threads` intra-op threads.
bool isMatrixProductConvolution(TorchOp op, int threads);

/// Bytes a kernel copies its input into while it runs, forward or backward,
/// beyond the above: `layer_norm` makes a non-contiguous input contiguous
/// (and so does its backward with the saved input).
int64_t getContiguousCopyBytes(TorchOp op, function_ref<bool(Value)> isContiguous,
                               const TrainingMemoryOptions &options);

/// Whether `op`'s backward writes `value`'s gradient straight into `.grad`,
/// holding nothing beyond it: the weight of a linear layer marked
/// `backward = #memopt.backward<weight_rows>` while `.grad` stays allocated
/// and no DDP reducer holds its accumulator (the runtime writes it into a
/// `.grad` of +0 after zero_grad). Otherwise the backward makes the whole
/// gradient, as eager.
bool isGradientWrittenIntoGrad(TorchOp op, Value value,
                               const TrainingMemoryOptions &options);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_ANALYSIS_KERNELWORKSPACE_H
