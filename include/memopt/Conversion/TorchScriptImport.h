//===- TorchScriptImport.h - TorchScript .pt to the memopt dialect -*- C++
//-*-===//
//
// Loads a TorchScript archive with LibTorch, inlines the requested methods and
// emits one `func.func` per method in the memopt dialect. This header is free
// of torch headers so that tools and tests can include it without LibTorch.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_TORCHSCRIPTIMPORT_H
#define MEMOPT_CONVERSION_TORCHSCRIPTIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::memopt {

/// One method input: `x:8x3x224x224[:f32]`. The dtype is one of f32, f16,
/// bf16, f64, i64, i32, i1.
struct InputSpec {
  std::string name;
  llvm::SmallVector<int64_t> shape;
  std::string dtype = "f32";
};

/// Parses `name:D0xD1x...[:dtype]` (a scalar is `name:` with no dims, e.g.
/// `s::f32` or `s:`). On failure returns failure() and sets `error`.
llvm::FailureOr<InputSpec> parseInputSpec(llvm::StringRef text,
                                          std::string &error);

struct ImportOptions {
  /// One spec per tensor input of every imported method (without `self`), in
  /// order. Empty: tensors get unranked types and nothing is executed.
  std::vector<InputSpec> inputs;
  /// Methods to import; each becomes a `func.func` of the same name.
  std::vector<std::string> methods = {"forward"};
};

/// Imports the TorchScript archive at `path`. Returns null after emitting
/// exactly one error diagnostic on `context`.
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScriptFile(llvm::StringRef path, const ImportOptions &options,
                      mlir::MLIRContext *context);

/// Same, for an archive already in memory; `sourcePath` is what the module's
/// `memopt.source` attribute records (made absolute when it names a file).
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScriptBuffer(llvm::StringRef bytes, llvm::StringRef sourcePath,
                        const ImportOptions &options,
                        mlir::MLIRContext *context);

/// Registers `--import-torchscript` (with `--input-shape` and `--method`) for
/// mlir-translate style drivers. Diagnostics print as one line each:
/// `memopt: error: <message>[, at <module path> (<file>:<line>)]`.
void registerTorchScriptImportTranslation();

/// Tools that call importTorchScriptFile print its diagnostics with
/// printOneLineDiagnostic (memopt/Conversion/OneLineDiagnostic.h).

/// For drivers: when `argv` asks for `--import-torchscript` and the input file
/// cannot be read, prints the one-line `memopt: error:` diagnostic and returns
/// true (the driver should exit with failure). mlir-translate's own message
/// for an unreadable input is not in that form.
bool reportUnreadableImportInput(int argc, char **argv);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_TORCHSCRIPTIMPORT_H
