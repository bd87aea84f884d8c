//===- MemoptTypes.h - memopt types -----------------------------*- C++ -*-===//
#ifndef MEMOPT_DIALECT_MEMOPTTYPES_H
#define MEMOPT_DIALECT_MEMOPTTYPES_H

#include "memopt/Dialect/MemoptAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "memopt/Dialect/MemoptOpsTypes.h.inc"

namespace mlir::memopt {

/// Elements autograd can differentiate: floating point and complex (FFT
/// layers, complex weights). Integer and boolean tensors carry no gradient.
bool isDifferentiableElementType(Type elementType);

/// A type that can carry a gradient: a tensor of such elements, or a
/// container that may hold one (lists, tuples, dicts). Numbers and integer
/// or boolean tensors (a comparison's mask, argmax's indices, a loop's
/// counter, a size) cannot. The memory model and the kernel probe ask.
bool mayCarryGradient(Type type);

} // namespace mlir::memopt

#endif // MEMOPT_DIALECT_MEMOPTTYPES_H
