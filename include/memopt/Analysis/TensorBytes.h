//===- TensorBytes.h - sizes of tensor-like values --------------*- C++ -*-===//
#ifndef MEMOPT_ANALYSIS_TENSORBYTES_H
#define MEMOPT_ANALYSIS_TENSORBYTES_H

#include "mlir/IR/Types.h"

namespace mlir::memopt {

/// Bytes of one element (i1/bool takes a byte, as in PyTorch).
int64_t getElementBytes(Type elementType);
/// Device bytes of a ranked static tensor or a packed tensor; 0 for host
/// tensors and non-tensor types; -1 for dynamic shapes.
int64_t getDeviceBytes(Type type);
/// Elements of a static ranked tensor (-1 when not static).
int64_t getNumElements(Type type);
/// A tensor, or a TorchScript list of tensors.
bool isTensorLike(Type type);
/// A ranked tensor of floats with a static shape (what the runtime's packed,
/// masked and by-channel kernels take).
bool isStaticFloatTensor(Type type);

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_TENSORBYTES_H
