//===- MemoptPipeline.cpp - the memopt-pipeline pass pipeline -------------===//
//
// What memopt-compile runs between import and export: pack binary saved
// inputs of convolutions (no recompute), plan checkpoint regions for the
// budget or preference, then pack binary region inputs and, for CUDA plans,
// schedule the prefetch of offloaded region inputs.
//
//===----------------------------------------------------------------------===//
#include "memopt/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::memopt;

namespace {
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
  Option<bool> compress{*this, "compress",
                        llvm::cl::desc("Pack binary saved tensors"),
                        llvm::cl::init(true)};
};

void buildMemoptPipeline(OpPassManager &pm,
                         const MemoptPipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createFunctionalizeLists());
  InsertCompressionOptions saved;
  saved.assumeBinary = options.assumeBinary;
  saved.regions = false;
  saved.savedInputs = options.compress;
  saved.savedForms = options.compress;
  // The buffers these avoid are the CPU kernels' (the runtime calls ATen's
  // own batch-norm and dropout on other devices: CUDA's dropout keeps a
  // byte mask of its own).
  saved.batchNormByChannel = options.device != "cuda";
  saved.dropoutMasks = options.device != "cuda";
  funcPm.addPass(createInsertCompression(saved));
  if (options.device != "cuda")
    funcPm.addPass(createChunkWeightGradients());

  InsertCheckpointsOptions plan;
  plan.budget = options.budget;
  plan.prefer = options.prefer;
  plan.device = options.device;
  plan.checkpoint = options.checkpoint;
  plan.noCheckpoint = options.noCheckpoint;
  plan.assumeBinary = options.assumeBinary;
  plan.allowOverBudget = options.allowOverBudget;
  plan.offloadBandwidth = options.offloadBandwidth;
  funcPm.addPass(createInsertCheckpoints(plan));

  if (options.compress) {
    InsertCompressionOptions regions;
    regions.assumeBinary = options.assumeBinary;
    regions.regions = true;
    regions.savedInputs = false;
    regions.savedForms = false;
    regions.batchNormByChannel = false;
    funcPm.addPass(createInsertCompression(regions));
  }
  // Offload is planned only for CUDA; schedule when its inputs come back.
  if (options.device == "cuda") {
    SchedulePrefetchOptions prefetch;
    prefetch.bandwidth = options.offloadBandwidth;
    funcPm.addPass(createSchedulePrefetch(prefetch));
  }
}
} // namespace

void mlir::memopt::registerMemoptPipeline() {
  PassPipelineRegistration<MemoptPipelineOptions>(
      "memopt-pipeline",
      "Plan training memory: pack binary saved inputs, add large linear "
      "weight gradients into .grad by row block (device=cpu), insert "
      "checkpoint regions for a budget or preference, pack binary region "
      "inputs, schedule prefetches of offloaded inputs (device=cuda)",
      buildMemoptPipeline);
}
