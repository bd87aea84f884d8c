//===- MemoptDialect.cpp - The memopt dialect -----------------------------===//
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptOps.h"

using namespace mlir;
using namespace mlir::memopt;

#include "memopt/Dialect/MemoptOpsDialect.cpp.inc"

void MemoptDialect::initialize() {
  registerAttributes();
  registerTypes();
  addOperations<
#define GET_OP_LIST
#include "memopt/Dialect/MemoptOps.cpp.inc"
      >();
}
