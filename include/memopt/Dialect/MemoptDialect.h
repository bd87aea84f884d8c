//===- MemoptDialect.h - The memopt dialect ---------------------*- C++ -*-===//
#ifndef MEMOPT_DIALECT_MEMOPTDIALECT_H
#define MEMOPT_DIALECT_MEMOPTDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dialect.h"

// The dialect's discardable-attribute helpers name its attribute classes.
#include "memopt/Dialect/MemoptAttrs.h"

#include "memopt/Dialect/MemoptOpsDialect.h.inc"

#endif // MEMOPT_DIALECT_MEMOPTDIALECT_H
