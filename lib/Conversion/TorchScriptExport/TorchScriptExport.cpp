//===- TorchScriptExport.cpp - Export entry points ------------------------===//
//
// The boundary between MLIR and LibTorch: everything that may throw runs
// inside a try block here, and every failure leaves as one diagnostic.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/TorchScriptExport.h"
#include "memopt/Conversion/TorchScriptExportModule.h"

#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

#include <torch/csrc/jit/serialization/import.h>

#include <sstream>

using namespace mlir;
using namespace mlir::memopt;

/// LibTorch messages without the C++ backtrace, on one line.
static std::string describe(const std::exception &error) {
  std::string text;
  if (auto *c10Error = dynamic_cast<const c10::Error *>(&error))
    text = c10Error->what_without_backtrace();
  else
    text = error.what();
  llvm::StringRef first = llvm::StringRef(text).trim().split('\n').first;
  return first.trim().str();
}

static std::optional<torch::jit::Module> build(ModuleOp module,
                                               const torch::jit::Module &source,
                                               llvm::StringRef sourceName) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal()) {
    module.emitError("no func.func @forward with a body to export");
    return std::nullopt;
  }
  torch::jit::Module root = exporter::rebuildModuleHierarchy(source);
  if (failed(exporter::verifyModuleState(module, root, sourceName)))
    return std::nullopt;
  // One method per signature function and a dispatching forward, sharing
  // the module's state (memopt-specialize-signatures).
  FailureOr<DispatchOp> dispatch = exporter::findEntryDispatch(forward);
  if (failed(dispatch))
    return std::nullopt;
  if (*dispatch) {
    if (failed(exporter::addDispatchMethods(*dispatch, root, source)))
      return std::nullopt;
    return root;
  }
  std::shared_ptr<torch::jit::Graph> graph =
      exporter::buildForwardGraph(forward, root.type(), source);
  if (!graph)
    return std::nullopt;
  auto *function = root._ivalue()->compilation_unit()->create_function(
      c10::QualifiedName(*root.type()->name(), "forward"), graph);
  root.type()->addMethod(function);
  return root;
}

std::optional<torch::jit::Module>
mlir::memopt::buildTorchScriptModule(ModuleOp module,
                                     const torch::jit::Module &source) {
  auto sourceAttr = module->getAttrOfType<StringAttr>(kSourceAttrName);
  std::string sourceName = sourceAttr ? "'" + sourceAttr.str() + "'"
                                      : std::string("the source model");
  try {
    return build(module, source, sourceName);
  } catch (const std::exception &error) {
    module.emitError("TorchScript export failed: ") << describe(error);
    return std::nullopt;
  }
}

/// The module named by `memopt.source`, which holds the weights.
static std::optional<torch::jit::Module> loadSource(ModuleOp module) {
  auto path = module->getAttrOfType<StringAttr>(kSourceAttrName);
  if (!path) {
    module.emitError("cannot export: the module has no '")
        << kSourceAttrName
        << "' string attribute naming the source .pt that holds the weights";
    return std::nullopt;
  }
  if (!llvm::sys::fs::is_regular_file(path.getValue())) {
    module.emitError("cannot export: source model '")
        << path.getValue() << "' (" << kSourceAttrName << ") does not exist";
    return std::nullopt;
  }
  try {
    return torch::jit::load(path.str());
  } catch (const std::exception &error) {
    module.emitError("cannot export: source model '")
        << path.getValue() << "' does not load: " << describe(error);
    return std::nullopt;
  }
}

/// Serializes `module`; reloads the bytes first to prove the saved code
/// compiles, since users will load it with torch.jit.load.
static std::optional<std::string> serialize(ModuleOp op,
                                            const torch::jit::Module &module) {
  try {
    std::ostringstream bytes;
    module.save(bytes);
    std::string data = bytes.str();
    std::istringstream in(data);
    (void)torch::jit::load(in);
    return data;
  } catch (const std::exception &error) {
    op.emitError("TorchScript export produced a module that does not save "
                 "and load: ")
        << describe(error);
    return std::nullopt;
  }
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              const torch::jit::Module &source,
                                              llvm::raw_ostream &output) {
  std::vector<c10::RegistrationHandleRAII> runtimeOps;
  try {
    runtimeOps = exporter::declareRuntimeOps();
  } catch (const std::exception &error) {
    return module.emitError("cannot declare the runtime's operators: ")
           << describe(error);
  }
  std::optional<torch::jit::Module> exported =
      buildTorchScriptModule(module, source);
  if (!exported)
    return failure();
  std::optional<std::string> data = serialize(module, *exported);
  if (!data)
    return failure();
  output.write(data->data(), data->size());
  output.flush();
  return success();
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              llvm::raw_ostream &output) {
  std::optional<torch::jit::Module> source = loadSource(module);
  if (!source)
    return failure();
  return exportTorchScript(module, *source, output);
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              llvm::StringRef outputPath) {
  std::error_code error;
  llvm::ToolOutputFile file(outputPath, error, llvm::sys::fs::OF_None);
  if (error)
    return module.emitError("cannot write '")
           << outputPath << "': " << error.message();
  if (failed(exportTorchScript(module, file.os())))
    return failure();
  if (file.os().has_error())
    return module.emitError("cannot write '")
           << outputPath << "': " << file.os().error().message();
  file.keep();
  return success();
}
