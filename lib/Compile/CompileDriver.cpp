//===- CompileDriver.cpp - import -> plan -> export in one process --------===//
#include "memopt/Compile/CompileDriver.h"

#include "memopt/Analysis/CostModelFile.h"
#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Compile/CompileReport.h"
#include "memopt/Config/TorchVersion.h"
#include "memopt/Conversion/LaunchStubs.h"
#include "memopt/Conversion/OneLineDiagnostic.h"
#include "memopt/Conversion/RuntimeLibrary.h"
#include "memopt/Conversion/TorchScriptExport.h"
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Conversion/ZipArchive.h"
#include "memopt/Dialect/MemoptAttrNames.h"
#include "memopt/Dialect/MemoptDialect.h"
#include "memopt/Planning/BaselineStamp.h"
#include "memopt/Planning/Budget.h"
#include "memopt/Probe/DeviceKernelMarks.h"
#include "memopt/Probe/KernelProbe.h"
#include "memopt/Support/QuotedText.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"

#include <algorithm>
#include <chrono>
#include <mutex>

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// Prints diagnostics in memopt's one-line form: the first error only (a
/// failing pass may add follow-up errors), every warning, remarks when
/// verbose, never notes.
class OneLinePrinter {
public:
  OneLinePrinter(MLIRContext &context, llvm::raw_ostream &os, bool verbose)
      : os(os), verbose(verbose),
        handler(&context, [this](Diagnostic &d) { return handle(d); }) {}

  bool errorPrinted() const { return printedError; }
  void error(const llvm::Twine &message) {
    if (printedError)
      return;
    // One line whatever the message quotes (a newline inside an argument).
    std::string text = message.str();
    std::replace(text.begin(), text.end(), '\n', ' ');
    os << "memopt: error: " << text << "\n";
    printedError = true;
  }

private:
  LogicalResult handle(Diagnostic &diagnostic) {
    switch (diagnostic.getSeverity()) {
    case DiagnosticSeverity::Error:
      if (printedError)
        return success();
      printedError = true;
      break;
    case DiagnosticSeverity::Warning:
      break;
    case DiagnosticSeverity::Remark:
      if (!verbose)
        return success();
      break;
    case DiagnosticSeverity::Note:
      return success();
    }
    printOneLineDiagnostic(diagnostic, os);
    return success();
  }

  llvm::raw_ostream &os;
  bool verbose;
  bool printedError = false;
  ScopedDiagnosticHandler handler;
};

class Stopwatch {
public:
  double lap() {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    return seconds;
  }

private:
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};
} // namespace

static std::string absolutePath(llvm::StringRef path) {
  if (path.empty() || path == "-")
    return path.str();
  llvm::SmallString<256> absolute(path);
  (void)llvm::sys::fs::make_absolute(absolute);
  llvm::sys::path::remove_dots(absolute, /*remove_dot_dot=*/true);
  return std::string(absolute);
}

/// registerAllMemoptPasses() registers the planning pipeline and the
/// specialization pass once they exist; memopt-compile says clearly when a
/// build lacks one.
static bool isRegistered(llvm::StringRef name) {
  static std::once_flag once;
  std::call_once(once, [] {
    registerAllMemoptPasses();
    registerCanonicalizerPass();
    registerCSEPass();
    registerSymbolDCEPass();
  });
  return PassPipelineInfo::lookup(name) || PassInfo::lookup(name);
}

/// The imported function of signature `index` (@forward for one signature,
/// the function whose memopt.signature has that index for several).
static func::FuncOp findSignatureFunction(ModuleOp module, size_t index,
                                          size_t count, llvm::StringRef name) {
  if (!name.empty())
    if (auto func = module.lookupSymbol<func::FuncOp>(name))
      if (!func.isExternal())
        return func;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (auto info = func->getAttrOfType<SignatureAttr>(kSignatureAttrName)) {
      if (info.getIndex() == int64_t(index))
        return func;
    } else if (count == 1 && name.empty() && func.getSymName() == "forward") {
      return func;
    }
  }
  return nullptr;
}

