//===- TorchScriptImport.cpp - The importer's entry points ----------------===//
//
// Runs the phases (load, inline, specialize, emit) for every requested method
// and turns whatever goes wrong -- an ImportError, a LibTorch exception -- into
// exactly one error diagnostic. No exception leaves this file.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Conversion/TorchCompat.h"
#include "memopt/Conversion/TorchScriptSource.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <ATen/CPUGeneratorImpl.h>

#include <mutex>
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

/// Sets the per-signature function attributes (docs/importer.md).
static void annotateSignature(func::FuncOp func,
                              const InputSignature &signature, size_t index,
                              bool several) {
  MLIRContext *context = func.getContext();
  Builder builder(context);
  if (several)
    func->setAttr(kSignatureAttrName,
                  SignatureAttr::get(context, index, signature.count));
  if (!signature.budget.empty())
    func->setAttr(kBudgetAttrName, builder.getStringAttr(signature.budget));
  if (signature.passthrough)
    func->setAttr(kPassthroughAttrName, builder.getUnitAttr());
}

/// Checks the options before anything is loaded; emits one error.
static LogicalResult checkOptions(const ImportOptions &options,
                                  MLIRContext *context) {
  Location unknown = UnknownLoc::get(context);
  if (!options.inputs.empty() && !options.signatures.empty())
    return emitError(unknown)
           << "give input shapes either as one set of input specs or as "
              "signatures, not both";
  auto checkDTypes = [&](ArrayRef<InputSpec> specs) -> LogicalResult {
    for (const InputSpec &spec : specs)
      if (!parseDType(spec.dtype))
        return emitError(unknown)
               << "input spec '" << spec.name << "' has unknown dtype '"
               << spec.dtype << "'";
    return success();
  };
  if (failed(checkDTypes(options.inputs)))
    return failure();
  bool several = options.signatures.size() > 1;
  for (auto [index, signature] : llvm::enumerate(options.signatures)) {
    if (failed(checkDTypes(signature.inputs)))
      return failure();
    if (signature.count < 0)
      return emitError(unknown)
             << "signature #" << index << " has a negative count";
    if (several && signature.inputs.empty())
      return emitError(unknown)
             << "signature #" << index
             << " has no input specs; several signatures need shapes";
    for (size_t earlier = 0; earlier < index; ++earlier) {
      const InputSignature &other = options.signatures[earlier];
      if (other.inputs == signature.inputs)
        return emitError(unknown) << "signature #" << index << " ("
                                  << describeSignature(signature.inputs)
                                  << ") repeats signature #" << earlier;
    }
  }
  if (options.methods.empty())
    return emitError(unknown) << "no method to import";
  return success();
}

/// Imports every method for every signature of the module `load` returns
/// (the import runs it: its state changes). Throws ImportError,
/// ExactRunRequired and LibTorch's exceptions; returns null after emitting an
/// error when the result does not verify.
static OwningOpRef<ModuleOp>
importMethods(llvm::function_ref<torch::jit::Module()> load,
              llvm::StringRef sourcePath, const ImportOptions &options,
              const std::vector<InputSignature> &signatures,
              EvaluationMode &mode, MLIRContext *context,
              std::optional<torch::jit::Module> &torchModule,
              std::shared_ptr<torch::jit::Graph> &graph) {
  bool several = signatures.size() > 1;
  torchModule = load();
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(context));
  (*module)->setAttr(kSourceAttrName,
                     StringAttr::get(context, absolutePath(sourcePath)));
  for (const std::string &method : options.methods) {
    for (auto [index, signature] : llvm::enumerate(signatures)) {
      graph = prepareMethodGraph(*torchModule, method);
      std::optional<SpecializedGraph> specialized;
      try {
        specialized = specializeGraph(
            *torchModule, graph, signature.inputs, mode,
            &torchModule->get_method(method).function().getSchema());
      } catch (const ImportError &error) {
        if (!several)
          throw;
        throw ImportError("signature #" + std::to_string(index) + " (" +
                              describeSignature(signature.inputs) +
                              "): " + error.what(),
                          error.node);
      }
      std::string funcName =
          several ? method + "_s" + std::to_string(index) : method;
      func::FuncOp func =
          importGraph(*torchModule, *specialized, funcName, *module);
      annotateSignature(func, signature, index, several);
    }
  }
  if (failed(verifyImported(*module)))
    return nullptr;
  return module;
}

