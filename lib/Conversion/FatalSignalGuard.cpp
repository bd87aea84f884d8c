//===- FatalSignalGuard.cpp - a crash inside LibTorch is one line ---------===//
#include "memopt/Conversion/FatalSignalGuard.h"

#include "llvm/Support/Signals.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <unistd.h>

namespace {
constexpr int kGuardedSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};

// What the handler writes, prepared while the guard goes up: the handler
// may read nothing a crashed process could have left half written.
struct Line {
  char text[1024];
  size_t length = 0;
};
Line before, after;
std::string currentBefore, currentAfter;
bool guardsEnabled = true;

void prepare(Line &line, const std::string &text) {
  line.length = std::min(text.size(), sizeof(line.text));
  std::memcpy(line.text, text.data(), line.length);
}

const char *signalName(int signal) {
  switch (signal) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGBUS:
    return "SIGBUS";
  case SIGILL:
    return "SIGILL";
  case SIGFPE:
    return "SIGFPE";
  }
  return "a fatal signal";
}

void writeAll(const char *data, size_t length) {
  while (length > 0) {
    ssize_t written = write(STDERR_FILENO, data, length);
    if (written <= 0)
      return;
    data += written;
    length -= static_cast<size_t>(written);
  }
}

extern "C" void reportFatalSignal(int signal) {
  // write() and _exit() are async-signal-safe, and so is removing the files
  // LLVM was asked to remove on a signal (its own handler does it first):
  // memopt-compile's half-written temporary output.
  llvm::sys::RunInterruptHandlers();
  writeAll(before.text, before.length);
  const char *name = signalName(signal);
  writeAll(name, std::strlen(name));
  writeAll(after.text, after.length);
  writeAll("\n", 1);
  _exit(1);
}

void setLine(const std::string &first, const std::string &second) {
  // One line, whatever the parts hold (a LibTorch message, a path).
  std::string oneLine[2] = {first, second};
  for (std::string &part : oneLine)
    std::replace(part.begin(), part.end(), '\n', ' ');
  prepare(before, oneLine[0]);
  prepare(after, oneLine[1]);
  currentBefore = first;
  currentAfter = second;
}
} // namespace

void mlir::memopt::setFatalSignalGuards(bool enabled) {
  guardsEnabled = enabled;
}

mlir::memopt::FatalSignalGuard::FatalSignalGuard(const std::string &first,
                                                 const std::string &second) {
  if (!guardsEnabled)
    return;
  previousBefore = currentBefore;
  previousAfter = currentAfter;
  setLine(first, second);
  struct sigaction action = {};
  action.sa_handler = reportFatalSignal;
  action.sa_flags = SA_ONSTACK; // LLVM's alternate stack, on stack overflow
  sigemptyset(&action.sa_mask);
  previousActions.resize(std::size(kGuardedSignals));
  for (size_t i = 0; i < std::size(kGuardedSignals); ++i)
    sigaction(kGuardedSignals[i], &action, &previousActions[i]);
  installed = true;
}

mlir::memopt::FatalSignalGuard::~FatalSignalGuard() {
  if (!installed)
    return;
  for (size_t i = 0; i < std::size(kGuardedSignals); ++i)
    sigaction(kGuardedSignals[i], &previousActions[i], nullptr);
  setLine(previousBefore, previousAfter);
}
