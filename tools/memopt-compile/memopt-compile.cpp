//===- memopt-compile.cpp - one-shot import -> plan -> export -------------===//
//
// The step a user's build calls:
//   memopt-compile model.pt -o model.memopt.pt --input-shape x:8x3x224x224
//       [--budget 1.5GiB|40%] [--prefer speed|balanced|memory] ...
// Command-line glue only; the work is lib/Compile (docs/compile.md).
//
//===----------------------------------------------------------------------===//
#include "memopt/Compile/CompileDriver.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace cl = llvm::cl;

static cl::OptionCategory category("memopt-compile options");

static cl::opt<std::string> input(cl::Positional, cl::desc("<model.pt>"),
                                  cl::cat(category));
static cl::opt<std::string>
    output("o", cl::desc("Write the compiled TorchScript module here"),
           cl::value_desc("file.pt"), cl::cat(category));
static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("Shape of a forward input, name:D0xD1x...[:dtype]; one per "
             "tensor input, together one signature"),
    cl::value_desc("spec"), cl::cat(category));
static cl::list<std::string>
    specs("spec",
          cl::desc("One input signature: input specs separated by ',' "
                   "(repeatable)"),
          cl::value_desc("x:8x3x32x32,y:8:i64"), cl::cat(category));
static cl::list<std::string> passthroughSpecs(
    "passthrough-spec",
    cl::desc("A signature compiled without planning (repeatable)"),
    cl::value_desc("signature"), cl::cat(category));
static cl::opt<std::string>
    signaturesFile("signatures",
                   cl::desc("Recorded input signatures (JSON) to compile"),
                   cl::value_desc("rec.json"), cl::cat(category));
static cl::opt<bool> strictSignatures(
    "strict-signatures",
    cl::desc("Fail at run time on a signature that was not compiled"),
    cl::cat(category));
static cl::opt<std::string>
    fallback("fallback",
             cl::desc("Uncompiled signatures run: generic (planned, dynamic "
                      "shapes) or original (the unplanned model)"),
             cl::value_desc("generic|original"), cl::init("generic"),
             cl::cat(category));
static cl::opt<std::string>
    budget("budget",
           cl::desc("Peak training memory to plan for: bytes (123456, 800MB, "
                    "1.5GiB) or a percentage of the baseline peak (40%)"),
           cl::value_desc("bytes|N%"), cl::cat(category));
static cl::opt<std::string>
    prefer("prefer", cl::desc("Trade-off without a budget, or within it"),
           cl::value_desc("speed|balanced|memory"), cl::init("balanced"),
           cl::cat(category));
static cl::opt<std::string>
    device("device", cl::desc("Where training runs (cuda allows offload)"),
           cl::value_desc("cpu|cuda"), cl::init("cpu"), cl::cat(category));
static cl::opt<double> offloadBandwidth(
    "offload-bandwidth",
    cl::desc("Device<->host copy bandwidth each way, for offload with "
             "--device cuda (default: 55, an H100 over PCIe Gen5)"),
    cl::value_desc("GB/s"),
    cl::init(mlir::memopt::kDefaultOffloadBandwidthGBps), cl::cat(category));
static cl::opt<double> offloadD2HBandwidth(
    "offload-d2h-bandwidth",
    cl::desc("Device-to-host copy bandwidth, when it differs from the way "
             "back (--offload-bandwidth is then host to device)"),
    cl::value_desc("GB/s"), cl::init(0), cl::cat(category));
static cl::opt<std::string> offloadPolicy(
    "offload-policy",
    cl::desc("Where offloaded tensors go: pinned host buffers copied on a "
             "side stream, or CUDA managed memory migrated to the host"),
    cl::value_desc("host|unified"), cl::init("host"), cl::cat(category));
static cl::opt<std::string> gradBuffers(
    "grad-buffers",
    cl::desc("How the training loop leaves .grad between steps: zeroed in "
             "place (resident) or set to None (allocated in backward); auto "
             "follows this PyTorch's zero_grad() default"),
    cl::value_desc("auto|resident|allocated"), cl::init("auto"),
    cl::cat(category));
