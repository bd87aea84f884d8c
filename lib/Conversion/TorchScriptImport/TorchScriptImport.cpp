//===- TorchScriptImport.cpp - The importer's entry points ----------------===//
//
// Runs the phases (load, inline, specialize, emit) for every requested method
// and turns whatever goes wrong -- an ImportError, a LibTorch exception -- into
// exactly one error diagnostic. No exception leaves this file.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Conversion/TorchCompat.h"
#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <new>

using namespace mlir;
using namespace mlir::memopt;
using namespace mlir::memopt::detail;

/// Verifies the imported module; a failure is an importer bug, reported as one
/// diagnostic (the verifier's first message) instead of many.
static LogicalResult verifyImported(ModuleOp module) {
  std::string firstError;
  Location firstLoc = module.getLoc();
  LogicalResult result = success();
  {
    ScopedDiagnosticHandler capture(module.getContext(), [&](Diagnostic &diag) {
      if (firstError.empty() &&
          diag.getSeverity() == DiagnosticSeverity::Error) {
        firstError = diag.str();
        firstLoc = diag.getLocation();
      }
      return success();
    });
    result = verify(module);
  }
  if (failed(result))
    emitError(firstLoc) << "internal error: the imported module does not "
                           "verify: "
                        << firstError;
  return result;
}

namespace {
/// LLVM tools install a new-handler that aborts on allocation failure;
/// LibTorch sizes some allocations from file contents (a damaged pickle can
/// ask for gigabytes), so inside the importer a failed `new` must throw
/// std::bad_alloc and become a diagnostic instead.
class ThrowingNewHandler {
public:
  ThrowingNewHandler() : previous(std::set_new_handler(nullptr)) {}
  ~ThrowingNewHandler() { std::set_new_handler(previous); }

private:
  std::new_handler previous;
};
} // namespace

static std::string absolutePath(llvm::StringRef path) {
  llvm::SmallString<256> absolute(path);
  if (path != "-" && !path.starts_with("<"))
    (void)llvm::sys::fs::make_absolute(absolute);
  return std::string(absolute);
}

OwningOpRef<ModuleOp> mlir::memopt::importTorchScriptBuffer(
    llvm::StringRef bytes, llvm::StringRef sourcePath,
    const ImportOptions &options, MLIRContext *context) {
  context->loadDialect<MemoptDialect, func::FuncDialect>();
  Location unknown = UnknownLoc::get(context);
  for (const InputSpec &spec : options.inputs)
    if (!parseDType(spec.dtype)) {
      emitError(unknown) << "input spec '" << spec.name
                         << "' has unknown dtype '" << spec.dtype << "'";
      return nullptr;
    }
  if (options.methods.empty()) {
    emitError(unknown) << "no method to import";
    return nullptr;
  }

  ThrowingNewHandler throwOnOutOfMemory;
  compat::CollectingWarningHandler warnings;
  compat::WarningHandlerGuard warningGuard(&warnings);
  // Kept outside the try block: an ImportError points at a node of the graph
  // being imported, which must outlive the handler.
  std::optional<torch::jit::Module> torchModule;
  std::shared_ptr<torch::jit::Graph> graph;
  std::string name = llvm::sys::path::filename(sourcePath).str();
  try {
    torchModule = loadTorchScriptArchive(bytes, name);
    OwningOpRef<ModuleOp> module = ModuleOp::create(unknown);
    (*module)->setAttr("memopt.source",
                       StringAttr::get(context, absolutePath(sourcePath)));
    for (const std::string &method : options.methods) {
      graph = prepareMethodGraph(*torchModule, method);
      SpecializedGraph specialized =
          specializeGraph(*torchModule, graph, options.inputs);
      importGraph(*torchModule, specialized, method, *module);
    }
    if (failed(verifyImported(*module)))
      return nullptr;
    return module;
  } catch (const ImportError &error) {
    Location loc = unknown;
    try {
      if (error.node)
        loc = locationOf(error.node, context);
    } catch (...) {
      // Keep the message even when the node's debug info is unreadable.
    }
    emitError(loc) << error.what();
  } catch (const std::exception &error) {
    emitError(unknown) << "LibTorch failed while importing '" << name
                       << "': " << describeTorchException(error);
  } catch (...) {
    emitError(unknown) << "unknown failure while importing '" << name << "'";
  }
  return nullptr;
}

OwningOpRef<ModuleOp> mlir::memopt::importTorchScriptFile(
    llvm::StringRef path, const ImportOptions &options, MLIRContext *context) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(UnknownLoc::get(context))
        << "cannot open '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  return importTorchScriptBuffer((*buffer)->getBuffer(), path, options,
                                 context);
}
