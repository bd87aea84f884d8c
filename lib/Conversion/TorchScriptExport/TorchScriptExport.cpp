//===- TorchScriptExport.cpp - Export entry points ------------------------===//
//
// The boundary between MLIR and LibTorch: everything that may throw runs
// inside a try block here, and every failure leaves as one diagnostic.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/TorchScriptExport.h"
#include "memopt/Conversion/FatalSignalGuard.h"
#include "memopt/Conversion/ModuleArchive.h"
#include "memopt/Conversion/TorchScriptExportModule.h"
#include "memopt/Conversion/TorchScriptSource.h"

#include "ExportInternal.h"

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

#include <ATen/Functions.h>
#include <torch/csrc/jit/serialization/import.h>

#include <chrono>
#include <future>
#include <sstream>

using namespace mlir;
using namespace mlir::memopt;

std::string exporter::describeError(const std::exception &error) {
  std::string text;
  if (auto *c10Error = dynamic_cast<const c10::Error *>(&error))
    text = c10Error->what_without_backtrace();
  else
    text = error.what();
  llvm::StringRef all = llvm::StringRef(text).trim();
  if (all.empty())
    return "(no message)";
  // The TorchScript interpreter puts a traceback in front of the error: its
  // last line is "RuntimeError: <what the op said>".
  if (all.contains("failed in the TorchScript interpreter")) {
    llvm::StringRef last = all.rsplit('\n').second.trim();
    auto [kind, message] = last.split(": ");
    if (kind.ends_with("Error") && !kind.contains(' ') && !message.empty())
      return message.str();
    return last.str();
  }
  return all.split('\n').first.trim().str();
}

/// Inputs left out of the input specs keep their default in the exported
/// forward's schema, so that calls without them bind as on the source
/// model (the forward checks they get no other value).
static LogicalResult setBoundDefaults(func::FuncOp forward,
                                      torch::jit::Function &function) {
  const c10::FunctionSchema &schema = function.getSchema();
  std::vector<c10::Argument> arguments = schema.arguments();
  bool changed = false;
  for (BlockArgument arg : forward.getArguments()) {
    Attribute bound =
        forward.getArgAttr(arg.getArgNumber(), kBoundDefaultAttrName);
    size_t position = arg.getArgNumber() + 1; // after self
    if (!bound || position >= arguments.size())
      continue;
    c10::Argument &argument = arguments[position];
    std::string error;
    auto value = exporter::convertConstant(bound, argument.type(), error);
    if (!value)
      return forward.emitError("input '")
             << argument.name() << "' (" << kBoundDefaultAttrName
             << "): " << error;
    argument = c10::Argument(argument.name(), argument.type(), argument.N(),
                             *value, argument.kwarg_only());
    changed = true;
  }
  if (changed)
    function.setSchema(schema.cloneWithArguments(std::move(arguments)));
  return success();
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
  if (failed(setBoundDefaults(forward, *function)))
    return std::nullopt;
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
    module.emitError("TorchScript export failed: ")
        << exporter::describeError(error);
    return std::nullopt;
  }
}

/// The module named by `memopt.source`, which holds the weights: `shared`
/// when that is the file it was loaded from.
static std::optional<torch::jit::Module>
loadSource(ModuleOp module, const TorchScriptSource *shared) {
  auto path = module->getAttrOfType<StringAttr>(kSourceAttrName);
  if (!path) {
    module.emitError("cannot export: the module has no '")
        << kSourceAttrName
        << "' string attribute naming the source .pt that holds the weights";
    return std::nullopt;
  }
  if (shared && shared->path == path.getValue())
    return shared->module;
  if (!llvm::sys::fs::is_regular_file(path.getValue())) {
    module.emitError("cannot export: source model '")
        << path.getValue() << "' (" << kSourceAttrName << ") does not exist";
    return std::nullopt;
  }
  try {
    return torch::jit::load(path.str());
  } catch (const std::exception &error) {
    module.emitError("cannot export: source model '")
        << path.getValue()
        << "' does not load: " << exporter::describeError(error);
    return std::nullopt;
  }
}

