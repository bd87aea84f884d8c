//===- ImportFuzzer.cpp - libFuzzer target over the TorchScript importer --===//
//
// Feeds arbitrary bytes to importTorchScriptBuffer, with and without an
// input spec. A finding is a crash, an abort, an escaped exception, a hang,
// or a failed import that does not emit exactly one error diagnostic.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "memopt/Conversion/FatalSignalGuard.h"
#include "memopt/Conversion/TorchScriptImport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

using namespace mlir;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // A LibTorch crash while loading should reach the sanitizer, not become
  // memopt's one line and exit 1 (which libFuzzer would report as well,
  // without the stack).
  memopt::setFatalSignalGuards(false);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  memopt_fuzz::ErrorCounter counter(context);
  memopt::ImportOptions options;
  // Odd sizes also run the shape probe (every seed model takes one input;
  // the wrong shape for a model is itself an interesting error path).
  if (size % 2 == 1)
    options.inputs.push_back(memopt::InputSpec{"x", {2, 3, 8, 8}, "f32"});
  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      memopt::importTorchScriptBuffer(bytes, "fuzz.pt", options, &context);
  int errors = counter.count();
  if ((!module && errors != 1) || (module && errors != 0)) {
    std::fprintf(stderr, "import %s with %d error diagnostics\n",
                 module ? "succeeded" : "failed", errors);
    std::abort();
  }
  return 0;
}
