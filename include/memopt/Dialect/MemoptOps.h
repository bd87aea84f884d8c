//===- MemoptOps.h - memopt operations --------------------------*- C++ -*-===//
#ifndef MEMOPT_DIALECT_MEMOPTOPS_H
#define MEMOPT_DIALECT_MEMOPTOPS_H

#include "memopt/Dialect/MemoptAttrs.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Dialect/MemoptTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "memopt/Dialect/MemoptOps.h.inc"

namespace mlir::memopt {
/// A statically shaped f32, f16 or bf16 tensor: what a region input saved
/// with `#memopt.compress<...>` must be.
bool isCompressibleTensor(Type type);
} // namespace mlir::memopt

#endif // MEMOPT_DIALECT_MEMOPTOPS_H