/// Puts the tensors of `full` into the slots of `skeleton`, its reloaded
/// copy with empty tensors (saveModuleSkeleton): same classes, same slots.
static void
withTensorsOf(const c10::intrusive_ptr<c10::ivalue::Object> &skeleton,
              const c10::intrusive_ptr<c10::ivalue::Object> &full) {
  size_t slots = std::min(skeleton->slots().size(), full->slots().size());
  for (size_t i = 0; i < slots; ++i) {
    const c10::IValue &value = full->getSlot(i);
    if (value.isTensor())
      skeleton->setSlot(i, value);
    else if (value.isObject() && value.toObject()->type()->is_module() &&
             skeleton->getSlot(i).isObject())
      withTensorsOf(skeleton->getSlot(i).toObject(), value.toObject());
  }
}

/// Runs the built module once per signature (ForwardCheck.h); an error on
/// `module` when it fails or computes otherwise than the source.
static LogicalResult checkForward(ModuleOp module,
                                  const torch::jit::Module &exported,
                                  const torch::jit::Module &source,
                                  ForwardCheckResult &result) {
  auto started = std::chrono::steady_clock::now();
  std::string why;
  FailureOr<std::vector<ForwardCheckCall>> calls =
      exporter::forwardCheckCalls(module, why);
  if (failed(calls)) {
    result.notCompared.push_back(why);
    return success();
  }
  // A fault in a kernel (or in the compiled code) is one line, as the
  // import's and the kernel probe's are.
  FatalSignalGuard guard(
      "memopt: error: PyTorch crashed (",
      ") running the compiled model once, as memopt-compile does before it "
      "reports success (--no-check-forward skips it); nothing was written");
  ForwardCheckOutcome outcome = checkCompiledForward(exported, source, *calls);
  result.compared = outcome.compared;
  result.notCompared = outcome.notCompared;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  if (!outcome.error.empty())
    return module.emitError(outcome.error);
  return success();
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              const torch::jit::Module &source,
                                              llvm::raw_ostream &output,
                                              ForwardCheckResult *check) {
  std::vector<c10::RegistrationHandleRAII> runtimeOps;
  try {
    runtimeOps = exporter::declareRuntimeOps();
  } catch (const std::exception &error) {
    return module.emitError("cannot declare the runtime's operators: ")
           << exporter::describeError(error);
  }
  std::optional<torch::jit::Module> exported =
      buildTorchScriptModule(module, source);
  if (!exported)
    return failure();
  auto notLoading = [&](const std::exception &error) {
    return module.emitError("TorchScript export produced a module that does "
                            "not save and load: ")
           << exporter::describeError(error);
  };
  ModuleSkeleton skeleton;
  try {
    skeleton = saveModuleSkeleton(*exported);
  } catch (const std::exception &error) {
    return notLoading(error);
  }
  // The reload (a fresh compilation unit) runs on a second core while the
  // archive is written.
  std::future<std::optional<torch::jit::Module>> reload = std::async(
      std::launch::async, [&skeleton]() -> std::optional<torch::jit::Module> {
        std::istringstream in(skeleton.archive);
        return torch::jit::load(in);
      });
  try {
    writeModuleArchive(*exported, skeleton, output);
  } catch (const std::exception &error) {
    (void)reload.wait();
    return notLoading(error);
  }
  output.flush();
  std::optional<torch::jit::Module> reloaded;
  try {
    reloaded = reload.get();
  } catch (const std::exception &error) {
    return notLoading(error);
  }
  // After the archive is written: what the forwards write into the state
  // they share with the source (a forward that writes its parameters) can
  // no longer reach the file, which the caller discards if this fails. The
  // module run is the reloaded one, whose code is what users will load.
  if (check) {
    withTensorsOf(reloaded->_ivalue(), exported->_ivalue());
    if (failed(checkForward(module, *reloaded, source, *check)))
      return failure();
  }
  return success();
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              llvm::raw_ostream &output) {
  return exportTorchScript(module, /*source=*/nullptr, output);
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              const TorchScriptSource *source,
                                              llvm::raw_ostream &output) {
  return exportTorchScript(module, source, output, /*check=*/nullptr);
}

LogicalResult mlir::memopt::exportTorchScript(ModuleOp module,
                                              const TorchScriptSource *source,
                                              llvm::raw_ostream &output,
                                              ForwardCheckResult *check) {
  std::optional<torch::jit::Module> loaded = loadSource(module, source);
  if (!loaded)
    return failure();
  return exportTorchScript(module, *loaded, output, check);
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
