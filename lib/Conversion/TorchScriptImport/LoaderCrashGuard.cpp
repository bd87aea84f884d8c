//===- LoaderCrashGuard.cpp - a LibTorch crash while loading is one line --===//
//
// LibTorch's TorchScript source parser can crash on a damaged code record
// (1.13: a class attribute without annotation read past a missing type in
// parseClassConstant; found by the import fuzzer). CRC-32s do not catch
// every such archive: a writer can produce it, and the fuzzer learns to fix
// the checksum. While LibTorch loads, a fatal signal prints memopt's one
// line naming the archive and exits 1 (FatalSignalGuard.h).
//
//===----------------------------------------------------------------------===//
#include "ImportInternal.h"

#include "memopt/Support/QuotedText.h"

mlir::memopt::detail::LoaderCrashGuard::LoaderCrashGuard(
    llvm::StringRef displayName)
    : FatalSignalGuard("memopt: error: cannot load TorchScript archive " +
                           quoted(displayName) + ": LibTorch crashed (",
                       ") reading it (its TorchScript code or pickled data "
                       "are damaged)") {}
