//===- Passes.td - memopt transformation passes ------------*- tablegen -*-===//
//
// Every pass of memopt is declared here; each is implemented in its own file
// under passes/ named after the pass.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_TRANSFORMS_PASSES_TD
#define MEMOPT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def InlineCheckpoints : Pass<"memopt-inline-checkpoints"> {
  let summary = "Replace checkpoint regions by their bodies";
  let description = [{
    Undoes recomputation: every `memopt.checkpoint` (or only those whose label
    is listed in `labels`) is replaced by the operations of its body, wired
    to the region's inputs, so autograd keeps their intermediates again. Save
    policies disappear with the region. Used to build the unoptimized
    fallback of a specialized module and to compare a plan against no plan.
  }];
  let options = [
    ListOption<"labels", "labels", "std::string",
               "Only inline regions with these labels (default: all)">,
  ];
  let dependentDialects = ["::mlir::memopt::MemoptDialect"];
}

#endif // MEMOPT_TRANSFORMS_PASSES_TD
