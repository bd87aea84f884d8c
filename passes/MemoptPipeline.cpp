//===- MemoptPipeline.cpp - the memopt-pipeline pass pipeline -------------===//
//
// What memopt-compile runs between import and export, as a list of verbs:
// stamp the baseline, pack binary saved inputs, keep masks and indices,
// chunk large batch-norm and weight-gradient backwards (CPU), plan
// checkpoint regions for the budget or preference, pack binary region
// inputs and, for CUDA plans, schedule the prefetch of offloaded inputs.
//
//===----------------------------------------------------------------------===//
#include "memopt/Planning/PlanningOptions.h"
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::memopt;

namespace {
/// memopt-insert-checkpoints' options (same names, same parser) and
/// `compress`.
struct MemoptPipelineOptions
    : public PassPipelineOptions<MemoptPipelineOptions> {
  Option<std::string> budget{*this, "budget",
                             llvm::cl::desc("Peak budget: bytes (800MB, "
                                            "1.5GiB) or a percentage (40%)"),
                             llvm::cl::init("")};
  Option<std::string> prefer{*this, "prefer",
                             llvm::cl::desc("speed | balanced | memory"),
                             llvm::cl::init("")};
  Option<std::string> device{*this, "device", llvm::cl::desc("cpu | cuda"),
                             llvm::cl::init("cpu")};
  ListOption<std::string> checkpoint{
      *this, "checkpoint", llvm::cl::desc("Module paths to recompute")};
  ListOption<std::string> noCheckpoint{
      *this, "no-checkpoint", llvm::cl::desc("Module paths not to recompute")};
  ListOption<std::string> assumeBinary{
      *this, "assume-binary",
      llvm::cl::desc("Module paths whose outputs are asserted binary")};
  Option<bool> allowOverBudget{
      *this, "allow-over-budget",
      llvm::cl::desc("Apply the least-peak plan when the budget cannot be met"),
      llvm::cl::init(false)};
  Option<double> offloadBandwidth{
      *this, "offload-bandwidth",
      llvm::cl::desc("Device<->host copy bandwidth in GB/s each way "
                     "(device=cuda)"),
      llvm::cl::init(kDefaultOffloadBandwidthGBps)};
  Option<double> offloadD2HBandwidth{
      *this, "offload-d2h-bandwidth",
      llvm::cl::desc("Device-to-host copy bandwidth in GB/s (0: "
                     "offload-bandwidth)"),
      llvm::cl::init(0)};
  Option<std::string> offloadPolicy{
      *this, "offload-policy",
      llvm::cl::desc("host (pinned host buffers) | unified (managed memory)"),
      llvm::cl::init("host")};
  Option<bool> compress{*this, "compress",
                        llvm::cl::desc("Pack binary saved tensors"),
                        llvm::cl::init(true)};
};

/// Adds `pass` with its options given as text (pass-option syntax).
LogicalResult addWithOptions(OpPassManager &pm, std::unique_ptr<Pass> pass,
                             const std::string &options,
                             function_ref<LogicalResult(const Twine &)> error) {
  if (failed(pass->initializeOptions(options, error)))
    return failure();
  pm.addPass(std::move(pass));
  return success();
}

LogicalResult
buildMemoptPipeline(OpPassManager &pm, const PlanningOptions &options,
                    function_ref<LogicalResult(const Twine &)> error) {
  bool cpu = options.device == TrainingDevice::CPU;
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createFunctionalizeLists());
  StampBaselineOptions stamp;
  if (options.budget)
    stamp.budget = options.budget->text;
  funcPm.addPass(createStampBaseline(stamp));
  if (options.compress) {
    funcPm.addPass(createPackSavedInputs({options.assumeBinary}));
    // The buffers dropout masks and batch-norm chunks avoid are the CPU
    // kernels' (CUDA's dropout keeps a byte mask of its own).
    funcPm.addPass(createInsertSavedForms({/*dropoutMasks=*/cpu}));
    if (cpu)
      funcPm.addPass(createChunkBatchNormBackward());
  }
  if (cpu)
    funcPm.addPass(createChunkWeightGradients());
  if (failed(addWithOptions(funcPm, createInsertCheckpoints(),
                            printPassOptions(options), error)))
    return failure();
  if (options.compress)
    funcPm.addPass(createPackRegionInputs({options.assumeBinary}));
  // Offload is planned only for CUDA; schedule when its inputs come back.
  if (options.allowsOffload())
    funcPm.addPass(createSchedulePrefetch(
        {options.offloadBandwidthGBps, options.getOffloadD2HBandwidthGBps()}));
  return success();
}
} // namespace

void mlir::memopt::registerMemoptPipeline() {
  registerPassPipeline(
      "memopt-pipeline",
      "Plan training memory: stamp the baseline, pack binary saved inputs, "
      "keep masks and indices, chunk large batch-norm and linear weight "
      "gradient backwards (device=cpu), insert checkpoint regions for a "
      "budget or preference, pack binary region inputs, schedule prefetches "
      "of offloaded inputs (device=cuda)",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        MemoptPipelineOptions raw;
        if (failed(raw.parseFromString(text)))
          return failure();
        std::string error;
        FailureOr<PlanningOptions> options = parsePlanningOptions(
            raw.budget, raw.prefer, raw.device, raw.offloadBandwidth,
            raw.allowOverBudget, *raw.checkpoint, *raw.noCheckpoint,
            *raw.assumeBinary, error);
        if (failed(options) ||
            failed(parseOffloadOptions(*options, raw.offloadPolicy,
                                       raw.offloadD2HBandwidth, error)))
          return errorHandler(error);
        options->compress = raw.compress;
        return buildMemoptPipeline(pm, *options, errorHandler);
      },
      [](function_ref<void(const ::mlir::detail::PassOptions &)> describe) {
        describe(MemoptPipelineOptions());
      });
}