/// importTorchScriptBuffer; with `weights` (see loadSharedSource), the
/// shared source's weights stay in it.
static OwningOpRef<ModuleOp> importArchive(
    llvm::StringRef bytes, std::shared_ptr<llvm::WritableMemoryBuffer> weights,
    llvm::StringRef sourcePath, const ImportOptions &options,
    MLIRContext *context, std::shared_ptr<TorchScriptSource> *source) {
  context->loadDialect<MemoptDialect, func::FuncDialect>();
  Location unknown = UnknownLoc::get(context);
  if (failed(checkOptions(options, context)))
    return nullptr;
  // Plain input specs are one signature without settings.
  std::vector<InputSignature> signatures = options.signatures;
  if (signatures.empty())
    signatures.push_back(InputSignature{options.inputs, 1, "", false});

  ThrowingNewHandler throwOnOutOfMemory;
  compat::CollectingWarningHandler warnings;
  compat::WarningHandlerGuard warningGuard(&warnings);
  // Kept outside the try block: an ImportError points at a node of the graph
  // being imported, which must outlive the handler.
  std::optional<torch::jit::Module> torchModule;
  std::shared_ptr<torch::jit::Graph> graph;
  std::string name = llvm::sys::path::filename(sourcePath).str();
  try {
    // With `source`, the model is loaded once, as torch.jit.load loads it,
    // and each attempt runs a copy of its state; else each attempt loads it
    // onto the CPU.
    std::optional<torch::jit::Module> shared;
    std::vector<std::pair<at::Tensor, int64_t>> parameterVersions;
    if (source)
      shared = loadSharedSource(bytes, name, std::move(weights));
    if (shared)
      for (const at::Tensor &parameter : shared->parameters())
        parameterVersions.emplace_back(parameter, parameter._version());
    // A forward that writes its parameters wrote the shared ones: the export
    // (and a second attempt) then loads the file again.
    auto parametersUnchanged = [&] {
      return llvm::all_of(parameterVersions, [](const auto &parameter) {
        return parameter.first._version() == parameter.second;
      });
    };
    auto load = [&]() -> torch::jit::Module {
      if (shared && parametersUnchanged())
        if (std::optional<torch::jit::Module> copy = copyModuleState(*shared))
          return *copy;
      shared.reset();
      return loadTorchScriptArchive(bytes, name);
    };
    // An import that made up tensor data it then needs starts over from the
    // archive, with the random numbers of the first attempt.
    at::Generator generator = at::detail::getDefaultCPUGenerator();
    at::Tensor randomState;
    {
      std::lock_guard<std::mutex> lock(generator.mutex());
      randomState = generator.get_state();
    }
    EvaluationMode mode;
    OwningOpRef<ModuleOp> module;
    try {
      module = importMethods(load, sourcePath, options, signatures, mode,
                             context, torchModule, graph);
    } catch (const ExactRunRequired &) {
      {
        std::lock_guard<std::mutex> lock(generator.mutex());
        generator.set_state(randomState);
      }
      mode = EvaluationMode{/*allowShapeOnly=*/false};
      module = importMethods(load, sourcePath, options, signatures, mode,
                             context, torchModule, graph);
    }
    if (module && shared && parametersUnchanged())
      *source = std::make_shared<TorchScriptSource>(
          TorchScriptSource{absolutePath(sourcePath), *shared});
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

OwningOpRef<ModuleOp> mlir::memopt::importTorchScriptBuffer(
    llvm::StringRef bytes, llvm::StringRef sourcePath,
    const ImportOptions &options, MLIRContext *context,
    std::shared_ptr<TorchScriptSource> *source) {
  return importArchive(bytes, /*weights=*/nullptr, sourcePath, options, context,
                       source);
}

OwningOpRef<ModuleOp> mlir::memopt::importTorchScriptFile(
    llvm::StringRef path, const ImportOptions &options, MLIRContext *context,
    std::shared_ptr<TorchScriptSource> *source) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(UnknownLoc::get(context))
        << "cannot open '" << path << "': " << buffer.getError().message();
    return nullptr;
  }
  // A second, copy-on-write mapping (read into memory when small) that the
  // shared source's tensors may point into: their writes (a forward that
  // clips its weights) reach neither the file nor the bytes the import
  // loads again from.
  std::shared_ptr<llvm::WritableMemoryBuffer> weights;
  if (source)
    if (auto mapped = llvm::WritableMemoryBuffer::getFile(path))
      weights = std::move(*mapped);
  return importArchive((*buffer)->getBuffer(), weights, path, options, context,
                       source);
}
