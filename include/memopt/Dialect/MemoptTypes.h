//===- MemoptTypes.h - memopt types -----------------------------*- C++ -*-===//
#ifndef MEMOPT_DIALECT_MEMOPTTYPES_H
#define MEMOPT_DIALECT_MEMOPTTYPES_H

#include "memopt/Dialect/MemoptAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "memopt/Dialect/MemoptOpsTypes.h.inc"

#endif // MEMOPT_DIALECT_MEMOPTTYPES_H
