//===- MemoptAttrs.h - memopt attributes and enums --------------*- C++ -*-===//
#ifndef MEMOPT_DIALECT_MEMOPTATTRS_H
#define MEMOPT_DIALECT_MEMOPTATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "memopt/Dialect/MemoptEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "memopt/Dialect/MemoptAttrs.h.inc"

namespace mlir::memopt {
/// True for #memopt.keep, #memopt.compress<..> and #memopt.offload<..>.
bool isSavePolicy(Attribute attr);
} // namespace mlir::memopt

#endif // MEMOPT_DIALECT_MEMOPTATTRS_H
