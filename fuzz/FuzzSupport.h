//===- FuzzSupport.h - shared pieces of memopt's libFuzzer targets -*- C++ -*-//
//
// A finding is a crash, an abort, a sanitizer report, a hang, or a broken
// promise of the tool: a failure without exactly the one-line error a user
// would see, or a success that leaves IR the verifier rejects.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_FUZZ_FUZZSUPPORT_H
#define MEMOPT_FUZZ_FUZZSUPPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace memopt_fuzz {

/// Stops the run with a message libFuzzer keeps next to the input.
[[noreturn]] inline void fail(const std::string &why) {
  std::fprintf(stderr, "memopt fuzz finding: %s\n", why.c_str());
  std::abort();
}

/// Counts error diagnostics (and swallows every diagnostic: printing them
/// would only slow the fuzzer down).
class ErrorCounter {
public:
  explicit ErrorCounter(mlir::MLIRContext &context)
      : handler(&context, [this](mlir::Diagnostic &diagnostic) {
          if (diagnostic.getSeverity() == mlir::DiagnosticSeverity::Error)
            ++errors;
          return mlir::success();
        }) {}
  int count() const { return errors; }

private:
  int errors = 0;
  mlir::ScopedDiagnosticHandler handler;
};

/// Reads `bytes` as memopt-opt does: the parsed and verified module, or
/// null when the parser failed or reported an error. memopt-opt exits 1 for
/// both: MLIR 19's parser can report an error and still return the module
/// (a stray character after a dialect attribute; tools/memopt-opt). A
/// failure without an error is a finding. `errors` counts `context`'s.
mlir::OwningOpRef<mlir::ModuleOp> readModule(llvm::StringRef bytes,
                                             mlir::MLIRContext &context,
                                             const ErrorCounter &errors);

/// One fuzz input read as a module: a context with memopt-opt's dialects
/// (threading off), its errors counted, and readModule's result.
struct ModuleInput {
  ModuleInput(const uint8_t *data, size_t size);
  mlir::MLIRContext context{mlir::MLIRContext::Threading::DISABLED};
  ErrorCounter errors{context};
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

/// A one-line message: non-empty, no newline.
inline bool isOneLine(const std::string &message) {
  return !message.empty() && message.find('\n') == std::string::npos;
}

} // namespace memopt_fuzz

#endif // MEMOPT_FUZZ_FUZZSUPPORT_H
