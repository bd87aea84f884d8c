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

bool mlir::memopt::isSavePolicy(Attribute attr) {
  return isa<KeepPolicyAttr, CompressPolicyAttr, OffloadPolicyAttr>(attr);
}

void MemoptDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "memopt/Dialect/MemoptAttrs.cpp.inc"
      >();
}
