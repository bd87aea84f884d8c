//===- TestPasses.td - passes that print analysis results --*- tablegen -*-===//
//
// Test-only passes: they print what the analyses of include/memopt/Analysis
// compute so that lit tests can FileCheck it.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_TESTPASSES_TD
#define MEMOPT_ANALYSIS_TESTPASSES_TD

include "mlir/Pass/PassBase.td"

def TestMemoryModel : Pass<"memopt-test-memory-model", "::mlir::ModuleOp"> {
  let summary = "Print the training-memory model of every function";
  let description = [{
    For each function: the bytes each op saves for backward, the timeline of
    live bytes (forward, recompute, backward) and the predicted peak of one
    training step above the resident bytes. Unknown operators are reported
    as warnings. `dump-table` prints the saved-tensor table instead, in the
    row format of scripts/gen_saved_tensor_table.py.
  }];
  let options = [
    Option<"dumpTable", "dump-table", "bool", "false",
           "Print the saved-tensor table and nothing else">,
    Option<"countOutputGradients", "count-output-gradients", "bool", "true",
           "Count a new loss gradient for each returned tensor">,
    Option<"kernelWorkspaces", "kernel-workspaces", "bool", "true",
           "Count the transient buffers of CPU kernels (oneDNN convolutions)">,
    Option<"accumulateInPlace", "accumulate-in-place", "int", "-1",
           "Whether autograd adds a second gradient into the first one's "
           "buffer: 1 (PyTorch 2.x), 0 (1.13: a new sum), -1 (this build's "
           "PyTorch)">,
    Option<"threads", "threads", "int", "0",
           "Intra-op threads of the process the prediction is for (0: the "
           "module's memopt.intra_op_threads, else one)">,
  ];
}

def TestBinaryValues : Pass<"memopt-test-binary-values", "::mlir::ModuleOp"> {
  let summary = "Emit a remark on every op result proven to hold only 0 and 1";
  let options = [
    ListOption<"assumeBinary", "assume-binary", "std::string",
               "Module paths whose outputs are asserted binary">,
  ];
}

def TestCostModel : Pass<"memopt-test-cost-model", "::mlir::ModuleOp"> {
  let summary = "Print FLOPs, bytes moved and predicted time per op";
  let options = [
    Option<"bandwidth", "bandwidth", "double", "12.0e9",
           "Host link bandwidth in bytes/s for offload costs">,
  ];
}

#endif // MEMOPT_ANALYSIS_TESTPASSES_TD
