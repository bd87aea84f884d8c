//===- CompileOptions.h - what memopt-compile was asked to do ---*- C++ -*-===//
//
// The options of the one-shot compile (import -> planning pipeline -> export),
// as plain data so that other drivers (tests, Python bindings) can fill them
// without llvm::cl. Strings are kept as the user wrote them; validate() turns
// every mistake into one line before any work is done.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_COMPILE_COMPILEOPTIONS_H
#define MEMOPT_COMPILE_COMPILEOPTIONS_H

#include "memopt/Analysis/TrainingMemoryModel.h"
#include "memopt/Conversion/TorchScriptImport.h"
#include "memopt/Planning/Budget.h"
#include "memopt/Planning/PlanningOptions.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/LogicalResult.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::memopt {

/// Name of the registered planning pipeline memopt-compile runs.
inline constexpr llvm::StringLiteral kPlanningPipelineName = "memopt-pipeline";
/// The pass that turns per-signature functions into a dispatching @forward.
inline constexpr llvm::StringLiteral kSpecializePassName =
    "memopt-specialize-signatures";

/// The largest --world-size (torch.distributed ranks are int32; a million
/// processes is beyond any job memopt plans for).
inline constexpr int64_t kMaxWorldSize = 1 << 20;

struct CompileOptions {
  std::string inputPath;
  /// The compiled `.pt` ("-": stdout; empty: none, allowed with analyzeOnly
  /// or when a report or the IR is written: a plan without a model).
  std::string outputPath;

  /// --input-shape: together, one signature.
  std::vector<std::string> inputShapes;
  /// --spec: one signature each, in memopt-translate's `--signature`
  /// syntax (parseSignatureSpec): `x:8x3x32x32,y:8:i64[;count=N][;budget=S]`.
  std::vector<std::string> specs;
  /// --passthrough-spec: signatures compiled without planning.
  std::vector<std::string> passthroughSpecs;
  /// --signatures: a recorded-signatures JSON file.
  std::string signaturesFile;
  bool strictSignatures = false;
  std::string fallback = "generic"; // generic | original
  /// --load-library: libraries registering operators the model calls
  /// (torchvision's `_C`, C++ extensions), loaded before the import.
  std::vector<std::string> operatorLibraries;

  /// Budget, preference, device, module-path lists: parsed by the caller
  /// (parsePlanningOptions), printed into the pipeline by buildPipeline.
  PlanningOptions planning;
  /// resident | allocated | auto (the built-against PyTorch's zero_grad
  /// default: resident before 2.0, allocated from 2.0 on).
  std::string gradBuffers = "auto";
  /// Kernel workspaces: `probe` runs each convolution once with this
  /// PyTorch on this CPU and uses what it allocated; `model` uses the
  /// formulas (PyTorch 1.13's oneDNN); `auto`: probe for --device cpu.
  std::string kernelWorkspaces = "auto";
  /// --kernel-marks: marks measured on the GPU that will train
  /// (bench/cuda_kernel_probe.py), for --device cuda.
  std::string kernelMarksPath;
  /// --cost-model: the cost model's coefficients fitted on the machine that
  /// will train (bench/cost_model_calibration.py --write); empty: the
  /// built-in fit.
  std::string costModelPath;
  /// --kernel-requests: where to append the convolution calls the marks
  /// lack, for that probe to measure (--device cuda).
  std::string kernelRequestsPath;
  /// --intra-op-threads: the threads CPU training runs with (a count, or
  /// `auto`: what a PyTorch process started in this environment gets). They
  /// pick the convolution kernels, and so the probe runs them with as many.
  std::string threads = "auto";
  /// Data-parallel processes (DDP) training the model, each on the batch
  /// the input shapes give: the plan, budget and peak are per process, and
  /// its resident bytes hold DDP's gradient buckets when above one.
  int64_t worldSize = 1;
  /// Advanced: a textual pass pipeline run instead of the one
  /// buildPipeline() makes (e.g. `builtin.module(func.func(
  /// memopt-insert-checkpoints{budget=50%}))`).
  std::string passPipeline;

  bool analyzeOnly = false;
  std::string reportPath;           // JSON report ("-": stdout)
  std::string emitMlirPath;         // IR after the pipeline ("-": stdout)
  /// Folder for the launch stubs source (<model>.stubs.cpp), made if missing.
  std::string emitStubsDir;
  bool timeline = false;            // print per-op live bytes
  /// Run the written module's forward once per signature before reporting
  /// success, and compare its outputs with the source's (needs the runtime
  /// library; --no-check-forward).
  bool checkForward = true;

  /// The command line as typed, recorded in the report.
  std::string commandLine;
};

/// `options.gradBuffers` (valid: validateCompileOptions) with `auto`
/// resolved for the PyTorch this build targets.
GradBuffers resolveGradBuffers(const CompileOptions &options);

/// `options.threads` (valid) as a count, `auto` resolved to
/// `defaultThreads`.
int resolveIntraOpThreads(const CompileOptions &options, int defaultThreads);

/// True when `options.kernelWorkspaces` (valid) asks for the kernel probe.
bool shouldProbeKernels(const CompileOptions &options);

/// Checks everything else that needs no model: option values, spec syntax,
/// that outputs can be written. On failure sets `error` to a one-line
/// message.
llvm::LogicalResult validateCompileOptions(const CompileOptions &options,
                                           std::string &error);

/// Every signature to compile: --input-shape (together one), each --spec,
/// each --passthrough-spec, then the --signatures file's, in that order.
/// Reads the file; on failure sets `error` to a one-line message.
llvm::FailureOr<std::vector<InputSignature>>
collectSignatures(const CompileOptions &options, std::string &error);

/// The pass pipeline memopt-compile runs on the imported module:
/// `memopt-pipeline{<printPassOptions(planning)>}` when `plan`, then
/// `memopt-specialize-signatures{fallback=generic|original|none}` when
/// `specialize` (several signatures; --strict-signatures is `none`).
/// Empty when neither is asked.
std::string buildPipeline(const CompileOptions &options, bool specialize,
                          bool plan);

/// Checks that `path` can be created or overwritten without touching it
/// ("-" always can). On failure sets `error`: "cannot write 'p': ...".
llvm::LogicalResult checkWritable(llvm::StringRef path, std::string &error);

/// Joins argv with shell quoting where needed.
std::string joinCommandLine(int argc, char **argv);

} // namespace mlir::memopt

#endif // MEMOPT_COMPILE_COMPILEOPTIONS_H
