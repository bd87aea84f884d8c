//===- RegionState.h - State a checkpoint region writes in place -*- C++
//-*-===//
//
// A region that updates state in place (batch-norm running statistics, a
// counter) must not update it twice, so the runtime's memopt::checkpoint
// copies every tensor the region writes before its forward and keeps the
// copy until the region's backward, which recomputes on a second copy
// (lib/Runtime/CheckpointSaved.cpp). The memory model counts both.
//
//===----------------------------------------------------------------------===//
#ifndef MEMOPT_ANALYSIS_REGIONSTATE_H
#define MEMOPT_ANALYSIS_REGIONSTATE_H

#include "memopt/Dialect/MemoptOps.h"

namespace mlir::memopt {

/// Device bytes of the tensors `region` writes in place: the module buffers
/// its ops (or the ops of regions nested in it) list in `mutates`, directly
/// or through a view, each buffer once, and the region inputs written the
/// same way. What the runtime snapshots per call.
int64_t getWrittenStateBytes(CheckpointOp region);

} // namespace mlir::memopt

#endif // MEMOPT_ANALYSIS_REGIONSTATE_H
