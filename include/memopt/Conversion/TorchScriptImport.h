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
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mlir::memopt {

/// The dtypes an input's spec (or a signature file) may name.
inline constexpr llvm::StringLiteral kInputDTypes[] = {
    "f32", "f16", "bf16", "f64", "i64", "i32", "i1"};

/// One method input: `x:8x3x224x224[:f32]`. The dtype is one of
/// kInputDTypes.
struct InputSpec {
  std::string name;
  llvm::SmallVector<int64_t> shape;
  std::string dtype = "f32";

  bool operator==(const InputSpec &other) const {
    return name == other.name && shape == other.shape && dtype == other.dtype;
  }
  bool operator!=(const InputSpec &other) const { return !(*this == other); }
};

/// Parses `name:D0xD1x...[:dtype]` (a scalar is `name:` with no dims, e.g.
/// `s::f32` or `s:`). On failure returns failure() and sets `error`.
llvm::FailureOr<InputSpec> parseInputSpec(llvm::StringRef text,
                                          std::string &error);

/// One input signature of a method: the shapes and dtypes of its tensor
/// inputs, how often it was seen, and per-signature compile settings.
struct InputSignature {
  /// One spec per tensor input (without `self`), in order; as
  /// ImportOptions::inputs.
  std::vector<InputSpec> inputs;
  /// How often training called the method with this signature (recorded by
  /// python/memopt/recorder.py; 1 when declared by hand). Dispatch tries
  /// frequent signatures first.
  int64_t count = 1;
  /// A memory budget for this signature's plan ("2GiB", "60%"), as the
  /// planner reads it; empty: the global budget. Carried as `memopt.budget`.
  std::string budget;
  /// Compile this signature without memory optimizations
  /// (`memopt.passthrough`).
  bool passthrough = false;
};

/// Parses one `--signature` value: comma-separated input specs (as
/// parseInputSpec), then optional `;`-separated settings `count=N`,
/// `budget=S` and `passthrough`, e.g.
/// `x:8x3x224x224,mask:8x224:i1;count=37;budget=2GiB`. On failure returns
/// failure() and sets `error` (one line).
llvm::FailureOr<InputSignature> parseSignatureSpec(llvm::StringRef text,
                                                   std::string &error);

/// Reads a recorded-signatures JSON file (written by
/// python/memopt/recorder.py):
///   {"version": 1, "signatures": [
///      {"inputs": [{"name": "x", "shape": [8, 3, 224, 224], "dtype": "f32"}],
///       "count": 37, "budget": "2GiB", "passthrough": false}, ...]}
/// `count` (default 1), `dtype` (default f32), `budget` and `passthrough`
/// are optional. On failure returns failure() and sets `error` to one line
/// naming the file and what is wrong
/// ("'s.json': signatures[1].inputs[0].shape[2] is -3, expected a
/// non-negative integer").
llvm::FailureOr<std::vector<InputSignature>>
readSignatureFile(llvm::StringRef path, std::string &error);

/// Same, for file contents already in memory; `displayName` is used in
/// messages.
llvm::FailureOr<std::vector<InputSignature>>
parseSignatureJSON(llvm::StringRef text, llvm::StringRef displayName,
                   std::string &error);

/// "x: 8x3x32x32 f32, y: 8 i64": how messages and the exported dispatcher
/// name a signature.
std::string describeSignature(llvm::ArrayRef<InputSpec> inputs);
/// `x:8x3x32x32,y:8:i64`: the specs of one signature in `--spec` syntax
/// (parseSignatureSpec reads it back).
std::string formatSignature(llvm::ArrayRef<InputSpec> inputs);

struct ImportOptions {
  /// One spec per tensor input of every imported method (without `self`), in
  /// order. Empty: tensors get unranked types and nothing is executed.
  /// Exclusive with `signatures`.
  std::vector<InputSpec> inputs;
  /// Several input signatures. With one, the result is the same as with
  /// `inputs` (`func.func @<method>`, plus `memopt.budget` /
  /// `memopt.passthrough` when set). With several, each method is imported
  /// once per signature as `@<method>_s<i>` (i = position in this list) with
  /// static types from that signature and the function attributes
  ///   memopt.signature = #memopt.signature<index = i, count = N>
  ///   memopt.budget = "<budget>"   (when set)
  ///   memopt.passthrough           (when set)
  /// `memopt-specialize-signatures` then builds the dispatching `@<method>`.
  std::vector<InputSignature> signatures;
  /// Methods to import; each becomes a `func.func` of the same name.
  std::vector<std::string> methods = {"forward"};
};

// The attribute names the importer sets (kSignatureAttrName, ...) are the
// dialect's: memopt/Dialect/MemoptAttrNames.h.

/// The source model as the import loaded it, unchanged (the import runs a
/// copy of its state): an export in the same process (TorchScriptExport.h)
/// takes the weights from it instead of loading the file again. LibTorch
/// code reads it through TorchScriptSource.h.
struct TorchScriptSource;

/// Imports the TorchScript archive at `path`. Returns null after emitting
/// exactly one error diagnostic on `context`. With `source`, also hands over
/// the loaded model there, when it can be shared (else it stays null).
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScriptFile(llvm::StringRef path, const ImportOptions &options,
                      mlir::MLIRContext *context,
                      std::shared_ptr<TorchScriptSource> *source = nullptr);

/// Same, for an archive already in memory; `sourcePath` is what the module's
/// `memopt.source` attribute records (made absolute when it names a file).
mlir::OwningOpRef<mlir::ModuleOp>
importTorchScriptBuffer(llvm::StringRef bytes, llvm::StringRef sourcePath,
                        const ImportOptions &options,
                        mlir::MLIRContext *context,
                        std::shared_ptr<TorchScriptSource> *source = nullptr);

/// Registers `--import-torchscript` (with `--input-shape`, `--signature`,
/// `--signatures-file` and `--method`) for mlir-translate style drivers.
/// Diagnostics print as one line each:
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
