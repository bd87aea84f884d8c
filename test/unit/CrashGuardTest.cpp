//===- CrashGuardTest.cpp - crashes inside LibTorch: the lines users see --===//
//
// The import fuzzer found an archive on which LibTorch 1.13's TorchScript
// parser crashes (test/Conversion/Inputs/fuzz/README.md), and PyTorch 2.6's
// oneDNN raises SIGFPE on some convolutions the kernel probe runs
// (docs/pytorch2.md). Neither happens on demand on every machine: these
// death tests raise the signals such a crash delivers while the loader's
// and the probe's guards are up, and check the one line each prints.
//
//===----------------------------------------------------------------------===//
#include "../../lib/Conversion/TorchScriptImport/ImportInternal.h"

#include "memopt/Probe/KernelProbe.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include "gtest/gtest.h"

#include <csignal>

namespace {

using mlir::memopt::detail::LoaderCrashGuard;

TEST(CrashGuardDeathTest, LoaderCrashNamesTheArchive) {
  for (int signal : {SIGSEGV, SIGFPE})
    EXPECT_EXIT(
        {
          LoaderCrashGuard guard("damaged.pt");
          std::raise(signal);
        },
        testing::ExitedWithCode(1),
        "^memopt: error: cannot load TorchScript archive 'damaged.pt': "
        "LibTorch crashed \\(SIG(SEGV|FPE)\\) reading it \\(its TorchScript "
        "code or pickled data are damaged\\)\n$")
        << "signal " << signal;
}

void crashWhileProbing(mlir::StringRef modulePath) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  auto site = mlir::FileLineColLoc::get(&context, "/models/net.py", 42, 0);
  auto loc =
      mlir::NameLoc::get(mlir::StringAttr::get(&context, modulePath), site);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  mlir::memopt::KernelCrashGuard guard(module->getOperation(), "convolution");
  std::raise(SIGFPE);
}

TEST(CrashGuardDeathTest, KernelCrashNamesTheOpAndItsSourceLine) {
  EXPECT_EXIT(crashWhileProbing("layer4.0.downsample.0"),
              testing::ExitedWithCode(1),
              "^memopt: error: PyTorch crashed \\(SIGFPE\\) running this "
              "convolution at its shapes, which memopt-compile does to "
              "measure its kernels' memory; eager training runs the same "
              "kernels \\(a fault in PyTorch's kernel libraries: "
              "docs/pytorch2.md\\), at layer4.0.downsample.0 "
              "\\(net.py:42\\)\n$");
}

} // namespace
