//===- TorchScriptExportModule.h - Export against a loaded module -*- C++ -*-=//
//
// The LibTorch-facing half of the export API, for in-process pipelines
// (memopt-compile) that already hold the source module and would otherwise
// load the `.pt` twice. Only code that links LibTorch includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_TORCHSCRIPTEXPORTMODULE_H
#define MEMOPT_CONVERSION_TORCHSCRIPTEXPORTMODULE_H

#include "memopt/Conversion/TorchScriptExport.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <torch/csrc/jit/api/module.h>

#include <optional>

namespace mlir::memopt {

/// Builds the exported module: a fresh hierarchy holding `source`'s
/// parameters, buffers and attributes (shared, not copied) and a `forward`
/// built from `@forward` of `module`. Returns std::nullopt after emitting one
/// error diagnostic. Never throws. Saving a result that calls
/// memopt::checkpoint needs that operator's schema in the process (load the
/// runtime first), which exportTorchScript below takes care of.
std::optional<torch::jit::Module>
buildTorchScriptModule(ModuleOp module, const torch::jit::Module &source);

/// Builds as above and writes the saved `.pt` to `output` (what
/// exportTorchScript(ModuleOp, raw_ostream&) does after loading the source).
/// Emits one error diagnostic on failure.
LogicalResult exportTorchScript(ModuleOp module,
                                const torch::jit::Module &source,
                                llvm::raw_ostream &output,
                                ForwardCheckResult *check = nullptr);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_TORCHSCRIPTEXPORTMODULE_H
