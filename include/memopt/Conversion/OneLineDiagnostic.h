//===- OneLineDiagnostic.h - memopt's one-line error format -----*- C++ -*-===//
//
// Import, export and memopt-compile report every problem as one line:
//   memopt: <severity>: <message>[, at <module path> (<file>:<line>)]
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_ONELINEDIAGNOSTIC_H
#define MEMOPT_CONVERSION_ONELINEDIAGNOSTIC_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::memopt {

/// "features.3 (model.py:42)", "model.py:42", "features.3" or "".
std::string describeLocation(Location loc);

/// Prints `diagnostic` in the one-line form (newlines in LibTorch messages
/// are folded into spaces).
void printOneLineDiagnostic(Diagnostic &diagnostic, llvm::raw_ostream &os);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_ONELINEDIAGNOSTIC_H
