//===- LoaderCrashGuardTest.cpp - LibTorch crashes while loading ----------===//
//
// The import fuzzer found an archive on which LibTorch 1.13's TorchScript
// parser crashes (test/Conversion/Inputs/fuzz/README.md); it does so only
// now and then outside a sanitizer. These death tests raise the signals
// such a crash delivers while the guard is up: one line naming the archive
// and exit status 1; after the guard, the signal's previous handling is back.
//
//===----------------------------------------------------------------------===//
#include "../../lib/Conversion/TorchScriptImport/ImportInternal.h"

#include "gtest/gtest.h"

#include <csignal>

namespace {

using mlir::memopt::detail::LoaderCrashGuard;

void crashWhileGuarded(int signal) {
  LoaderCrashGuard guard("damaged.pt");
  std::raise(signal);
}

TEST(LoaderCrashGuardDeathTest, FatalSignalsBecomeOneLine) {
  for (int signal : {SIGSEGV, SIGBUS, SIGILL, SIGFPE})
    EXPECT_EXIT(crashWhileGuarded(signal), testing::ExitedWithCode(1),
                "^memopt: error: cannot load TorchScript archive "
                "'damaged.pt': LibTorch crashed reading it \\(its "
                "TorchScript code or pickled data are damaged\\)\n$")
        << "signal " << signal;
}

TEST(LoaderCrashGuardDeathTest, PreviousHandlingIsRestored) {
  EXPECT_EXIT(
      {
        { LoaderCrashGuard guard("damaged.pt"); }
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(
      {
        { LoaderCrashGuard guard("damaged.pt"); }
        std::raise(SIGFPE); // the default action again: killed
      },
      testing::KilledBySignal(SIGFPE), "");
}

TEST(LoaderCrashGuardDeathTest, OffWhenTurnedOff) {
  EXPECT_EXIT(
      {
        mlir::memopt::setLoaderCrashGuard(false);
        crashWhileGuarded(SIGFPE);
      },
      testing::KilledBySignal(SIGFPE), "");
}

} // namespace
