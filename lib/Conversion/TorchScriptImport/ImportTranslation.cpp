//===- ImportTranslation.cpp - memopt-translate --import-torchscript ------===//
#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Conversion/RuntimeLibrary.h"
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Conversion/TorchScriptSource.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Probe/KernelProbe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::memopt;

void mlir::memopt::registerTorchScriptImportTranslation() {
  static llvm::cl::list<std::string> inputShapes(
      "input-shape",
      llvm::cl::desc("--import-torchscript: shape of a method input, "
                     "name:D0xD1x...[:f32|f16|bf16|f64|i64|i32|i1], one per "
                     "tensor input in order"),
      llvm::cl::value_desc("spec"));
  static llvm::cl::list<std::string> methods(
      "method",
      llvm::cl::desc("--import-torchscript: method to import (default: "
                     "forward); repeat for several"),
      llvm::cl::value_desc("name"));
  static llvm::cl::list<std::string> signatureSpecs(
      "signature",
      llvm::cl::desc("--import-torchscript: one input signature, "
                     "spec,spec,...[;count=N][;budget=S][;passthrough]; "
                     "repeat for several (functions @<method>_s<i>)"),
      llvm::cl::value_desc("signature"));
  static llvm::cl::opt<std::string> signaturesFile(
      "signatures-file",
      llvm::cl::desc("--import-torchscript: JSON file of recorded input "
                     "signatures (python/memopt/recorder.py); --signature "
                     "options add to it"),
      llvm::cl::value_desc("path"));
  static llvm::cl::opt<bool> probeKernels(
      "probe-kernels",
      llvm::cl::desc("--import-torchscript: run each convolution once with "
                     "this PyTorch and record its kernels' high-water marks "
                     "(`high_water`), as memopt-compile does for --device "
                     "cpu"));
  static llvm::cl::opt<int> probeThreads(
      "probe-threads",
      llvm::cl::desc(
          "--probe-kernels: intra-op threads the kernels run "
          "with (as training will); the module is stamped with them"),
      llvm::cl::init(1));
  static llvm::cl::list<std::string> operatorLibraries(
      "load-library",
      llvm::cl::desc("--import-torchscript: load a library that registers "
                     "operators the model calls (as torch.ops.load_library "
                     "does); repeat for several"),
      llvm::cl::value_desc("path.so"));
  static TranslateToMLIRRegistration registration(
      "import-torchscript", "import a TorchScript .pt into the memopt dialect",
      [](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        ScopedDiagnosticHandler oneLine(context, [](Diagnostic &diagnostic) {
          printOneLineDiagnostic(diagnostic, llvm::errs());
          return success();
        });
        for (const std::string &library : operatorLibraries)
          if (llvm::Error failure = loadOperatorLibrary(library)) {
            emitError(UnknownLoc::get(context))
                << llvm::toString(std::move(failure));
            return nullptr;
          }
        ImportOptions options;
        for (const std::string &text : inputShapes) {
          std::string error;
          FailureOr<InputSpec> spec = parseInputSpec(text, error);
          if (failed(spec)) {
            emitError(UnknownLoc::get(context)) << error;
            return nullptr;
          }
          options.inputs.push_back(*spec);
        }
        if (!signaturesFile.empty()) {
          std::string error;
          auto recorded = readSignatureFile(signaturesFile, error);
          if (failed(recorded)) {
            emitError(UnknownLoc::get(context)) << error;
            return nullptr;
          }
          options.signatures = std::move(*recorded);
        }
        for (const std::string &text : signatureSpecs) {
          std::string error;
          FailureOr<InputSignature> signature = parseSignatureSpec(text, error);
          if (failed(signature)) {
            emitError(UnknownLoc::get(context)) << error;
            return nullptr;
          }
          options.signatures.push_back(std::move(*signature));
        }
        if (!methods.empty())
          options.methods.assign(methods.begin(), methods.end());
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        std::shared_ptr<TorchScriptSource> source;
        OwningOpRef<ModuleOp> imported = importTorchScriptBuffer(
            buffer->getBuffer(), buffer->getBufferIdentifier(), options,
            context, probeKernels ? &source : nullptr);
        if (imported && probeKernels) {
          KernelProbeOptions probeOptions;
          probeOptions.threads = probeThreads;
          probeOptions.source = source.get();
          if (failed(probeKernelHighWaters(*imported, probeOptions)))
            return nullptr;
          // The formulas then assume the threads the marks were made with.
          if (probeThreads > 1)
            (*imported)->setAttr(
                kIntraOpThreadsAttrName,
                Builder(context).getI64IntegerAttr(probeThreads));
        }
        return OwningOpRef<Operation *>(imported.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<MemoptDialect, func::FuncDialect>();
      });
}

/// Options of memopt-translate that take their value as the next argument.
static bool takesSeparateValue(llvm::StringRef arg) {
  arg = arg.ltrim('-');
  return arg == "o" || arg == "input-shape" || arg == "method" ||
         arg == "signature" || arg == "signatures-file" ||
         arg == "load-library";
}

bool mlir::memopt::reportUnreadableImportInput(int argc, char **argv) {
  bool importing = false;
  std::string input = "-";
  bool haveInput = false;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (arg.ltrim('-') == "import-torchscript") {
      importing = true;
    } else if (arg.starts_with("-") && arg != "-") {
      if (takesSeparateValue(arg) && !arg.contains('='))
        ++i;
    } else if (!haveInput) {
      input = arg.str();
      haveInput = true;
    }
  }
  if (!importing || input == "-")
    return false;
  int fd;
  std::error_code error = llvm::sys::fs::openFileForRead(input, fd);
  if (!error) {
    llvm::sys::Process::SafelyCloseFileDescriptor(fd);
    if (!llvm::sys::fs::is_directory(input))
      return false;
    error = std::make_error_code(std::errc::is_a_directory);
  }
  llvm::errs() << "memopt: error: cannot open '" << input
               << "': " << error.message() << "\n";
  return true;
}
