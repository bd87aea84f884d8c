//===- FatalSignalGuardTest.cpp - a crash inside LibTorch is one line -----===//
//
// Death tests: the signals a crash in LibTorch delivers, raised while a
// guard is up, give the guard's one line with the signal's name and exit
// status 1; nested guards give the innermost line, then the outer one's
// again; after the last guard, the signal's previous handling is back.
//
//===----------------------------------------------------------------------===//
#include "memopt/Conversion/FatalSignalGuard.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Signals.h"

#include "gtest/gtest.h"

#include <csignal>

namespace {

using mlir::memopt::FatalSignalGuard;

TEST(FatalSignalGuardDeathTest, EachFatalSignalIsOneLineWithItsName) {
  for (auto [signal, name] : {std::pair{SIGSEGV, "SIGSEGV"},
                              {SIGBUS, "SIGBUS"},
                              {SIGILL, "SIGILL"},
                              {SIGFPE, "SIGFPE"}})
    EXPECT_EXIT(
        {
          FatalSignalGuard guard("memopt: error: it crashed (", ") there");
          std::raise(signal);
        },
        testing::ExitedWithCode(1),
        std::string("^memopt: error: it crashed \\(") + name + "\\) there\n$");
}

TEST(FatalSignalGuardDeathTest, FilesToRemoveOnASignalAreRemoved) {
  // memopt-compile writes its output to a temporary file that LLVM removes
  // on a signal; the guard's exit must not leave it behind.
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("guard", "tmp", path));
  EXPECT_EXIT(
      {
        llvm::sys::RemoveFileOnSignal(path);
        FatalSignalGuard guard("memopt: error: it crashed (", ")");
        std::raise(SIGSEGV);
      },
      testing::ExitedWithCode(1),
      "^memopt: error: it crashed \\(SIGSEGV\\)\n$");
  EXPECT_FALSE(llvm::sys::fs::exists(path));
  llvm::sys::fs::remove(path);
}

TEST(FatalSignalGuardDeathTest, NewlinesInTheLineBecomeSpaces) {
  EXPECT_EXIT(
      {
        FatalSignalGuard guard("a\nb (", ")\nc");
        std::raise(SIGSEGV);
      },
      testing::ExitedWithCode(1), "^a b \\(SIGSEGV\\) c\n$");
}

TEST(FatalSignalGuardDeathTest, NestedGuardsRestoreTheOuterLine) {
  EXPECT_EXIT(
      {
        FatalSignalGuard outer("outer (", ")");
        { FatalSignalGuard inner("inner (", ")"); }
        std::raise(SIGFPE);
      },
      testing::ExitedWithCode(1), "^outer \\(SIGFPE\\)\n$");
  EXPECT_EXIT(
      {
        FatalSignalGuard outer("outer (", ")");
        FatalSignalGuard inner("inner (", ")");
        std::raise(SIGFPE);
      },
      testing::ExitedWithCode(1), "^inner \\(SIGFPE\\)\n$");
}

TEST(FatalSignalGuardDeathTest, PreviousHandlingIsRestored) {
  EXPECT_EXIT(
      {
        { FatalSignalGuard guard("x (", ")"); }
        std::signal(SIGSEGV, SIG_DFL);
        std::raise(SIGSEGV);
      },
      testing::KilledBySignal(SIGSEGV), "");
  EXPECT_EXIT(
      {
        { FatalSignalGuard guard("x (", ")"); }
        std::raise(SIGFPE); // the default action again: killed
      },
      testing::KilledBySignal(SIGFPE), "");
}

TEST(FatalSignalGuardDeathTest, OffWhenTurnedOff) {
  EXPECT_EXIT(
      {
        mlir::memopt::setFatalSignalGuards(false);
        FatalSignalGuard guard("x (", ")");
        std::raise(SIGFPE);
      },
      testing::KilledBySignal(SIGFPE), "");
}

} // namespace
