//===- MemoptAttrs.cpp - memopt attributes --------------------------------===//
#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::memopt;

#include "memopt/Dialect/MemoptEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "memopt/Dialect/MemoptAttrs.cpp.inc"

LogicalResult
KernelHighWaterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t forward, ArrayRef<int64_t> backward) {
  if (forward < -1)
    return emitError() << "forward high-water mark " << forward
                       << " is below -1 (not measured)";
  if (backward.size() != kNumMasks)
    return emitError() << "expected " << kNumMasks
                       << " backward high-water marks (one per gradient "
                          "mask), got "
                       << backward.size();
  for (int64_t bytes : backward)
    if (bytes < -1)
      return emitError() << "backward high-water mark " << bytes
                         << " is below -1 (not measured)";
  return success();
}

LogicalResult
MeasuredSavesAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                          int64_t bytes, ArrayRef<int64_t> operands) {
  if (bytes < 0)
    return emitError() << "measured saved bytes " << bytes << " are negative";
  for (int64_t index : operands)
    if (index < 0)
      return emitError() << "saved operand index " << index << " is negative";
  return success();
}

bool mlir::memopt::isSavePolicy(Attribute attr) {
  return isa<KeepPolicyAttr, CompressPolicyAttr, OffloadPolicyAttr>(attr);
}

void MemoptDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "memopt/Dialect/MemoptAttrs.cpp.inc"
      >();
}
