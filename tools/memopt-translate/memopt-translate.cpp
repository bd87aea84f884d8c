//===- memopt-translate.cpp - import and export memopt modules ------------===//
//
// The TorchScript importer and exporter register their translations here
// (--import-torchscript, --export-torchscript), as do the launch stubs
// (--emit-launch-stubs). This driver also round-trips
// the dialect through MLIR bytecode, which the .mlir <-> .mlirbc tests use.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/LaunchStubs.h"
#include "memopt/Dialect/MemoptDialect.h"
#ifdef MEMOPT_HAVE_TORCHSCRIPTIMPORT
#include "memopt/Conversion/TorchScriptImport.h"
#endif
#ifdef MEMOPT_HAVE_TORCHSCRIPTEXPORT
#include "memopt/Conversion/TorchScriptExport.h"
#endif

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

static void registerMemoptDialects(mlir::DialectRegistry &registry) {
  registry.insert<mlir::memopt::MemoptDialect, mlir::func::FuncDialect>();
}

int main(int argc, char **argv) {
#ifdef MEMOPT_HAVE_TORCHSCRIPTIMPORT
  // Likewise for an input file mlir-translate cannot read.
  if (mlir::memopt::reportUnreadableImportInput(argc, argv))
    return 1;
#endif
#ifdef MEMOPT_HAVE_TORCHSCRIPTEXPORT
  // mlir-translate opens -o before translating; report a bad path in
  // memopt's one-line error format instead of its own message.
  if (mlir::memopt::reportUnwritableExportOutput(argc, argv))
    return 1;
#endif
#ifdef MEMOPT_HAVE_TORCHSCRIPTIMPORT
  mlir::memopt::registerTorchScriptImportTranslation();
#endif
#ifdef MEMOPT_HAVE_TORCHSCRIPTEXPORT
  mlir::memopt::registerTorchScriptExportTranslation();
#endif
  mlir::memopt::registerLaunchStubsTranslation();
  mlir::TranslateFromMLIRRegistration toBytecode(
      "memopt-to-bytecode", "write a memopt module as MLIR bytecode",
      [](mlir::Operation *op, llvm::raw_ostream &output) {
        return mlir::writeBytecodeToFile(op, output);
      },
      registerMemoptDialects);
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "memopt import/export driver\n"));
}
