//===- OffloadStubs.h - Offload sites of the launch stubs -------*- C++ -*-===//
//
// Private to the launch stub emitter: the checkpoint regions of a CUDA plan
// whose inputs go to pinned host memory, as static copy schedules
// (memopt_stub_offload_site in memopt/Runtime/LaunchStubs.h).
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_LIB_CONVERSION_LAUNCHSTUBS_OFFLOADSTUBS_H
#define MEMOPT_LIB_CONVERSION_LAUNCHSTUBS_OFFLOADSTUBS_H

#include "memopt/Dialect/MemoptOps.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::memopt {

struct OffloadStubCopy {
  std::string what; // "input 2: tensor<8x16xf32>"
  int64_t numel = 0, elementSize = 0, offset = 0;
  int64_t bytes() const { return numel * elementSize; }
};

struct OffloadStubSite {
  std::string name, trigger;
  int64_t heldFor = 0; // 0: not given
  std::vector<OffloadStubCopy> copies;
  int64_t hostBytes = 0;
  std::string skipped; // why the generic copies serve it, if they do
};

/// Adds `region`'s offload site (inputs saved as #memopt.offload<host>) to
/// `sites`, if it has one. Fails, with an error at the region, on an input
/// without a static shape.
LogicalResult collectOffloadSite(CheckpointOp region,
                                 std::vector<OffloadStubSite> &sites);

/// The copy schedule comments, tables, host and CUDA launchers and the
/// registration of `sites`, inside the stubs source's anonymous namespace.
void writeOffloadSites(llvm::raw_ostream &os,
                       const std::vector<OffloadStubSite> &sites,
                       llvm::StringRef model);

/// The C string literal of `text`.
std::string stubCString(llvm::StringRef text);

} // namespace mlir::memopt

#endif // MEMOPT_LIB_CONVERSION_LAUNCHSTUBS_OFFLOADSTUBS_H
