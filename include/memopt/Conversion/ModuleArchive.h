//===- ModuleArchive.h - Save a compiled module's archive -------*- C++ -*-===//
//
// The exporter saves each compiled module twice: a skeleton (the same
// classes and code with empty tensors), which a second thread loads to prove
// the code compiles, and the archive users load. The second is written from
// the skeleton's records plus the module's pickled state and storages
// (lib/Conversion/TorchScriptExport/ArchiveWriter.cpp): LibTorch's writer
// checksums every weight byte by byte. Only code that links LibTorch
// includes this header.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_CONVERSION_MODULEARCHIVE_H
#define MEMOPT_CONVERSION_MODULEARCHIVE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <torch/csrc/jit/api/module.h>

#include <cstdint>
#include <string>

namespace mlir::memopt {

/// A copy of a module whose tensors are empty (same dtypes), with the same
/// classes and slots, and its torch.jit.save archive.
struct ModuleSkeleton {
  torch::jit::Module module;
  std::string archive;
};

/// Saves `module`'s skeleton. Throws what torch.jit.save throws.
ModuleSkeleton saveModuleSkeleton(const torch::jit::Module &module);

/// Writes `module`'s archive to `output` from its skeleton: the skeleton's
/// records but data.pkl and data/, then `module`'s state pickled as
/// torch.jit.save pickles it and one stored record per storage. Returns
/// false, having written nothing, when this LibTorch does not pickle the
/// skeleton's state as its archive holds it. Sizes and offsets from
/// `zip64From` on get ZIP64 fields (ZipWriter.h; tests lower it).
bool writeArchiveFromSkeleton(const torch::jit::Module &module,
                              const ModuleSkeleton &skeleton,
                              llvm::raw_ostream &output,
                              uint64_t zip64From = 0xFFFFFFFF);

/// writeArchiveFromSkeleton, else torch.jit.save's writer. Throws what
/// torch.jit.save throws.
void writeModuleArchive(const torch::jit::Module &module,
                        const ModuleSkeleton &skeleton,
                        llvm::raw_ostream &output);

} // namespace mlir::memopt

#endif // MEMOPT_CONVERSION_MODULEARCHIVE_H