/// Writes `path` atomically (temp file + rename; "-" is stdout). Returns
/// false after printing one error line when the file cannot be written;
/// `produce` returns false when it already reported its own failure.
static bool writeOutput(llvm::StringRef path, OneLinePrinter &printer,
                        llvm::function_ref<bool(llvm::raw_ostream &)> produce) {
  bool produced = true;
  auto write = [&](llvm::raw_ostream &os) -> llvm::Error {
    produced = produce(os);
    if (!produced)
      return llvm::make_error<llvm::StringError>(
          "not produced", llvm::inconvertibleErrorCode());
    return llvm::Error::success();
  };
  // llvm::writeToOutput names its temp file after `path` with '%' as the
  // placeholder of its random characters: a '%' in a folder's name (a plan
  // called "budget-40%") would send it to a folder that does not exist.
  // Such paths get a temp file named here, renamed the same way.
  llvm::Error error = llvm::Error::success();
  if (path != "-" && path.contains('%')) {
    std::string temp =
        (path + ".memopt-" + llvm::Twine(llvm::sys::Process::getProcessId()) +
         ".tmp")
            .str();
    std::error_code ec;
    // As llvm::writeToOutput's own temporary file: gone after a crash.
    llvm::sys::RemoveFileOnSignal(temp);
    {
      llvm::raw_fd_ostream os(temp, ec);
      if (!ec) {
        error = write(os);
        os.close();
        if (!error && os.has_error())
          ec = os.error();
        os.clear_error();
      }
    }
    if (!ec && !error)
      ec = llvm::sys::fs::rename(temp, path);
    if (ec || error)
      llvm::sys::fs::remove(temp);
    llvm::sys::DontRemoveFileOnSignal(temp);
    if (ec && !error)
      error = llvm::errorCodeToError(ec);
  } else {
    error = llvm::writeToOutput(path, write);
  }
  if (!error)
    return true;
  std::string message = llvm::toString(std::move(error));
  if (produced)
    printer.error("cannot write '" + path + "': " + message);
  return false;
}

/// Writes `<dir>/<model>.stubs.cpp` (making `dir`) from the planned module.
static bool writeLaunchStubs(ModuleOp module, llvm::StringRef dir,
                             OneLinePrinter &printer) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    printer.error("cannot make the stubs folder " + quoted(dir) + ": " +
                  ec.message());
    return false;
  }
  std::string model = defaultLaunchStubsModel(module);
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, model + ".stubs.cpp");
  return writeOutput(path, printer, [&](llvm::raw_ostream &os) {
    return succeeded(emitLaunchStubs(module, model, os));
  });
}

/// Reads the written module back and checks every record's CRC-32, as the
/// importer does for its input: what users will load is what was written.
/// A damaged file is removed.
static bool verifyWrittenArchive(llvm::StringRef path,
                                 OneLinePrinter &printer) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> written =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  std::optional<std::string> damage;
  if (!written)
    damage = "cannot read it back: " + written.getError().message();
  else
    damage = findZipArchiveDamage((*written)->getBuffer());
  if (!damage)
    return true;
  printer.error("the compiled model written to '" + path.str() +
                "' is damaged (" + *damage + ")");
  llvm::sys::fs::remove(path);
  return false;
}