static cl::opt<int64_t> worldSize(
    "world-size",
    cl::desc("Data-parallel processes (DistributedDataParallel) training "
             "the model, each on the batch --input-shape gives: budget, plan "
             "and peak are per process, resident bytes include DDP's "
             "gradient buckets (default 1)"),
    cl::value_desc("N"), cl::init(1), cl::cat(category));
static cl::opt<std::string> kernelWorkspaces(
    "kernel-workspaces",
    cl::desc("Where kernels' transient buffers come from: probe (run each "
             "convolution once with this PyTorch on this CPU), model (the "
             "formulas for PyTorch 1.13's oneDNN); auto probes for --device "
             "cpu"),
    cl::value_desc("auto|probe|model"), cl::init("auto"), cl::cat(category));
static cl::opt<std::string> kernelMarks(
    "kernel-marks",
    cl::desc("With --device cuda: kernel marks measured on the GPU that will "
             "train (bench/cuda_kernel_probe.py there), which price its "
             "convolutions' workspaces"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<std::string> costModel(
    "cost-model",
    cl::desc("Price recompute with a cost-model fit of the machine that "
             "will train (bench/cost_model_calibration.py --write FILE run "
             "there) instead of the built-in fit"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<std::string> kernelRequests(
    "kernel-requests",
    cl::desc("With --device cuda: append the convolution calls the marks "
             "lack to this file (JSON lines), for bench/cuda_kernel_probe.py "
             "to measure on the GPU"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::list<std::string> loadLibrary(
    "load-library",
    cl::desc("Load a library that registers operators the model calls "
             "(torchvision's _C, a C++ extension), as torch.ops.load_library "
             "does; repeat for several"),
    cl::value_desc("path.so"), cl::cat(category));
static cl::opt<bool> noCheckForward(
    "no-check-forward",
    cl::desc("Write the compiled model without running its forward once per "
             "signature (with the runtime library) and comparing its outputs "
             "with the source model's"),
    cl::init(false), cl::cat(category));
static cl::opt<std::string> threads(
    "intra-op-threads",
    cl::desc("Intra-op threads CPU training runs with (torch.get_num_threads "
             "there); they pick the convolution kernels and the buffers they "
             "allocate. auto: what a PyTorch process started here gets "
             "(OMP_NUM_THREADS, else the cores)"),
    cl::value_desc("N|auto"), cl::init("auto"), cl::cat(category));
static cl::list<std::string>
    checkpoint("checkpoint",
               cl::desc("Module paths forced into checkpoint regions"),
               cl::value_desc("a.b,c"), cl::CommaSeparated, cl::cat(category));
static cl::list<std::string>
    noCheckpoint("no-checkpoint", cl::desc("Module paths never recomputed"),
                 cl::value_desc("a.b,c"), cl::CommaSeparated,
                 cl::cat(category));
static cl::list<std::string> assumeBinary(
    "assume-binary", cl::desc("Module paths whose outputs are asserted 0/1"),
    cl::value_desc("a.b,c"), cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> passPipeline(
    "pass-pipeline",
    cl::desc("Advanced: run this textual pass pipeline instead of the "
             "planning pipeline"),
    cl::value_desc("builtin.module(...)"), cl::cat(category));
static cl::opt<bool> analyzeOnly(
    "analyze-only",
    cl::desc("Import and predict memory only; no planning (-o then writes "
             "the unplanned model)"),
    cl::cat(category));
static cl::opt<std::string> reportPath("report",
                                       cl::desc("Write the JSON report here"),
                                       cl::value_desc("report.json"),
                                       cl::cat(category));
static cl::opt<std::string>
    emitMlir("emit-mlir", cl::desc("Write the IR after the pipeline here"),
             cl::value_desc("out.mlir"), cl::cat(category));
static cl::opt<std::string> emitStubs(
    "emit-stubs",
    cl::desc("Write the launch stubs (host + CUDA launchers of every plan "
             "site) to DIR/<model>.stubs.cpp"),
    cl::value_desc("DIR"), cl::cat(category));
static cl::opt<bool> allowOverBudget(
    "allow-over-budget",
    cl::desc("When the budget cannot be met, write the least-peak plan "
             "instead of failing"),
    cl::cat(category));
static cl::opt<bool> timeline("timeline",
                              cl::desc("Print the per-op live-bytes timeline"),
                              cl::cat(category));
static cl::alias timelineShort("v", cl::desc("Alias for --timeline"),
                               cl::aliasopt(timeline), cl::cat(category));

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // --mlir-timing and the other pass-manager options, for finding where a
  // compile's seconds go (hidden from --help with every non-memopt option).
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  cl::HideUnrelatedOptions(category);
  std::string parseErrors;
  llvm::raw_string_ostream parseStream(parseErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "memopt-compile: TorchScript model -> memory-planned TorchScript "
          "model (docs/compile.md)\n",
          &parseStream)) {
    // llvm::cl's message is "<tool>: <what>.  Try: ..." plus hints: one
    // line in memopt's format instead. A value its parser refuses
    // ("'two' value invalid for long argument") was printed already, as
    // one line, straight to stderr: nothing to add.
    llvm::StringRef message = llvm::StringRef(parseErrors).trim();
    if (message.empty())
      return 1;
    message = message.split('\n').first;
    if (auto [tool, rest] = message.split(": ");
        !rest.empty() && !tool.contains(' '))
      message = rest;
    message = message.split("  Try:").first.trim().rtrim('.');
    llvm::errs() << "memopt: error: " << message
                 << " (memopt-compile --help lists the options)\n";
    return 1;
  }

  mlir::memopt::CompileOptions options;
  std::string error;
  llvm::FailureOr<mlir::memopt::PlanningOptions> planning =
      mlir::memopt::parsePlanningOptions(
          budget, prefer, device, offloadBandwidth, allowOverBudget, checkpoint,
          noCheckpoint, assumeBinary, error);
  if (failed(planning) ||
      failed(mlir::memopt::parseOffloadOptions(*planning, offloadPolicy,
                                               offloadD2HBandwidth, error))) {
    llvm::errs() << "memopt: error: " << error << "\n";
    return 1;
  }
  options.planning = std::move(*planning);
  options.inputPath = input;
  options.outputPath = output;
  options.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  options.specs.assign(specs.begin(), specs.end());
  options.passthroughSpecs.assign(passthroughSpecs.begin(),
                                  passthroughSpecs.end());
  options.signaturesFile = signaturesFile;
  options.strictSignatures = strictSignatures;
  options.fallback = fallback;
  options.operatorLibraries.assign(loadLibrary.begin(), loadLibrary.end());
  options.gradBuffers = gradBuffers;
  options.kernelWorkspaces = kernelWorkspaces;
  options.kernelMarksPath = kernelMarks;
  options.costModelPath = costModel;
  options.kernelRequestsPath = kernelRequests;
  options.threads = threads;
  options.worldSize = worldSize;
  options.passPipeline = passPipeline;
  options.analyzeOnly = analyzeOnly;
  options.reportPath = reportPath;
  options.emitMlirPath = emitMlir;
  options.emitStubsDir = emitStubs;
  options.timeline = timeline;
  options.checkForward = !noCheckForward;
  options.commandLine = mlir::memopt::joinCommandLine(argc, argv);
  int status = mlir::memopt::runCompile(options, llvm::errs());
  // Every output is written and closed. LibTorch's static destructors
  // (unregistering each of its operators) would take tens of milliseconds
  // more: flush and leave without them.
  llvm::outs().flush();
  llvm::errs().flush();
  std::fflush(nullptr);
  std::_Exit(status);
}
