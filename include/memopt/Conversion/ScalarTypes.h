//===- ScalarTypes.h - MLIR tensor element types as ATen dtypes -*- C++ -*-===//
//
// The one mapping from the element types of the dialect's tensors to ATen's
// dtypes, for the code that makes or checks real tensors from the IR (the
// exporter, the kernel probe). The importer's importDType is its inverse.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_SCALARTYPES_H
#define MEMOPT_CONVERSION_SCALARTYPES_H

#include "mlir/IR/BuiltinTypes.h"

#include <c10/core/ScalarType.h>

#include <optional>

namespace mlir::memopt {

/// The ATen dtype of a tensor element type, or std::nullopt.
inline std::optional<c10::ScalarType> scalarTypeOf(Type element) {
  if (element.isF32())
    return c10::kFloat;
  if (element.isF64())
    return c10::kDouble;
  if (element.isF16())
    return c10::kHalf;
  if (element.isBF16())
    return c10::kBFloat16;
  if (element.isInteger(1))
    return c10::kBool;
  if (element.isUnsignedInteger(8))
    return c10::kByte;
  if (element.isSignedInteger(8))
    return c10::kChar;
  if (element.isSignlessInteger(16))
    return c10::kShort;
  if (element.isSignlessInteger(32))
    return c10::kInt;
  if (element.isSignlessInteger(64))
    return c10::kLong;
  if (auto complex = dyn_cast<ComplexType>(element)) {
    Type part = complex.getElementType();
    if (part.isF32())
      return c10::kComplexFloat;
    if (part.isF64())
      return c10::kComplexDouble;
    if (part.isF16())
      return c10::kComplexHalf;
  }
  return std::nullopt;
}

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_SCALARTYPES_H
