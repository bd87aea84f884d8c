//===- LaunchStubs.h - Launch stubs from a planned module -------*- C++ -*-===//
//
// Writes the launch stubs of a planned memopt module: one C++ source that
// compiles as plain C++ (host launchers) or with nvcc -x cu (host and CUDA
// launchers), holding, per plan site, one launcher that packs every binary
// tensor the site saves and one that unpacks them, with element counts and
// grid sizes fixed from the static shapes. Sites: checkpoint regions with
// inputs saved as #memopt.compress<bit|bool>, and layers with
// saved_input = #memopt.compress<bit|bool>. Loading the compiled source
// registers the sites with the runtime (memopt/Runtime/LaunchStubs.h).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_LAUNCHSTUBS_H
#define MEMOPT_CONVERSION_LAUNCHSTUBS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace mlir::memopt {

/// Writes the stubs source of `module` to `os`. `model` names the model in
/// the registration and in comments. Fails with an error at the first site
/// whose sizes are not static.
LogicalResult emitLaunchStubs(ModuleOp module, llvm::StringRef model,
                              llvm::raw_ostream &os);

/// The model name stubs get by default: the stem of the module's
/// `memopt.source` (the .pt it was imported from), or "model".
std::string defaultLaunchStubsModel(ModuleOp module);

/// Registers `--emit-launch-stubs` (with `--launch-stubs-model=NAME`) with
/// mlir-translate's registry.
void registerLaunchStubsTranslation();

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_LAUNCHSTUBS_H
