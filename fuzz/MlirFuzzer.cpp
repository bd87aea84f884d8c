//===- MlirFuzzer.cpp - libFuzzer target over memopt-opt's .mlir path -----===//
//
// What `memopt-opt --pass-pipeline=...memopt-pipeline...` does with a file:
// parse (with verification), then run the planning pipeline. The input's
// size picks one of four pipelines (CPU and CUDA, preference and budget,
// with the recurrent split, signature dispatch or inlining around it), so
// every input reaches one of them deterministically. Findings: see
// FuzzSupport.h; in particular a pipeline that fails must have said why,
// and one that succeeds must leave verified IR.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "memopt/Transforms/Passes.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

static const char *const kPipelines[] = {
    "builtin.module(func.func(memopt-split-recurrent-layers),"
    "memopt-pipeline{prefer=memory})",
    "builtin.module(memopt-pipeline{budget=50%},"
    "memopt-specialize-signatures)",
    "builtin.module(memopt-pipeline{device=cuda prefer=memory "
    "offload-bandwidth=0.5})",
    "builtin.module(memopt-pipeline{budget=40% allow-over-budget=1 "
    "device=cuda},memopt-inline-checkpoints)",
};

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  memopt::registerAllMemoptPasses();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  memopt_fuzz::ModuleInput input(data, size);
  if (!input.module)
    return 0;
  MLIRContext &context = input.context;
  OwningOpRef<ModuleOp> &module = input.module;
  const memopt_fuzz::ErrorCounter &errors = input.errors;

  PassManager pm(&context);
  const char *pipeline = kPipelines[size % std::size(kPipelines)];
  if (failed(parsePassPipeline(pipeline, pm)))
    memopt_fuzz::fail(std::string("bad pipeline ") + pipeline);
  if (failed(pm.run(*module))) {
    if (errors.count() == 0)
      memopt_fuzz::fail(std::string("the pipeline failed silently: ") +
                        pipeline);
    return 0;
  }
  if (errors.count() != 0)
    memopt_fuzz::fail(std::string("the pipeline succeeded with an error: ") +
                      pipeline);
  // The pass manager verifies after each pass; check the end state again
  // in case a pass changed IR it had declared preserved.
  if (failed(verify(*module)))
    memopt_fuzz::fail(std::string("the pipeline left invalid IR: ") + pipeline);
  return 0;
}
