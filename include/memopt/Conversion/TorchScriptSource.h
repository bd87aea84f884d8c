//===- TorchScriptSource.h - A source model, loaded once --------*- C++ -*-===//
//
// What TorchScriptImport.h hands an in-process export (memopt-compile) so
// that the source `.pt` is loaded once. Only code that links LibTorch
// includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_TORCHSCRIPTSOURCE_H
#define MEMOPT_CONVERSION_TORCHSCRIPTSOURCE_H

#include <torch/csrc/jit/api/module.h>

#include <string>

namespace mlir::memopt {

struct TorchScriptSource {
  /// The file it was loaded from, as the module's `memopt.source` names it.
  std::string path;
  /// The model as torch.jit.load returns it; nothing has run on its state.
  torch::jit::Module module;
};

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_TORCHSCRIPTSOURCE_H
