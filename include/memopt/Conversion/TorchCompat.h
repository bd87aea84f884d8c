//===- TorchCompat.h - LibTorch version shims for the converters -*- C++
//-*-===//
//
// The TorchScript importer builds against PyTorch 1.13 (Debian) and 2.x. The
// few torch::jit / c10 APIs that differ between them are absorbed here.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_TORCHCOMPAT_H
#define MEMOPT_CONVERSION_TORCHCOMPAT_H

#include <c10/util/Exception.h>
#include <torch/version.h>

#include <string>
#include <vector>

namespace mlir::memopt::compat {

/// Collects LibTorch warnings instead of printing them, so that a failing
/// import prints exactly one line. PyTorch 2.0 turned the handler's argument
/// list (location, message, verbatim) into one c10::Warning.
class CollectingWarningHandler : public c10::WarningHandler {
public:
#if TORCH_VERSION_MAJOR >= 2
  void process(const c10::Warning &warning) override {
    messages.push_back(warning.msg());
  }
#else
  void process(const c10::SourceLocation &, const std::string &message,
               const bool) override {
    messages.push_back(message);
  }
#endif
  std::vector<std::string> messages;
};

/// Installs a warning handler for a scope (c10::Warning became a class, and
/// the guard moved to c10::WarningUtils, in PyTorch 2.0).
#if TORCH_VERSION_MAJOR >= 2
using WarningHandlerGuard = c10::WarningUtils::WarningHandlerGuard;
#else
using WarningHandlerGuard = c10::Warning::WarningHandlerGuard;
#endif

} // namespace mlir::memopt::compat

#endif // MEMOPT_CONVERSION_TORCHCOMPAT_H
