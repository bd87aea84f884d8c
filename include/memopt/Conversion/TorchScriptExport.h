//===- TorchScriptExport.h - memopt dialect to TorchScript .pt --*- C++ -*-===//
//
// Writes a memopt module back as a TorchScript `.pt` that trains like the
// model it was imported from. Weights travel by reference: the module's
// `memopt.source` attribute names the original `.pt`, whose parameters,
// buffers and attributes are copied into a rebuilt module hierarchy with the
// same names, so `state_dict()` keys are the original ones.
//
// This header is free of LibTorch types; TorchScriptExportModule.h offers the
// same export against a source module already loaded in memory.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_TORCHSCRIPTEXPORT_H
#define MEMOPT_CONVERSION_TORCHSCRIPTEXPORT_H

#include "memopt/Dialect/MemoptAttrNames.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::memopt {

/// Exports `@forward` of `module` (and the state of the `.pt` named by
/// `memopt.source`) as a TorchScript module saved to `outputPath`. Emits one
/// error diagnostic on failure.
LogicalResult exportTorchScript(ModuleOp module, llvm::StringRef outputPath);

/// Same, writing the serialized `.pt` (a zip archive) to `output`, which may
/// hold part of one after a failure.
LogicalResult exportTorchScript(ModuleOp module, llvm::raw_ostream &output);

struct TorchScriptSource;

/// What the exporter's forward check did (ForwardCheck.h): each compiled
/// signature's forward run once, after the module is written, with its
/// outputs compared bit for bit with the source's.
struct ForwardCheckResult {
  /// Calls that ran and matched the source's outputs.
  unsigned compared = 0;
  /// Why the check, or one of its calls, did not compare (empty: all did).
  std::vector<std::string> notCompared;
  double seconds = 0;
};

/// exportTorchScript(module, output), with the weights from `source` (see
/// importTorchScriptFile) when it is the model `memopt.source` names.
LogicalResult exportTorchScript(ModuleOp module,
                                const TorchScriptSource *source,
                                llvm::raw_ostream &output);

/// Same, and when `check` is given, runs the built module's forward once
/// per signature once it is written (the runtime library must be loaded:
/// RuntimeLibrary.h); a failure or an output unlike the source's is the
/// export's error, and the caller discards what `output` got (memopt-compile
/// writes to a temporary file, renamed only on success).
LogicalResult exportTorchScript(ModuleOp module,
                                const TorchScriptSource *source,
                                llvm::raw_ostream &output,
                                ForwardCheckResult *check);

/// Registers `--export-torchscript` with mlir-translate's registry. The `.pt`
/// bytes go to the translation's output stream, i.e. the `-o` file.
void registerTorchScriptExportTranslation();

/// For drivers: when `argv` asks for `--export-torchscript` and the `-o`
/// path cannot be written, prints the one-line `memopt: error:` diagnostic
/// and returns true (the driver should exit with failure). mlir-translate
/// opens `-o` before any translation runs, with its own message.
bool reportUnwritableExportOutput(int argc, char **argv);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_TORCHSCRIPTEXPORT_H