int mlir::memopt::runCompile(const CompileOptions &options,
                             llvm::raw_ostream &errs) {
  Stopwatch total, phase;
  std::string error;
  if (failed(validateCompileOptions(options, error))) {
    errs << "memopt: error: " << error << "\n";
    return 1;
  }
  FailureOr<std::vector<InputSignature>> collected =
      collectSignatures(options, error);
  if (failed(collected)) {
    errs << "memopt: error: " << error << "\n";
    return 1;
  }
  std::vector<InputSignature> signatures = std::move(*collected);
  // A signature's own budget overrides --budget (stampBaseline reads it).
  for (const InputSignature &signature : signatures)
    if (!signature.budget.empty() &&
        failed(parseBudget(signature.budget, error))) {
      errs << "memopt: error: in signature '"
           << formatSignature(signature.inputs) << "': " << error << "\n";
      return 1;
    }

  bool several = signatures.size() > 1;
  if (!several && (options.strictSignatures || options.fallback != "generic"))
    errs << "memopt: warning: --strict-signatures and --fallback apply to "
            "several signatures; with one, the compiled forward is the only "
            "one\n";
  bool allPassthrough =
      !signatures.empty() &&
      llvm::all_of(signatures, [](const InputSignature &signature) {
        return signature.passthrough;
      });
  bool custom = !options.passPipeline.empty();
  bool plan = !options.analyzeOnly && !allPassthrough && !custom;
  // Several signatures become one dispatching @forward, needed to export.
  bool specialize = several && !custom &&
                    (!options.analyzeOnly || !options.outputPath.empty() ||
                     !options.emitMlirPath.empty());

  DialectRegistry registry;
  registry.insert<MemoptDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  OneLinePrinter printer(context, errs, options.timeline);

  // Fail before the (slow) import when the pipeline cannot run at all.
  std::optional<OpPassManager> pipeline;
  if (plan && !isRegistered(kPlanningPipelineName)) {
    printer.error(llvm::Twine("the planning pipeline '") +
                  kPlanningPipelineName +
                  "' is not registered in this build; use --analyze-only to "
                  "predict memory, or --passthrough-spec to compile without "
                  "planning");
    return 1;
  }
  if (specialize && !isRegistered(kSpecializePassName)) {
    printer.error(llvm::Twine("compiling several signatures needs the pass '") +
                  kSpecializePassName +
                  "', which is not registered in this build; compile one "
                  "signature");
    return 1;
  }
  if (std::string text = custom ? options.passPipeline
                                : buildPipeline(options, specialize, plan);
      !text.empty()) {
    (void)isRegistered(kPlanningPipelineName); // registers memopt's passes
    std::string parseErrors;
    llvm::raw_string_ostream parseStream(parseErrors);
    FailureOr<OpPassManager> parsed = parsePassPipeline(text, parseStream);
    if (failed(parsed)) {
      llvm::StringRef first = llvm::StringRef(parseErrors).trim();
      first = first.split('\n').first;
      printer.error("invalid pass pipeline '" + text + "': " + first);
      return 1;
    }
    pipeline = std::move(*parsed);
  }

  // A fit of the machine that will train, read before any model work.
  DictionaryAttr fittedCosts;
  if (!options.costModelPath.empty()) {
    std::string error;
    FailureOr<DictionaryAttr> fitted =
        readCostModelFile(options.costModelPath, &context, error);
    if (failed(fitted)) {
      printer.error(error);
      return 1;
    }
    fittedCosts = *fitted;
  }

  // The model's own operators are registered before its code is compiled.
  for (const std::string &library : options.operatorLibraries)
    if (llvm::Error failure = loadOperatorLibrary(library)) {
      printer.error(llvm::toString(std::move(failure)));
      return 1;
    }

  // Import: one signature as plain input specs (@forward), several as
  // per-signature functions (@forward_s<i>).
  ImportOptions importOptions;
  if (several)
    importOptions.signatures = signatures;
  else if (!signatures.empty())
    importOptions.inputs = signatures.front().inputs;
  // The export takes the weights from the model the import loaded, the
  // kernel probe the values of its integer attributes.
  std::shared_ptr<TorchScriptSource> source;
  OwningOpRef<ModuleOp> module = importTorchScriptFile(
      options.inputPath, importOptions, &context, &source);
  if (!module) {
    if (!printer.errorPrinted())
      printer.error("cannot import '" + options.inputPath + "'");
    return 1;
  }
  StringRef gradBuffers = stringifyGradBuffers(resolveGradBuffers(options));
  (*module)->setAttr(kGradBuffersAttrName,
                     StringAttr::get(&context, gradBuffers));
  // DDP's per-process state (one-process modules stay unstamped).
  if (options.worldSize > 1)
    (*module)->setAttr(kWorldSizeAttrName,
                       Builder(&context).getI64IntegerAttr(options.worldSize));
  if (fittedCosts)
    (*module)->setAttr(kCostModelAttrName, fittedCosts);
  // CPU kernels follow the thread count (one-thread modules stay unstamped).
  int threads = resolveIntraOpThreads(options, getDefaultIntraOpThreads());
  if (options.planning.device == TrainingDevice::CPU && threads != 1)
    (*module)->setAttr(kIntraOpThreadsAttrName,
                       Builder(&context).getI64IntegerAttr(threads));
  // The CUDA side of the memory model (CPU modules stay unstamped).
  if (options.planning.device == TrainingDevice::CUDA)
    (*module)->setAttr(kTrainingDeviceAttrName,
                       StringAttr::get(&context, stringifyTrainingDevice(
                                                     options.planning.device)));
  if (signatures.size() == 1) {
    if (auto forward = module->lookupSymbol<func::FuncOp>("forward")) {
      Builder builder(&context);
      if (!signatures.front().budget.empty())
        forward->setAttr(kBudgetAttrName,
                         builder.getStringAttr(signatures.front().budget));
      if (signatures.front().passthrough)
        forward->setAttr(kPassthroughAttrName, builder.getUnitAttr());
    }
  }

  // One call per recurrent layer, before the probe measures each call. CPU
  // only: cuDNN runs a whole stack, with dropout from its own generator.
  if (options.planning.device == TrainingDevice::CPU) {
    PassManager canonical(&context);
    canonical.addNestedPass<func::FuncOp>(createSplitRecurrentLayers());
    if (failed(canonical.run(*module))) {
      if (!printer.errorPrinted())
        printer.error("cannot split recurrent layer stacks");
      return 1;
    }
  }

  CompileReport report;
  report.timings.importSeconds = phase.lap();
  if (shouldProbeKernels(options)) {
    FailureOr<KernelProbeSummary> probed = probeKernelHighWaters(
        *module, KernelProbeOptions{threads, source.get()});
    if (failed(probed)) {
      if (!printer.errorPrinted())
        printer.error("the kernel probe failed");
      return 1;
    }
    report.kernelWorkspaces = {/*probed=*/true, probed->measured,
                               probed->cached, probed->reused,
                               probed->skipped};
    report.timings.probeSeconds = phase.lap();
  }
  if (!options.kernelMarksPath.empty() || !options.kernelRequestsPath.empty()) {
    std::string error;
    FailureOr<DeviceKernelMarksSummary> marked = applyDeviceKernelMarks(
        *module,
        {stringifyTrainingDevice(options.planning.device).str(),
         options.kernelMarksPath, options.kernelRequestsPath},
        error);
    if (failed(marked)) {
      printer.error(error);
      return 1;
    }
    // absolutePath keeps an empty path (an option not given) empty.
    report.deviceMarks =
        DeviceMarksReport{absolutePath(options.kernelMarksPath),
                          marked->context,
                          absolutePath(options.kernelRequestsPath),
                          marked->applied,
                          marked->requested,
                          marked->skipped};
  }
  report.model = absolutePath(options.inputPath);
  report.output = absolutePath(options.outputPath);
  report.command = options.commandLine;
  report.operatorLibraries = options.operatorLibraries;
  report.analyzeOnly = options.analyzeOnly;
  report.planning = options.planning;
  report.gradBuffers = gradBuffers.str();
  report.worldSize = options.worldSize;
  if (fittedCosts) {
    CostModelReport fit{absolutePath(options.costModelPath), {}};
    for (NamedAttribute entry : fittedCosts) {
      ArrayRef<double> values =
          cast<DenseF64ArrayAttr>(entry.getValue()).asArrayRef();
      fit.classes.push_back(
          {entry.getName().str(), {values[0], values[1], values[2]}});
    }
    report.costModel = std::move(fit);
  }
  report.intraOpThreads =
      options.planning.device == TrainingDevice::CPU ? threads : 0;
  report.torchVersion = MEMOPT_TORCH_VERSION;
  report.fallback = options.fallback;
  report.strictSignatures = options.strictSignatures;
  report.timelineInJSON = options.timeline;

  // Baseline: each signature's function as imported.
  size_t count = std::max<size_t>(signatures.size(), 1);
  for (size_t i = 0; i < count; ++i) {
    func::FuncOp func = findSignatureFunction(*module, i, count, "");
    if (!func) {
      printer.error("the importer produced no function for signature '" +
                    (signatures.empty()
                         ? std::string("(none)")
                         : formatSignature(signatures[i].inputs)) +
                    "'" +
                    (several ? "; this build's importer may not support "
                               "several signatures yet"
                             : ""));
      return 1;
    }
    SignatureReport s;
    s.function = func.getSymName().str();
    s.preference = stringifyPreference(options.planning.prefer).str();
    if (!signatures.empty()) {
      const InputSignature &signature = signatures[i];
      s.signature = formatSignature(signature.inputs);
      s.passthrough = signature.passthrough;
      s.count = signature.count;
      for (const InputSpec &spec : signature.inputs)
        s.inputNames.push_back(spec.name);
    }
    s.baseline = predictMemory(func, &s.unknownOps, s.inputNames);
    // The one baseline and budget the planner and this report refer to
    // (the prediction just made is that baseline).
    if (failed(stampBaseline(func, options.planning.budget,
                             s.baseline.peakBytes))) {
      if (!printer.errorPrinted())
        printer.error("cannot resolve the budget of @" +
                      func.getSymName().str());
      return 1;
    }
    s.budgetBytes = getStampedBudgetBytes(func);
    report.signatures.push_back(std::move(s));
  }

  // Plan (and specialize).
  if (pipeline) {
    PassManager pm(&context, ModuleOp::getOperationName());
    static_cast<OpPassManager &>(pm) = *pipeline;
    // --mlir-timing and friends, where the tool registered them.
    if (failed(applyPassManagerCLOptions(pm))) {
      printer.error("invalid pass-manager options");
      return 1;
    }
    DefaultTimingManager timing;
    applyDefaultTimingManagerCLOptions(timing);
    TimingScope timingRoot = timing.getRootScope();
    if (timing.isEnabled())
      pm.enableTiming(timingRoot);
    if (failed(pm.run(*module))) {
      if (!printer.errorPrinted())
        printer.error("the pass pipeline failed");
      return 1;
    }
  }
  if (plan || custom)
    for (auto [i, s] : llvm::enumerate(report.signatures)) {
      func::FuncOp func = findSignatureFunction(*module, i, count, s.function);
      if (!func)
        continue;
      s.function = func.getSymName().str();
      if (!s.passthrough)
        collectPlan(func, s);
    }
  report.timings.planSeconds = phase.lap();

  if (!options.emitMlirPath.empty() &&
      !writeOutput(options.emitMlirPath, printer, [&](llvm::raw_ostream &os) {
        OpPrintingFlags flags;
        flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
        module->print(os, flags);
        os << "\n";
        return true;
      }))
    return 1;

  if (!options.emitStubsDir.empty() &&
      !writeLaunchStubs(*module, options.emitStubsDir, printer))
    return 1;

  // Export, then one forward of what was written before it is renamed into
  // place: its memopt ops need the runtime's kernels in this process.
  if (options.checkForward && !options.outputPath.empty()) {
    llvm::Expected<std::string> runtime = loadRuntimeLibrary();
    if (!runtime) {
      printer.error("cannot run the compiled model before writing it: " +
                    llvm::toString(runtime.takeError()) +
                    "; --no-check-forward writes it unchecked");
      return 1;
    }
    report.forwardCheck.emplace();
  }
  if (!options.outputPath.empty() &&
      !writeOutput(options.outputPath, printer, [&](llvm::raw_ostream &os) {
        return succeeded(exportTorchScript(
            *module, source.get(), os,
            report.forwardCheck ? &*report.forwardCheck : nullptr));
      })) {
    if (!printer.errorPrinted())
      printer.error("cannot export the compiled model");
    return 1;
  }
  // Only a file can be read back: `-o -` and `-o /dev/null` cannot.
  if (!options.outputPath.empty() && options.outputPath != "-" &&
      llvm::sys::fs::is_regular_file(options.outputPath) &&
      !verifyWrittenArchive(options.outputPath, printer))
    return 1;
  report.timings.exportSeconds =
      phase.lap() - (report.forwardCheck ? report.forwardCheck->seconds : 0);
  report.timings.totalSeconds = total.lap();

  if (!options.reportPath.empty() &&
      !writeOutput(options.reportPath, printer, [&](llvm::raw_ostream &os) {
        report.writeJSON(os);
        return true;
      }))
    return 1;

  if (options.timeline)
    for (const SignatureReport &s : report.signatures)
      if (auto func = module->lookupSymbol<func::FuncOp>(s.function))
        printTimeline(func, plan || custom ? "planned" : "baseline", errs);
  report.printSummary(errs);
  return 0;
}
