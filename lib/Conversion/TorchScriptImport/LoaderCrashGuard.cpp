//===- LoaderCrashGuard.cpp - a LibTorch crash while loading is one line --===//
//
// LibTorch's TorchScript source parser can crash on a damaged code record
// (1.13: a class attribute without annotation read past a missing type in
// parseClassConstant; found by the import fuzzer). CRC-32s do not catch
// every such archive: a writer can produce it, and the fuzzer learns to fix
// the checksum. While LibTorch loads, a fatal signal prints memopt's one
// line and exits 1 instead of crashing; the process state after such a
// signal is unknown, so the handler only writes prepared bytes and exits.
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Support/QuotedText.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace {
constexpr int kGuardedSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
char message[1024];
size_t messageLength = 0;
bool guardEnabled = true;

extern "C" void reportLoaderCrash(int) {
  // write() and _exit() are async-signal-safe.
  ssize_t written = write(STDERR_FILENO, message, messageLength);
  (void)written;
  _exit(1);
}
} // namespace

void mlir::memopt::setLoaderCrashGuard(bool enabled) { guardEnabled = enabled; }

mlir::memopt::detail::LoaderCrashGuard::LoaderCrashGuard(
    llvm::StringRef displayName) {
  if (!guardEnabled)
    return;
  std::string text = "memopt: error: cannot load TorchScript archive " +
                     quoted(displayName) +
                     ": LibTorch crashed reading it (its TorchScript code "
                     "or pickled data are damaged)\n";
  messageLength = std::min(text.size(), sizeof(message));
  std::memcpy(message, text.data(), messageLength);
  message[messageLength - 1] = '\n'; // still one line when truncated
  struct sigaction action = {};
  action.sa_handler = reportLoaderCrash;
  action.sa_flags = SA_ONSTACK; // LLVM's alternate stack, on stack overflow
  sigemptyset(&action.sa_mask);
  previous.resize(std::size(kGuardedSignals));
  for (auto [i, signal] : llvm::enumerate(kGuardedSignals))
    sigaction(signal, &action, &previous[i]);
  installed = true;
}

mlir::memopt::detail::LoaderCrashGuard::~LoaderCrashGuard() {
  if (!installed)
    return;
  for (auto [i, signal] : llvm::enumerate(kGuardedSignals))
    sigaction(signal, &previous[i], nullptr);
}
