//===- memopt-opt.cpp - run memopt passes on .mlir files ------------------===//
#include "memopt/Analysis/TestPasses.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringRef.h"

#include <atomic>

/// Set when any error diagnostic is emitted. MLIR 19's parser can report an
/// error and still return the module (a stray character right after a
/// dialect attribute, e.g. `[#memopt.arg<0>.]`, found by the .mlir fuzzer):
/// MlirOptMain would then exit 0 with the error printed.
static std::atomic<bool> errorEmitted{false};

static bool verifiesDiagnostics(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (llvm::StringRef(argv[i]).ltrim('-') == "verify-diagnostics")
      return true;
  return false;
}

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  mlir::memopt::registerAllMemoptPasses();
  mlir::memopt::registerAnalysisTestPasses();

  mlir::DialectRegistry registry;
  registry.insert<mlir::memopt::MemoptDialect, mlir::func::FuncDialect>();
  // Every context that loads the dialect counts its errors; the handler
  // declines each diagnostic so that MlirOptMain's own handlers print it.
  registry.addExtension(+[](mlir::MLIRContext *context,
                            mlir::memopt::MemoptDialect *) {
    context->getDiagEngine().registerHandler([](mlir::Diagnostic &diagnostic) {
      if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
        errorEmitted = true;
      return mlir::failure();
    });
  });
  mlir::LogicalResult result = mlir::MlirOptMain(
      argc, argv, "memopt training-memory optimizer driver\n", registry);
  // -verify-diagnostics compares the errors with the expected ones itself.
  if (succeeded(result) && errorEmitted && !verifiesDiagnostics(argc, argv))
    return 1;
  return mlir::asMainReturnCode(result);
}
