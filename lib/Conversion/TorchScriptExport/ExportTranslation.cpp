//===- ExportTranslation.cpp - memopt-translate --export-torchscript ------===//
//
// The mlir-translate registration and its driver-facing helpers. Errors
// print as one line each, like the importer's:
//   memopt: error: <message>[, at <module path> (<file>:<line>)]
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Conversion/TorchScriptExport.h"

#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <optional>

using namespace mlir;
using namespace mlir::memopt;

/// Why `path` cannot be created or overwritten, or "" when it can.
static std::string unwritableReason(llvm::StringRef path) {
  if (path == "-")
    return "";
  if (llvm::sys::fs::is_directory(path))
    return "it is a directory";
  if (llvm::sys::fs::exists(path))
    return llvm::sys::fs::access(path, llvm::sys::fs::AccessMode::Write)
               ? "permission denied"
               : "";
  llvm::SmallString<256> parent(path);
  llvm::sys::path::remove_filename(parent);
  if (parent.empty())
    parent = ".";
  if (!llvm::sys::fs::is_directory(parent))
    return "directory '" + parent.str().str() + "' does not exist";
  if (llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write))
    return "directory '" + parent.str().str() + "' is not writable";
  return "";
}

bool mlir::memopt::reportUnwritableExportOutput(int argc, char **argv) {
  bool exporting = false;
  std::optional<std::string> output;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg == "--export-torchscript" || arg == "-export-torchscript")
      exporting = true;
    else if ((arg == "-o" || arg == "--o") && i + 1 < argc)
      output = argv[++i];
    else if (arg.consume_front("-o=") || arg.consume_front("--o="))
      output = arg.str();
  }
  if (!exporting || !output)
    return false;
  std::string reason = unwritableReason(*output);
  if (reason.empty())
    return false;
  llvm::errs() << "memopt: error: cannot write '" << *output << "': " << reason
               << "\n";
  return true;
}

//===----------------------------------------------------------------------===//
// memopt-translate --export-torchscript
//===----------------------------------------------------------------------===//

/// Where a diagnostic points, in the importer's style: `file:line` of the
/// innermost file location, after the module path of a name location:
/// "features.3 (model.py:42)".
/// mlir-translate's -verify-diagnostics handler must see our diagnostics.
static bool verifyingDiagnostics() {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find("verify-diagnostics");
  return it != options.end() &&
         static_cast<llvm::cl::opt<bool> *>(it->second)->getValue();
}

void mlir::memopt::registerTorchScriptExportTranslation() {
  static TranslateFromMLIRRegistration registration(
      "export-torchscript",
      "write a memopt module as a TorchScript .pt (binary, to -o)",
      [](Operation *op, llvm::raw_ostream &output) -> LogicalResult {
        // One line per error, as the importer prints them:
        // "memopt: error: <message>[, at <module path> (<file>:<line>)]".
        std::optional<ScopedDiagnosticHandler> oneLine;
        if (!verifyingDiagnostics())
          oneLine.emplace(op->getContext(), [](Diagnostic &diag) {
            if (diag.getSeverity() == DiagnosticSeverity::Error)
              printOneLineDiagnostic(diag, llvm::errs());
            return success();
          });
        auto module = dyn_cast<ModuleOp>(op);
        if (!module)
          return op->emitError("expected a builtin.module to export");
        return exportTorchScript(module, output);
      },
      [](DialectRegistry &registry) {
        registry.insert<MemoptDialect, func::FuncDialect>();
      });
}
