//===- FatalSignalGuard.h - a crash inside LibTorch is one line -*- C++ -*-===//
//
// memopt runs LibTorch code it does not control: the TorchScript loader on
// the user's archive, and the kernel probe on the user's convolutions,
// recurrent layers and kept branches. Either can crash there: a damaged
// archive (LibTorch 1.13's parser), or a kernel library that faults at some
// shapes (PyTorch 2.6's oneDNN raises SIGFPE on resnet50's strided 1x1
// convolutions with some ISAs; docs/pytorch2.md). While a guard is alive, a
// fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) in any thread writes the
// guard's one line, with the signal's name, and exits 1 instead of dumping
// a stack. The process state after such a signal is unknown, so the handler
// only writes prepared bytes and exits.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_FATALSIGNALGUARD_H
#define MEMOPT_CONVERSION_FATALSIGNALGUARD_H

#include <csignal>
#include <string>
#include <vector>

namespace mlir::memopt {

/// While alive, a fatal signal prints `before` + the signal's name (e.g.
/// "SIGFPE") + `after` as one line on stderr and exits 1. Guards nest: the
/// outer one's line and handlers are back when the inner one ends.
class FatalSignalGuard {
public:
  FatalSignalGuard(const std::string &before, const std::string &after);
  ~FatalSignalGuard();
  FatalSignalGuard(const FatalSignalGuard &) = delete;
  FatalSignalGuard &operator=(const FatalSignalGuard &) = delete;

private:
  std::vector<struct sigaction> previousActions;
  std::string previousBefore, previousAfter;
  bool installed = false;
};

/// Turns every guard off (on by default): the libFuzzer targets must see
/// LibTorch's crashes as crashes.
void setFatalSignalGuards(bool enabled);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_FATALSIGNALGUARD_H
